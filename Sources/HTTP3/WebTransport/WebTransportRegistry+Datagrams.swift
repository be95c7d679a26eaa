// HTTP Datagrams of sessions (RFC 9297 §2.1; draft-ietf-webtrans-http3 §4.5,
// §4.6; draft-02 §4.4, §4.5): a QUIC DATAGRAM frame's payload starts with
// the quarter of the CONNECT stream's ID.

import Core

extension WebTransportRegistry {
    /// A QUIC DATAGRAM frame's payload. A missing or oversized quarter stream
    /// ID is a connection error H3_DATAGRAM_ERROR (RFC 9297 §2.1). For an
    /// accepted session: `.datagram`; for one not there yet: held (the
    /// oldest dropped beyond `maxBufferedDatagrams`, §4.6); for a gone one:
    /// dropped.
    public func datagramReceived(_ bytes: UnsafeRawBufferPointer) {
        guard !failed else { return }
        let parsed: (streamID: UInt64, payloadStart: Int)
        do { parsed = try H3Datagram.parse(bytes) } catch {
            failConnection(error.code, error.reason)
            return
        }
        let id = parsed.streamID
        let payload = Array(UnsafeRawBufferPointer(rebasing: bytes[parsed.payloadStart...]))
        if let s = sessions[id], s.state == .accepted {
            emit(.datagram(sessionID: id, payload: payload))
            return
        }
        guard sessions[id] != nil || !gone.contains(id) else {
            goneDatagramsDropped += 1
            return
        }
        guard limits.maxBufferedDatagrams > 0 else {
            heldDatagramsDropped += 1
            return
        }
        if heldDatagrams.count >= limits.maxBufferedDatagrams {
            heldDatagrams.removeFirst()
            heldDatagramsDropped += 1
        }
        heldDatagrams.append((id, payload))
    }

    /// Whether session `id` may send datagrams (accepted and not over).
    public func canSendDatagram(sessionID id: UInt64) -> Bool { sessions[id]?.state == .accepted }

    /// Appends the HTTP Datagram prefix of session `id` (RFC 9297 §2.1).
    public static func appendDatagramPrefix(sessionID id: UInt64, to out: inout [UInt8]) {
        H3Datagram.appendPrefix(streamID: id, to: &out)
    }
}
