/// Known field names, recognised once during parsing (case-insensitively,
/// RFC 9110 §5.1) so later code compares integers instead of bytes.
public struct HeaderToken: RawRepresentable, Equatable, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let other = HeaderToken(rawValue: 0)
    public static let host = HeaderToken(rawValue: 1)
    public static let contentLength = HeaderToken(rawValue: 2)
    public static let transferEncoding = HeaderToken(rawValue: 3)
    public static let connection = HeaderToken(rawValue: 4)
    public static let expect = HeaderToken(rawValue: 5)
    public static let upgrade = HeaderToken(rawValue: 6)
    public static let contentType = HeaderToken(rawValue: 7)
    public static let cookie = HeaderToken(rawValue: 8)
    public static let te = HeaderToken(rawValue: 9)
    public static let trailer = HeaderToken(rawValue: 10)
    public static let keepAlive = HeaderToken(rawValue: 11)
    public static let proxyConnection = HeaderToken(rawValue: 12)

    /// The token for the field name `start..<end` (already a valid token).
    /// Dispatches on length first so most names cost one comparison.
    @inlinable
    static func recognise(_ b: Bytes, _ start: Int, _ end: Int) -> HeaderToken {
        switch end - start {
        case 2: if b.equalsIgnoringCase(start, end, "te") { return .te }
        case 4: if b.equalsIgnoringCase(start, end, "host") { return .host }
        case 6:
            if b.equalsIgnoringCase(start, end, "cookie") { return .cookie }
            if b.equalsIgnoringCase(start, end, "expect") { return .expect }
        case 7:
            if b.equalsIgnoringCase(start, end, "upgrade") { return .upgrade }
            if b.equalsIgnoringCase(start, end, "trailer") { return .trailer }
        case 10:
            if b.equalsIgnoringCase(start, end, "connection") { return .connection }
            if b.equalsIgnoringCase(start, end, "keep-alive") { return .keepAlive }
        case 12: if b.equalsIgnoringCase(start, end, "content-type") { return .contentType }
        case 14: if b.equalsIgnoringCase(start, end, "content-length") { return .contentLength }
        case 16: if b.equalsIgnoringCase(start, end, "proxy-connection") { return .proxyConnection }
        case 17: if b.equalsIgnoringCase(start, end, "transfer-encoding") { return .transferEncoding }
        default: break
        }
        return .other
    }
}
