// Every HTTP/3 error this module raises, with the rule that demands it.

import HTTPFields

extension H3Error {
    // §7.1: "A frame payload that contains additional bytes after the
    // identified fields or a frame payload that terminates before the end of
    // the identified fields MUST be treated as a connection error of type
    // H3_FRAME_ERROR"; "if the last frame on the stream was truncated, this
    // MUST be treated as a connection error of type H3_FRAME_ERROR".
    public static let framePayloadMismatch = H3Error(.connection, .frameError, "frame payload longer or shorter than its fields")
    public static let frameTruncatedAtEnd = H3Error(.connection, .frameError, "stream ended inside a frame")
    // §7.2.x: frames on the wrong stream, §4.1: frames in the wrong order.
    public static let dataOnControlStream = H3Error(.connection, .frameUnexpected, "DATA on the control stream")
    public static let headersOnControlStream = H3Error(.connection, .frameUnexpected, "HEADERS on the control stream")
    public static let controlFrameOnRequestStream = H3Error(.connection, .frameUnexpected, "control frame (SETTINGS, GOAWAY, CANCEL_PUSH, MAX_PUSH_ID) on a request or push stream")
    public static let pushPromiseFromClient = H3Error(.connection, .frameUnexpected, "PUSH_PROMISE from a client")
    public static let pushPromiseOnControlStream = H3Error(.connection, .frameUnexpected, "PUSH_PROMISE on the control stream")
    public static let http2FrameType = H3Error(.connection, .frameUnexpected, "HTTP/2 frame type reserved in HTTP/3")
    public static let secondSettings = H3Error(.connection, .frameUnexpected, "second SETTINGS frame")
    public static let dataBeforeHeaders = H3Error(.connection, .frameUnexpected, "DATA before HEADERS on a request stream")
    public static let frameAfterTrailers = H3Error(.connection, .frameUnexpected, "HEADERS or DATA after the trailers")
    // §6.2.1: "If the first frame of the control stream is any other frame
    // type, this MUST be treated as a connection error of type
    // H3_MISSING_SETTINGS."
    public static let missingSettings = H3Error(.connection, .missingSettings, "first frame on the control stream is not SETTINGS")
    // §7.2.4: duplicates "MAY" be H3_SETTINGS_ERROR (we do); §7.2.4.1
    // HTTP/2-only identifiers "MUST be treated as a connection error of
    // type H3_SETTINGS_ERROR".
    public static let duplicateSetting = H3Error(.connection, .settingsError, "setting identifier repeated in SETTINGS")
    public static let http2Setting = H3Error(.connection, .settingsError, "HTTP/2 setting identifier reserved in HTTP/3")
    public static let invalidSettingValue = H3Error(.connection, .settingsError, "setting value out of range")
    // §7.2.6 / §5.2: GOAWAY identifiers may only decrease; §7.2.7 MAX_PUSH_ID
    // "cannot reduce the maximum push ID"; §7.2.3 CANCEL_PUSH of a push ID
    // never promised (we never push).
    public static let goawayIDIncreased = H3Error(.connection, .idError, "GOAWAY identifier larger than an earlier one")
    public static let maxPushIDDecreased = H3Error(.connection, .idError, "MAX_PUSH_ID smaller than an earlier one")
    public static let cancelUnknownPush = H3Error(.connection, .idError, "CANCEL_PUSH for a push ID never promised")
    // Our limits (§10.5: "An endpoint MAY ... H3_EXCESSIVE_LOAD").
    public static let frameTooLarge = H3Error(.connection, .excessiveLoad, "frame longer than this stream type accepts")
    // §6.2.1, RFC 9204 §4.2: one control, encoder and decoder stream each.
    public static let duplicateControlStream = H3Error(.connection, .streamCreationError, "second control stream")
    public static let duplicateEncoderStream = H3Error(.connection, .streamCreationError, "second QPACK encoder stream")
    public static let duplicateDecoderStream = H3Error(.connection, .streamCreationError, "second QPACK decoder stream")
    // §6.2.2: "Only servers can push".
    public static let pushStreamFromClient = H3Error(.connection, .streamCreationError, "push stream opened by a client")
    // §6.2.1, RFC 9204 §4.2: closing a critical stream.
    public static let closedControlStream = H3Error(.connection, .closedCriticalStream, "control stream closed")
    public static let closedEncoderStream = H3Error(.connection, .closedCriticalStream, "QPACK encoder stream closed")
    public static let closedDecoderStream = H3Error(.connection, .closedCriticalStream, "QPACK decoder stream closed")

    // Stream errors. §4.1.2: malformed requests → H3_MESSAGE_ERROR.
    public static let contentLengthMismatch = H3Error(.stream, .messageError, "body length differs from content-length")
    // §4.1: "If a client-initiated stream terminates without enough of the
    // HTTP message to provide a complete response, the server SHOULD abort
    // its response stream with the error code H3_REQUEST_INCOMPLETE."
    public static let requestIncomplete = H3Error(.stream, .requestIncomplete, "request stream ended before a complete HEADERS")
    // §4.2.2: a field section over our SETTINGS_MAX_FIELD_SECTION_SIZE
    // (the server may answer 431 instead).
    public static let fieldSectionTooLarge = H3Error(.stream, .messageError, "field section larger than SETTINGS_MAX_FIELD_SECTION_SIZE")

    /// A malformed request (§4.1.2, §4.2, §4.3): the shared field rules.
    public init(_ e: RequestFieldError) { self.init(.stream, .messageError, e.reason) }
}

extension H3Error {
    // §4.2.2: a server "that receives a larger header section than it is
    // willing to handle can send an HTTP 431 response"; a HEADERS frame we
    // will not buffer ends that request only.
    public static let headersFrameTooLarge = H3Error(.stream, .excessiveLoad, "HEADERS frame longer than the field section limit allows")
}

extension H3Error {
    // RFC 9297 §2.1: an HTTP/3 Datagram too short for its Quarter Stream ID,
    // or with one above 2^60 - 1, is a connection error H3_DATAGRAM_ERROR.
    public static let datagramTruncated = H3Error(.connection, H3Datagram.datagramError, "HTTP/3 datagram without a quarter stream ID")
    public static let datagramStreamIDTooLarge = H3Error(.connection, H3Datagram.datagramError, "HTTP/3 datagram quarter stream ID above 2^60-1")
}
