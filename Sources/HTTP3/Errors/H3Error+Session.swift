// Errors the session itself raises (beyond the frame reader, the stream
// machines and QPACK): stream admission and the server's own critical streams.

extension H3Error {
    // §4.1.1: "When the server cancels a request without performing any
    // application processing, the request is considered "rejected". The
    // server SHOULD abort its response stream with the error code
    // H3_REQUEST_REJECTED."
    public static let tooManyRequestStreams = H3Error(.stream, .requestRejected, "more concurrent request streams than allowed")
    // §5.2: "Requests or pushes with the indicated identifier or greater are
    // rejected ... by the sender of the GOAWAY"; "Upon sending a GOAWAY
    // frame, the endpoint SHOULD explicitly cancel ... any requests ... that
    // have identifiers greater than or equal to the one indicated".
    public static let requestAfterGoaway = H3Error(.stream, .requestRejected, "request stream at or above our GOAWAY identifier")
    // §6.2.1: "the receiver MUST NOT request that the sender close the
    // control stream. If either control stream is closed at any point, this
    // MUST be treated as a connection error of type
    // H3_CLOSED_CRITICAL_STREAM"; RFC 9204 §4.2 says the same of the encoder
    // and decoder streams. A STOP_SENDING on one of ours asks exactly that.
    public static let stopSendingOnControlStream = H3Error(.connection, .closedCriticalStream, "STOP_SENDING for our control stream")
    public static let stopSendingOnEncoderStream = H3Error(.connection, .closedCriticalStream, "STOP_SENDING for our QPACK encoder stream")
    public static let stopSendingOnDecoderStream = H3Error(.connection, .closedCriticalStream, "STOP_SENDING for our QPACK decoder stream")
    // draft-ietf-webtrans-http3 §4.3: "Endpoints MUST NOT send WT_STREAM as a
    // frame type on HTTP/3 streams other than the very first bytes of a
    // request stream. Receiving this frame type in any other circumstances
    // MUST be treated as a connection error of type H3_FRAME_ERROR."
    public static let misplacedWebTransportStream = H3Error(.connection, .frameError, "WT_STREAM (0x41) not at the start of a request stream")
}
