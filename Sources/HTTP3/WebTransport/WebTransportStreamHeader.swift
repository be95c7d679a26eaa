// The header of a WebTransport data stream (draft-ietf-webtrans-http3 §4.2,
// §4.3; draft-02 §4.1, §4.2):
//
//   Unidirectional Stream { Stream Type (i) = 0x54, Session ID (i), data }
//   Bidirectional Stream  { Signal Value (i) = 0x41, Session ID (i), data }
//
// `H3Session` consumes the type or signal (it decides what the stream is);
// the registry reads the Session ID, a varint that may arrive split.

import Core

public enum WebTransportStreamHeader {
    /// WT_STREAM / WEBTRANSPORT_STREAM, "the very first bytes of a request stream".
    public static let bidiSignal: UInt64 = 0x41
    /// The unidirectional stream type.
    public static let uniStreamType = H3UniStreamType(rawValue: 0x54)

    /// Appends the header of a stream we open for session `sessionID`.
    public static func append(sessionID: UInt64, bidirectional: Bool, to out: inout [UInt8]) {
        QUICVarInt.append(bidirectional ? bidiSignal : uniStreamType.rawValue, to: &out)
        QUICVarInt.append(sessionID, to: &out)
    }

    /// Whether `id` can name a session: the CONNECT stream is a client
    /// bidirectional stream (draft-02 §4: "If at any point a session ID is
    /// received that cannot a valid ID for a client-initiated bidirectional
    /// stream, the recipient MUST close the connection with an H3_ID_ERROR").
    public static func isValidSessionID(_ id: UInt64) -> Bool { id & 0x3 == 0 }
}
