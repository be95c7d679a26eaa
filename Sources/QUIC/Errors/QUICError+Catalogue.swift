// Every connection error of the wire layer, with its RFC rule and code.
// Frame rules are listed without a frame type; the decoder reports the type
// with `inFrame(_:)`, and equality compares it too.

extension QUICError {
    // RFC 9000 §12.4: "An endpoint MUST treat the receipt of a frame of
    // unknown type as a connection error of type FRAME_ENCODING_ERROR."
    public static let unknownFrameType = QUICError(code: .frameEncodingError, reason: "unknown frame type")
    public static let frameTruncated = QUICError(code: .frameEncodingError, reason: "frame truncated")
    // §12.4: frame types "MUST use the shortest possible encoding"; an
    // endpoint "MAY treat the receipt of a frame type that uses a longer
    // encoding than necessary as a connection error of type
    // PROTOCOL_VIOLATION" — we do.
    public static let frameTypeNotMinimal = QUICError(code: .protocolViolation, reason: "frame type not minimally encoded")
    // §12.4: "An endpoint MUST treat receipt of a frame in a packet type that
    // is not permitted as a connection error of type PROTOCOL_VIOLATION."
    public static let frameNotPermitted = QUICError(code: .protocolViolation, reason: "frame not permitted in this packet type")
    // §12.4: "An endpoint MUST treat receipt of a packet containing no frames
    // as a connection error of type PROTOCOL_VIOLATION."
    /// §8.1: an address-validation token that does not decode (never sent:
    /// an invalid token is treated as absent, see QUICEndpoint).
    public static let invalidToken = QUICError(code: .invalidToken, reason: "address validation token invalid")
    public static let packetWithoutFrames = QUICError(code: .protocolViolation, reason: "packet contains no frames")
    // §17.2, §17.3.1: reserved bits non-zero after removing protection.
    public static let reservedBitsSet = QUICError(code: .protocolViolation, reason: "reserved header bits set")

    // §19.3.1: "If any computed packet number is negative, an endpoint MUST
    // generate a connection error of type FRAME_ENCODING_ERROR."
    public static let ackRangeNegative = QUICError(code: .frameEncodingError, reason: "ACK range below packet number 0")

    // §19.6, §19.8: "The largest offset delivered on a stream -- the sum of
    // the offset and data length -- cannot exceed 2^62-1 ... MUST be treated
    // as a connection error of type FRAME_ENCODING_ERROR or
    // FLOW_CONTROL_ERROR" (CRYPTO: "CRYPTO_BUFFER_EXCEEDED or
    // FRAME_ENCODING_ERROR").
    public static let offsetTooLarge = QUICError(code: .frameEncodingError, reason: "offset plus length above 2^62-1")

    // §19.7: "A client MUST NOT send a NEW_TOKEN frame with an empty token
    // field ... MUST treat receipt ... as a connection error of type
    // FRAME_ENCODING_ERROR."; "A server MUST treat receipt of a NEW_TOKEN
    // frame as a connection error of type PROTOCOL_VIOLATION."
    public static let emptyToken = QUICError(code: .frameEncodingError, reason: "NEW_TOKEN with an empty token")
    public static let serverOnlyFrame = QUICError(code: .protocolViolation, reason: "client sent a frame only servers send")

    // §19.11: "If a max_streams transport parameter or a MAX_STREAMS frame is
    // received with a value greater than 2^60 ... the connection MUST be
    // closed immediately with a connection error of type
    // FRAME_ENCODING_ERROR"; §19.14 for STREAMS_BLOCKED ("STREAM_LIMIT_ERROR
    // or FRAME_ENCODING_ERROR").
    public static let streamLimitTooLarge = QUICError(code: .frameEncodingError, reason: "stream count above 2^60")

    // §19.15: connection ID length "Values less than 1 and greater than 20
    // are invalid and MUST be treated as a connection error of type
    // FRAME_ENCODING_ERROR"; "Receiving a value in the Retire Prior To field
    // that is greater than that in the Sequence Number field MUST be treated
    // as a connection error of type FRAME_ENCODING_ERROR."
    public static let connectionIDLength = QUICError(code: .frameEncodingError, reason: "NEW_CONNECTION_ID length outside 1...20")
    public static let retirePriorToAboveSequence = QUICError(code: .frameEncodingError, reason: "Retire Prior To above Sequence Number")

    // RFC 9221 §3: "An endpoint that receives a DATAGRAM frame when it has not
    // indicated support via the transport parameter MUST terminate the
    // connection with an error of type PROTOCOL_VIOLATION. Similarly, an
    // endpoint that receives a DATAGRAM frame that is larger than the value it
    // sent in its max_datagram_frame_size transport parameter MUST terminate
    // the connection with an error of type PROTOCOL_VIOLATION."
    public static let datagramNotNegotiated = QUICError(code: .protocolViolation, reason: "DATAGRAM frame without max_datagram_frame_size")
    public static let datagramTooLarge = QUICError(code: .protocolViolation, reason: "DATAGRAM frame above max_datagram_frame_size")
}
