/// Bounds on what one request may make the parsers hold or scan
/// (DESIGN principle 6: every bound has an answer). Each limit's doc says what
/// happens when it is hit; the defaults are what the server uses unless
/// configured otherwise.
public struct H1Limits: Sendable {
    /// The whole head: leading empty lines, request line, field lines and the
    /// final empty line. Exceeded (before or after the end is found) -> 431.
    public var maxHeadBytes: Int = 32 * 1024
    /// Field lines in the head (dropped ones included). More -> 431.
    public var maxHeaderCount: Int = 100
    /// The request-target. Longer -> 414, reported as soon as the target has
    /// grown past it, even before the request line ends. RFC 9112 §3 asks for
    /// at least 8000 octets; the default leaves twice that.
    public var maxTargetBytes: Int = 16 * 1024
    /// The trailer section of a chunked body, field lines plus its final CRLF.
    /// Larger -> 431.
    public var maxTrailerBytes: Int = 8 * 1024
    /// The chunk extensions on one chunk-size line (everything between the
    /// hex size and the CRLF). Longer -> 400.
    public var maxChunkExtensionBytes: Int = 1024

    public init() {}

    /// Leading empty lines (CRLF) tolerated before a request line
    /// (RFC 9112 §2.2 "SHOULD ignore at least one"). More -> 400.
    public static let maxLeadingEmptyLines = 8
    /// Longest method token. Longer -> 501 (RFC 9112 §3: "A server that
    /// receives a method longer than any that it implements SHOULD respond
    /// with a 501 (Not Implemented) status code").
    public static let maxMethodBytes = 64
}
