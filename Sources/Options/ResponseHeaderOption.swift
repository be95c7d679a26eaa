/// A field `--header NAME:VALUE` adds to every response (see
/// `DefaultResponseFields` for how the server sends them).
public struct ResponseHeaderOption: Sendable, Equatable {
    /// A token (RFC 9110 §5.6.2), lower-cased: HTTP/2 and HTTP/3 carry only
    /// lower-case names (RFC 9113 §8.2.1, RFC 9114 §4.2).
    public let name: [UInt8]
    /// Without the whitespace around it (RFC 9110 §5.5: OWS is not part of
    /// the value); no control character but HTAB.
    public let value: [UInt8]

    /// Names `--header` refuses, with the reason it gives:
    /// - `date` and `server` are the server's own (`--no-date-header`,
    ///   `--server-header`);
    /// - the connection-specific fields of RFC 9110 §7.6.1 (`connection`,
    ///   `keep-alive`, `proxy-connection`, `te`, `transfer-encoding`,
    ///   `upgrade`) and framing (`content-length`, `trailer`): the server
    ///   frames every message itself, and HTTP/2 and HTTP/3 make a response
    ///   carrying a connection-specific field malformed (RFC 9113 §8.2.2,
    ///   RFC 9114 §4.2).
    static let refused: [(name: String, reason: String)] = [
        ("date", "the server sends it (--no-date-header drops it)"),
        ("server", "use --server-header"),
        ("connection", "connection-specific fields are the server's (RFC 9110 §7.6.1)"),
        ("keep-alive", "connection-specific fields are the server's (RFC 9110 §7.6.1)"),
        ("proxy-connection", "connection-specific fields are the server's (RFC 9110 §7.6.1)"),
        ("te", "connection-specific fields are the server's (RFC 9110 §7.6.1)"),
        ("transfer-encoding", "the server frames every response"),
        ("upgrade", "connection-specific fields are the server's (RFC 9110 §7.6.1)"),
        ("content-length", "the server frames every response"),
        ("trailer", "the server frames every response"),
    ]

    /// Longest value accepted: far beyond any sensible default, well under
    /// every client's field section limit.
    public static let maxValueLength = 4096

    /// Parses `NAME:VALUE` (the value may be empty).
    public init(parsing text: String) throws(UsageError) {
        let bytes = Array(text.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else {
            throw UsageError(message: "--header must be NAME:VALUE, got '\(text)'")
        }
        let name = bytes[..<colon].map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
        guard !name.isEmpty, name.allSatisfy(ResponseHeaderOption.isTchar) else {
            throw UsageError(message: "--header: the name must be a token (RFC 9110 §5.6.2: letters, digits, !#$%&'*+-.^_`|~), got '\(text)'")
        }
        if let refusal = ResponseHeaderOption.refused.first(where: { Array($0.name.utf8) == name }) {
            throw UsageError(message: "--header cannot set '\(refusal.name)': \(refusal.reason)")
        }
        self.value = try ResponseHeaderOption.fieldValue(bytes[(colon + 1)...],
                                                         option: "--header \(String(decoding: name, as: UTF8.self))")
        self.name = name
    }

    /// `--server-header VALUE`: the same rules for the value, which must
    /// not be empty.
    static func serverValue(_ text: String) throws(UsageError) -> [UInt8] {
        let value = try fieldValue(Array(text.utf8)[...], option: "--server-header")
        if value.isEmpty { throw UsageError(message: "--server-header must not be empty") }
        return value
    }

    /// A value without the whitespace around it (RFC 9110 §5.5: OWS is not
    /// part of it), checked.
    static func fieldValue(_ bytes: ArraySlice<UInt8>, option: String) throws(UsageError) -> [UInt8] {
        var value = bytes
        while let first = value.first, first == 0x20 || first == 0x09 { value.removeFirst() }
        while let last = value.last, last == 0x20 || last == 0x09 { value.removeLast() }
        guard isFieldValue(value) else {
            throw UsageError(message: "\(option): the value must not hold CR, LF, NUL or another control character (RFC 9110 §5.5)")
        }
        guard value.count <= maxValueLength else {
            throw UsageError(message: "\(option): the value is longer than \(maxValueLength) bytes")
        }
        return Array(value)
    }

    /// RFC 9110 §5.6.2: `tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" /
    /// "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA`.
    static func isTchar(_ c: UInt8) -> Bool {
        switch c {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        default: return Array("!#$%&'*+-.^_`|~".utf8).contains(c)
        }
    }

    /// RFC 9110 §5.5: field-content is VCHAR, obs-text, SP and HTAB; CR, LF
    /// and NUL would end the field line early (response splitting).
    static func isFieldValue(_ value: ArraySlice<UInt8>) -> Bool {
        !value.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }
    }
}
