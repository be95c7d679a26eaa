// The peer's unidirectional streams, as a server sees them (RFC 9114 §6.2,
// §6.2.1; RFC 9204 §4.2).
//
// Theory of operation. Each side opens at most one control stream, one QPACK
// encoder stream and one QPACK decoder stream — the critical streams. The
// connection feeds this table every unidirectional stream whose type it has
// read, and every end (FIN or reset) of such a stream:
//
//   * a second control, encoder or decoder stream: "MUST be treated as a
//     connection error of type H3_STREAM_CREATION_ERROR" (§6.2.1, RFC 9204
//     §4.2);
//   * a push stream from a client: H3_STREAM_CREATION_ERROR (§6.2.2, "Only
//     servers can push");
//   * an unknown or reserved type (§6.2.3): no error of any kind ("MUST NOT
//     consider unknown stream types to be a connection error"); the caller
//     discards the data or aborts reading with H3_STREAM_CREATION_ERROR;
//   * the end of a critical stream, at any point: "MUST be treated as a
//     connection error of type H3_CLOSED_CRITICAL_STREAM" (§6.2.1, RFC 9204
//     §4.2). The end of an ignored stream is nothing; "A receiver MUST
//     tolerate unidirectional streams being closed or reset prior to the
//     reception of the unidirectional stream header" — such streams never
//     reach this table.

/// What a peer's unidirectional stream is for.
public enum H3PeerStreamRole: Sendable, Equatable {
    case control
    case qpackEncoder
    case qpackDecoder
    /// Unknown or reserved type: discard its bytes (or STOP_SENDING with
    /// H3_STREAM_CREATION_ERROR, §6.2).
    case ignored
}

public struct H3PeerStreams: Sendable {
    public private(set) var controlStreamID: UInt64?
    public private(set) var encoderStreamID: UInt64?
    public private(set) var decoderStreamID: UInt64?

    public init() {}

    /// A unidirectional stream's type was read.
    public mutating func opened(_ streamID: UInt64, type: H3UniStreamType) throws(H3Error) -> H3PeerStreamRole {
        switch type {
        case .control:
            guard controlStreamID == nil else { throw .duplicateControlStream }
            controlStreamID = streamID
            return .control
        case .qpackEncoder:
            guard encoderStreamID == nil else { throw .duplicateEncoderStream }
            encoderStreamID = streamID
            return .qpackEncoder
        case .qpackDecoder:
            guard decoderStreamID == nil else { throw .duplicateDecoderStream }
            decoderStreamID = streamID
            return .qpackDecoder
        case .push:
            throw .pushStreamFromClient
        default:
            return .ignored
        }
    }

    /// A unidirectional stream ended (FIN or RESET_STREAM).
    public func closed(_ streamID: UInt64) throws(H3Error) {
        if streamID == controlStreamID { throw .closedControlStream }
        if streamID == encoderStreamID { throw .closedEncoderStream }
        if streamID == decoderStreamID { throw .closedDecoderStream }
    }
}
