// Connection errors of stream state and flow control (RFC 9000 §3, §4),
// one named rule each (STYLE §4). The receiving code reports the frame type.

extension QUICError {
    // §4.6: "An endpoint that receives a frame with a stream ID exceeding the
    // limit it has sent MUST treat this as a connection error of type
    // STREAM_LIMIT_ERROR."
    public static let streamLimitExceeded = QUICError(code: .streamLimitError, reason: "stream ID above the advertised stream limit")
    // §19.8: "An endpoint MUST terminate the connection with error
    // STREAM_STATE_ERROR if it receives a STREAM frame for a locally
    // initiated stream that has not yet been created" (likewise §19.4,
    // §19.5, §19.10, §19.13).
    public static let streamNotCreated = QUICError(code: .streamStateError, reason: "frame for a local stream not yet created")
    // §19.8 "... or for a send-only stream"; §19.4 RESET_STREAM for a
    // send-only stream; §19.5 STOP_SENDING / §19.10 MAX_STREAM_DATA for a
    // receive-only stream; §19.13 STREAM_DATA_BLOCKED for a send-only stream.
    public static let streamWrongDirection = QUICError(code: .streamStateError, reason: "frame for the wrong direction of a stream")
    // §4.1: "A receiver MUST close the connection with an error of type
    // FLOW_CONTROL_ERROR if the sender violates the advertised connection or
    // stream data limits."
    public static let streamFlowControl = QUICError(code: .flowControlError, reason: "stream data beyond the stream's limit")
    public static let connectionFlowControl = QUICError(code: .flowControlError, reason: "stream data beyond the connection's limit")
    // §4.5: "Once a final size for a stream is known, it cannot change. If a
    // RESET_STREAM or STREAM frame is received indicating a change in the
    // final size for the stream, an endpoint SHOULD respond with an error of
    // type FINAL_SIZE_ERROR"; "... data at or beyond the final size ..."; "...
    // a final size that is lower than the size of stream data that is
    // already received".
    public static let finalSizeChanged = QUICError(code: .finalSizeError, reason: "final size changed")
    public static let dataBeyondFinalSize = QUICError(code: .finalSizeError, reason: "stream data beyond the final size")
    public static let finalSizeBelowReceived = QUICError(code: .finalSizeError, reason: "final size below data already received")
    // §7.5: "... MUST close the connection with a CRYPTO_BUFFER_EXCEEDED
    // error code" when more CRYPTO data is buffered out of order than allowed.
    public static let cryptoBufferExceeded = QUICError(code: .cryptoBufferExceeded, reason: "too much out-of-order CRYPTO data")
}

/// Stream ID arithmetic (§2.1): the low bit says who opened the stream
/// (0: client), the next whether it is unidirectional.
enum StreamID {
    static func isClientInitiated(_ id: UInt64) -> Bool { id & 1 == 0 }
    static func isBidirectional(_ id: UInt64) -> Bool { id & 2 == 0 }
    /// The stream's sequence among streams of its type.
    static func index(_ id: UInt64) -> UInt64 { id >> 2 }
    static func make(index: UInt64, clientInitiated: Bool, bidirectional: Bool) -> UInt64 {
        index << 2 | (bidirectional ? 0 : 2) | (clientInitiated ? 0 : 1)
    }
}
