// Every frame-layer error, with its RFC 9113 rule and code. Stream-scoped
// rules are listed with stream 0 and rescoped at the throw site with
// `onStream(_:)`; equality compares the scope too.

extension FrameError {
    // §3.4 connection preface.
    public static let badPreface = FrameError(code: .protocolError, reason: "client connection preface mismatch")

    // §4.2 frame size.
    public static let frameTooLarge = FrameError(code: .frameSizeError, reason: "frame larger than SETTINGS_MAX_FRAME_SIZE")
    public static let payloadTooShort = FrameError(code: .frameSizeError, reason: "frame payload too short for its mandatory fields")

    // §6.1, §6.2, §6.6 padding: "If the length of the padding is the length of
    // the frame payload or greater, the recipient MUST treat this as a
    // connection error of type PROTOCOL_ERROR."
    public static let paddingTooLong = FrameError(code: .protocolError, reason: "padding at least as long as the frame payload")

    // Stream identifier rules of each frame type (§6.1–§6.10).
    public static let streamIDZero = FrameError(code: .protocolError, reason: "frame type requires a stream identifier")
    public static let streamIDNonZero = FrameError(code: .protocolError, reason: "frame type requires stream identifier 0")

    // §5.3.1: "A stream cannot depend on itself. An endpoint MUST treat this
    // as a stream error of type PROTOCOL_ERROR."
    public static let selfDependency = FrameError(scope: .stream(0), code: .protocolError, reason: "stream depends on itself")

    // §6.3: PRIORITY "with a length other than 5 octets MUST be treated as a
    // stream error of type FRAME_SIZE_ERROR".
    public static let prioritySize = FrameError(scope: .stream(0), code: .frameSizeError, reason: "PRIORITY length is not 5")
    // §6.4: RST_STREAM "with a length other than 4 octets MUST be treated as
    // a connection error of type FRAME_SIZE_ERROR".
    public static let rstStreamSize = FrameError(code: .frameSizeError, reason: "RST_STREAM length is not 4")

    // §6.5 SETTINGS.
    public static let settingsAckWithPayload = FrameError(code: .frameSizeError, reason: "SETTINGS ACK with a payload")
    public static let settingsSize = FrameError(code: .frameSizeError, reason: "SETTINGS length is not a multiple of 6")
    public static let settingsEnablePush = FrameError(code: .protocolError, reason: "SETTINGS_ENABLE_PUSH is not 0 or 1")
    public static let settingsInitialWindowSize = FrameError(code: .flowControlError, reason: "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1")
    public static let settingsMaxFrameSize = FrameError(code: .protocolError, reason: "SETTINGS_MAX_FRAME_SIZE outside 16384...16777215")
    public static let settingsBoolean = FrameError(code: .protocolError, reason: "boolean SETTINGS value is not 0 or 1")

    // §6.7: PING "with a length field value other than 8 MUST be treated as a
    // connection error of type FRAME_SIZE_ERROR".
    public static let pingSize = FrameError(code: .frameSizeError, reason: "PING length is not 8")

    // §6.9 WINDOW_UPDATE.
    public static let windowUpdateSize = FrameError(code: .frameSizeError, reason: "WINDOW_UPDATE length is not 4")
    // "A receiver MUST treat the receipt of a WINDOW_UPDATE frame with a
    // flow-control window increment of 0 as a stream error of type
    // PROTOCOL_ERROR; errors on the connection flow-control window MUST be
    // treated as a connection error".
    public static let windowUpdateZero = FrameError(code: .protocolError, reason: "WINDOW_UPDATE increment of 0")
}
