// The peer's control stream at a server (RFC 9114 §6.2.1, §7.2, §5.2).
//
// Frames come from an `H3FrameReader` of kind `.control`, which already
// enforces "SETTINGS first, once" and the frames allowed here. This machine
// keeps what the frames say across the connection:
//   * the client's SETTINGS;
//   * GOAWAY from a client carries a push ID; §5.2 "An endpoint MAY send
//     multiple GOAWAY frames ... MUST NOT increase the value", and receipt of
//     a larger one is H3_ID_ERROR;
//   * MAX_PUSH_ID "cannot reduce the maximum push ID; receipt of a
//     MAX_PUSH_ID frame that contains a smaller value than previously
//     received MUST be treated as a connection error of type H3_ID_ERROR"
//     (§7.2.7);
//   * CANCEL_PUSH for a push ID "not yet mentioned by a PUSH_PROMISE frame"
//     is H3_ID_ERROR (§7.2.3); this server never promises, so every
//     CANCEL_PUSH is.

public struct H3ControlStream: Sendable {
    public enum Event: Sendable, Equatable {
        case settings(H3Settings)
        /// The client will not accept pushes from this ID on (§5.2).
        case goaway(pushID: UInt64)
        case maxPushID(UInt64)
    }

    private var reader: H3FrameReader
    // The SETTINGS go out in the event, not kept here: H3Session keeps them
    // (a second copy was 80 bytes of every connection, issue 15).
    public private(set) var lastGoaway: UInt64?
    public private(set) var maxPushID: UInt64?

    public init(limits: H3FrameReader.Limits = .init()) {
        reader = H3FrameReader(kind: .control, limits: limits)
    }

    /// Reads control-stream bytes up to the next event.
    public mutating func read(_ input: UnsafeRawBufferPointer) throws(H3Error) -> (event: Event?, consumed: Int) {
        var i = 0
        while i < input.count {
            let (event, n) = try reader.read(UnsafeRawBufferPointer(rebasing: input[i...]))
            i += n
            // Control frames are few: an idle connection keeps no buffer
            // for the next one (issue 15).
            if event != nil { reader.releasePayload() }
            switch event {
            case nil: continue
            case .settings(let s):
                return (.settings(s), i)
            case .goaway(let id):
                if let lastGoaway, id > lastGoaway { throw .goawayIDIncreased }
                lastGoaway = id
                return (.goaway(pushID: id), i)
            case .maxPushID(let id):
                if let maxPushID, id < maxPushID { throw .maxPushIDDecreased }
                maxPushID = id
                return (.maxPushID(id), i)
            case .cancelPush:
                throw .cancelUnknownPush
            case .headers, .dataHeader, .data:
                preconditionFailure("the control-stream reader refuses HEADERS and DATA")
            }
        }
        return (nil, input.count)
    }
}
