// The server's own unidirectional streams (RFC 9114 §6.2; RFC 9204 §4.2).
//
// Design: the session does not ask the glue to open streams. Its three
// critical streams are the first three server-initiated unidirectional QUIC
// streams, in this order, so their IDs are known in advance (RFC 9000 §2.1:
// the server's unidirectional streams are 3, 7, 11, …, opened in order, and
// RFC 9114 §6.2 obliges every client to allow at least three): the glue opens
// them once 1-RTT keys are available and writes on each whatever
// `H3Session.writeOutput(for:into:)` gives it, now and whenever
// `hasPendingOutput` turns true. §6.2: "Endpoints SHOULD create the HTTP
// control stream as well as the unidirectional streams required by mandatory
// extensions (such as the QPACK encoder and decoder streams) first".
//
// None of them may ever be closed (§6.2.1, RFC 9204 §4.2): the glue never
// sends FIN or RESET_STREAM on them, and a STOP_SENDING for one is the
// connection error H3_CLOSED_CRITICAL_STREAM.

/// One of the server's unidirectional streams.
public enum H3LocalStream: Int, Sendable, CaseIterable {
    /// The control stream: stream type, SETTINGS (first, once), a reserved
    /// frame, later GOAWAY.
    case control = 0
    /// The QPACK encoder stream: its stream type only (our encoder uses the
    /// static table and literals, so it never sends an instruction).
    case qpackEncoder = 1
    /// The QPACK decoder stream: Section Acknowledgment, Stream Cancellation
    /// and Insert Count Increment for the client's encoder.
    case qpackDecoder = 2

    /// Its QUIC stream ID: the (rawValue + 1)th server-initiated
    /// unidirectional stream (RFC 9000 §2.1: low bits 0x3).
    public var streamID: UInt64 { UInt64(rawValue) * 4 + 3 }

    /// The local stream with QUIC stream ID `id`, if any.
    public init?(streamID id: UInt64) {
        guard id & 0x3 == 0x3, id <= 11 else { return nil }
        self.init(rawValue: Int(id / 4))
    }
}

/// Bytes waiting for each of our unidirectional streams, inline in the
/// session (an array of three would be one more allocation per connection,
/// kept while it is idle).
struct H3LocalOutput {
    private var control: [UInt8] = []
    private var qpackEncoder: [UInt8] = []
    private var qpackDecoder: [UInt8] = []

    subscript(stream: H3LocalStream) -> [UInt8] {
        get {
            switch stream {
            case .control: control
            case .qpackEncoder: qpackEncoder
            case .qpackDecoder: qpackDecoder
            }
        }
        _modify {
            switch stream {
            case .control: yield &control
            case .qpackEncoder: yield &qpackEncoder
            case .qpackDecoder: yield &qpackDecoder
            }
        }
    }

    var isEmpty: Bool { control.isEmpty && qpackEncoder.isEmpty && qpackDecoder.isEmpty }
}
