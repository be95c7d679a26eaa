/// A gunicorn-style access-log format string (`--access-log-format`),
/// compiled once at start-up into literal bytes and atoms, so a request's
/// line is written by walking a list, never by parsing the format again.
///
/// Syntax (Python's `%` formatting with a mapping, as gunicorn's
/// `access_log_format`): `%(NAME)s` is an atom, `%%` a literal `%`,
/// anything else is copied as is. Only the `s` conversion exists (every
/// atom is text). An unknown atom, another conversion or a lone `%` is a
/// start-up error; a format without any atom is refused too, since it
/// would log the same constant line for every request (and a typo of
/// `text`/`json` must not pass for one).
///
/// The atoms are gunicorn's (`gunicorn/glogging.py`, `Logger.atoms`); a
/// value that is missing is `-`, as there:
///
///     h  client address (after --forwarded-allow-ips processing)
///     l  `-`                       u  user name of `Authorization: Basic`
///     t  `[10/Oct/2000:13:55:36 -0700]` (local time)
///     r  request line: `GET /p?q HTTP/1.1`
///     m  method   U  path (percent-decoded)   q  query string   H  protocol
///     s  status   b  response body bytes   B  the same
///     f  Referer  a  User-Agent
///     T  seconds (integer)  D  microseconds  M  milliseconds  L  seconds, `1.000123`
///     p  `<pid>`
///     {name}i  request field   {name}o  response field (names in any case)
///
/// Extensions: `{name}o` also sees the server's `content-length`.
public struct AccessLogTemplate: Sendable, Equatable {
    public enum Atom: Sendable, Equatable {
        case remoteAddress, dash, user, time, requestLine, method, path, query, proto
        case status, bytes, referer, userAgent
        case seconds, microseconds, milliseconds, decimalSeconds, pid
        /// A request field: its lower-cased name, and where that name is in
        /// `requestFieldNames` (resolved once, not per request).
        case requestField([UInt8], index: Int)
        /// A response field, the same way (`responseFieldNames`).
        case responseField([UInt8], index: Int)
    }

    public enum Part: Sendable, Equatable {
        case literal([UInt8])
        case atom(Atom)
    }

    /// The format string as given (for showing or passing on the
    /// configuration).
    public let format: String
    public let parts: [Part]
    /// Lower-cased names of the request fields the atoms read (`f`, `a`,
    /// `u` and `{name}i`), copied from each request while it is at hand.
    public let requestFieldNames: [[UInt8]]
    /// Lower-cased names of the response fields `{name}o` atoms read.
    public let responseFieldNames: [[UInt8]]

    public enum ParseError: Error, Equatable {
        /// The `%(...)` text that is not an atom, or the lone `%` with what follows.
        case unknownAtom(String)
        case noAtom
    }

    public init(parsing format: String) throws(ParseError) {
        let b = Array(format.utf8)
        var parts: [Part] = []
        var literal: [UInt8] = []
        var requestNames: [[UInt8]] = []
        var responseNames: [[UInt8]] = []
        var sawAtom = false
        var i = 0
        while i < b.count {
            guard b[i] == UInt8(ascii: "%") else {
                literal.append(b[i])
                i += 1
                continue
            }
            if i + 1 < b.count && b[i + 1] == UInt8(ascii: "%") {
                literal.append(b[i])
                i += 2
                continue
            }
            // `%(` NAME `)s`; the name may hold `)` only inside `{...}`.
            guard i + 1 < b.count, b[i + 1] == UInt8(ascii: "(") else {
                throw .unknownAtom(String(decoding: b[i..<min(b.count, i + 2)], as: UTF8.self))
            }
            var j = i + 2
            var inBraces = false
            while j < b.count {
                if b[j] == UInt8(ascii: "{") { inBraces = true }
                if b[j] == UInt8(ascii: "}") { inBraces = false }
                if b[j] == UInt8(ascii: ")") && !inBraces { break }
                j += 1
            }
            let shown = String(decoding: b[i..<min(b.count, j + 2)], as: UTF8.self)
            guard j + 1 < b.count, b[j + 1] == UInt8(ascii: "s") else { throw .unknownAtom(shown) }
            guard var atom = AccessLogTemplate.atom(named: Array(b[(i + 2)..<j])) else { throw .unknownAtom(shown) }
            switch atom {
            case .referer: _ = AccessLogTemplate.add(AccessLogTemplate.referer, to: &requestNames)
            case .userAgent: _ = AccessLogTemplate.add(AccessLogTemplate.userAgent, to: &requestNames)
            case .user: _ = AccessLogTemplate.add(AccessLogTemplate.authorization, to: &requestNames)
            case .requestField(let name, _): atom = .requestField(name, index: AccessLogTemplate.add(name, to: &requestNames))
            case .responseField(let name, _): atom = .responseField(name, index: AccessLogTemplate.add(name, to: &responseNames))
            default: break
            }
            if !literal.isEmpty { parts.append(.literal(literal)); literal = [] }
            parts.append(.atom(atom))
            sawAtom = true
            i = j + 2
        }
        guard sawAtom else { throw .noAtom }
        if !literal.isEmpty { parts.append(.literal(literal)) }
        self.format = format
        self.parts = parts
        requestFieldNames = requestNames
        responseFieldNames = responseNames
    }

    static let referer = Array("referer".utf8)
    static let userAgent = Array("user-agent".utf8)
    static let authorization = Array("authorization".utf8)

    /// Where the request field `name` is in `requestFieldNames` (nil: no
    /// atom reads it).
    public func requestFieldIndex(_ name: [UInt8]) -> Int? { requestFieldNames.firstIndex(of: name) }
    public var refererIndex: Int? { requestFieldIndex(AccessLogTemplate.referer) }
    public var userAgentIndex: Int? { requestFieldIndex(AccessLogTemplate.userAgent) }
    public var authorizationIndex: Int? { requestFieldIndex(AccessLogTemplate.authorization) }

    /// `name`'s index in `names`, appended if new.
    private static func add(_ name: [UInt8], to names: inout [[UInt8]]) -> Int {
        if let i = names.firstIndex(of: name) { return i }
        names.append(name)
        return names.count - 1
    }

    static func atom(named name: [UInt8]) -> Atom? {
        if name.count == 1 {
            switch name[0] {
            case UInt8(ascii: "h"): return .remoteAddress
            case UInt8(ascii: "l"): return .dash
            case UInt8(ascii: "u"): return .user
            case UInt8(ascii: "t"): return .time
            case UInt8(ascii: "r"): return .requestLine
            case UInt8(ascii: "m"): return .method
            case UInt8(ascii: "U"): return .path
            case UInt8(ascii: "q"): return .query
            case UInt8(ascii: "H"): return .proto
            case UInt8(ascii: "s"): return .status
            case UInt8(ascii: "b"), UInt8(ascii: "B"): return .bytes
            case UInt8(ascii: "f"): return .referer
            case UInt8(ascii: "a"): return .userAgent
            case UInt8(ascii: "T"): return .seconds
            case UInt8(ascii: "D"): return .microseconds
            case UInt8(ascii: "M"): return .milliseconds
            case UInt8(ascii: "L"): return .decimalSeconds
            case UInt8(ascii: "p"): return .pid
            default: return nil
            }
        }
        // `{name}i` / `{name}o`: a field name (a token, RFC 9110 §5.1).
        guard name.count >= 4, name[0] == UInt8(ascii: "{"), name[name.count - 2] == UInt8(ascii: "}") else { return nil }
        let field = name[1..<(name.count - 2)].map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
        guard !field.isEmpty, field.allSatisfy(isTokenChar) else { return nil }
        switch name[name.count - 1] {
        case UInt8(ascii: "i"): return .requestField(field, index: 0)
        case UInt8(ascii: "o"): return .responseField(field, index: 0)
        default: return nil
        }
    }

    /// RFC 9110 §5.6.2 `tchar`.
    static func isTokenChar(_ c: UInt8) -> Bool {
        switch c {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): true
        default: false
        }
    }
}
