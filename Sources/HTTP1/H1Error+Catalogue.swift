/// Every error the HTTP/1 parsers produce, one constant per rule, so the
/// status for each rule is decided here and nowhere else (STYLE §4).
extension H1Error {
    // MARK: Head framing (RFC 9112 §2)

    /// RFC 9112 §2.2: we accept only CRLF as a line terminator; a lone LF is
    /// how smuggling payloads hide a line from a lenient peer.
    public static let bareLF = H1Error(status: 400, reason: "bare LF in head")
    /// RFC 9112 §2.2: "a recipient of such a bare CR MUST consider that element
    /// to be invalid".
    public static let bareCR = H1Error(status: 400, reason: "bare CR in head")
    public static let tooManyEmptyLines = H1Error(status: 400, reason: "too many empty lines before request line")
    public static let headTooLarge = H1Error(status: 431, reason: "request head too large")
    public static let tooManyFields = H1Error(status: 431, reason: "too many header fields")

    // MARK: Request line (RFC 9112 §3)

    public static let invalidMethod = H1Error(status: 400, reason: "invalid method")
    public static let methodTooLong = H1Error(status: 501, reason: "method too long")
    public static let emptyTarget = H1Error(status: 400, reason: "empty request-target")
    public static let invalidTargetByte = H1Error(status: 400, reason: "invalid byte in request-target")
    public static let invalidTargetForm = H1Error(status: 400, reason: "invalid request-target form")
    public static let invalidTargetAuthority = H1Error(status: 400, reason: "invalid authority in request-target")
    public static let targetTooLong = H1Error(status: 414, reason: "request-target too long")
    public static let malformedVersion = H1Error(status: 400, reason: "malformed HTTP-version")
    public static let unsupportedVersion = H1Error(status: 505, reason: "HTTP version not supported")

    // MARK: Field lines (RFC 9112 §5)

    public static let obsFold = H1Error(status: 400, reason: "obsolete line folding")
    public static let whitespaceBeforeColon = H1Error(status: 400, reason: "whitespace between field name and colon")
    public static let invalidFieldName = H1Error(status: 400, reason: "invalid field name")
    public static let missingColon = H1Error(status: 400, reason: "field line without colon")
    public static let invalidFieldValue = H1Error(status: 400, reason: "invalid byte in field value")

    // MARK: Field semantics (RFC 9110 §7.2, §8.6, §10.1.1; RFC 9112 §3.2, §6)

    public static let missingHost = H1Error(status: 400, reason: "HTTP/1.1 request without Host")
    public static let multipleHost = H1Error(status: 400, reason: "more than one Host field")
    public static let invalidHost = H1Error(status: 400, reason: "invalid Host")
    /// RFC 9110 §8.6: Content-Length = 1*DIGIT.
    public static let invalidContentLength = H1Error(status: 400, reason: "invalid Content-Length")
    /// RFC 9110 §8.6 allows rejecting a list such as `42, 42` rather than
    /// replacing it by one value; we reject it, identical values or not.
    public static let contentLengthList = H1Error(status: 400, reason: "Content-Length with a list of values")
    /// The same rule for the list spread over field lines (RFC 9110 §5.3:
    /// two lines mean the comma-joined list).
    public static let repeatedContentLength = H1Error(status: 400, reason: "Content-Length in more than one field line")
    public static let contentLengthWithTransferEncoding = H1Error(status: 400, reason: "Content-Length with Transfer-Encoding")
    public static let transferEncodingInHTTP10 = H1Error(status: 400, reason: "Transfer-Encoding in an HTTP/1.0 request")
    public static let repeatedTransferEncoding = H1Error(status: 400, reason: "Transfer-Encoding in more than one field line")
    public static let invalidTransferEncoding = H1Error(status: 400, reason: "invalid Transfer-Encoding")
    public static let chunkedNotLast = H1Error(status: 400, reason: "chunked is not the final transfer coding")
    public static let chunkedRepeated = H1Error(status: 400, reason: "chunked applied more than once")
    public static let unsupportedTransferCoding = H1Error(status: 501, reason: "unsupported transfer coding")
    public static let unsupportedExpectation = H1Error(status: 417, reason: "unsupported expectation")

    // MARK: Chunked body (RFC 9112 §7.1)

    public static let invalidChunkSize = H1Error(status: 400, reason: "invalid chunk size")
    public static let chunkSizeOverflow = H1Error(status: 400, reason: "chunk size too large")
    public static let invalidChunkExtension = H1Error(status: 400, reason: "invalid chunk extension")
    public static let chunkExtensionTooLong = H1Error(status: 400, reason: "chunk extensions too long")
    public static let chunkBareLF = H1Error(status: 400, reason: "bare LF in chunked framing")
    public static let missingChunkDataCRLF = H1Error(status: 400, reason: "chunk data not followed by CRLF")
    public static let trailerTooLarge = H1Error(status: 431, reason: "trailer section too large")
}
