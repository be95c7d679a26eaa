/// A TOML value of the subset `--config` files use.
public enum TOMLValue: Sendable, Equatable {
    case string(String)
    case integer(Int64)
    case boolean(Bool)
    case array([TOMLValue])
}

/// One `key = value` of the document, with the line it starts on.
public struct TOMLEntry: Sendable, Equatable {
    public let key: String
    public let value: TOMLValue
    public let line: Int
}

/// A document the reader refuses: the line (1-based) and why.
public struct TOMLError: Error, Sendable, Equatable {
    public let line: Int
    public let message: String
}

/// A strict reader for the part of TOML 1.0 (https://toml.io/en/v1.0.0) a
/// peregrine configuration needs, without Foundation.
///
/// Theory of operation: one pass over the bytes with a cursor and a line
/// counter. A document is lines of `key = value`, blank lines and comments,
/// either all at the top level or all under one `[peregrine]` table.
/// Accepted: comments, bare and quoted keys, basic strings (every TOML
/// escape including \u and \U) and literal strings, integers (sign, `_`
/// between digits, 0x/0o/0b), booleans, arrays over several lines with
/// comments and a trailing comma. Everything else TOML has is refused with
/// its line and name, never misread: floats, dates and times, multi-line
/// strings, inline tables, dotted keys, nested arrays, other tables and
/// arrays of tables. A key given twice is refused, as TOML requires.
/// tests/e2e/test_config_toml.py holds this reader to Python's tomllib.
public struct TOMLReader {
    private let bytes: [UInt8]
    private var index = 0
    private var line = 1

    private init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The entries of `document` in order.
    public static func read(_ document: [UInt8]) throws(TOMLError) -> [TOMLEntry] {
        var reader = TOMLReader(document)
        return try reader.readDocument()
    }

    /// One value on its own (an environment variable holding a TOML array),
    /// with nothing after it but whitespace.
    public static func readValue(_ text: String) throws(TOMLError) -> TOMLValue {
        var reader = TOMLReader(Array(text.utf8))
        let value = try reader.readValue()
        reader.skipWhitespace()
        guard reader.atEnd else { throw reader.error("unexpected text after the value") }
        return value
    }

    private var atEnd: Bool { index >= bytes.count }
    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private func error(_ message: String) -> TOMLError { TOMLError(line: line, message: message) }

    private mutating func readDocument() throws(TOMLError) -> [TOMLEntry] {
        // tomllib refuses a byte order mark too; we say what it is.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { throw error("the file starts with a byte order mark: save it as UTF-8 without one") }
        var entries: [TOMLEntry] = []
        var seen: Set<String> = []
        var sawTable = false
        while true {
            skipWhitespace()
            guard let c = current else { return entries }
            if c == UInt8(ascii: "#") || c == UInt8(ascii: "\n") || c == UInt8(ascii: "\r") {
                try endOfLine()
                continue
            }
            if c == UInt8(ascii: "[") {
                let tableLine = line
                index += 1
                if current == UInt8(ascii: "[") { throw error("arrays of tables ([[...]]) are not supported") }
                skipWhitespace()
                let name = try readKeyPart()
                skipWhitespace()
                if current == UInt8(ascii: ".") { throw error("only the [peregrine] table is supported, not a dotted table") }
                guard current == UInt8(ascii: "]") else { throw error("expected ']' to close the table header") }
                index += 1
                guard name == "peregrine" else {
                    throw error("unknown table [\(name)]: keys go at the top level or under [peregrine]")
                }
                if sawTable { throw error("table [peregrine] is defined twice") }
                if !entries.isEmpty {
                    throw TOMLError(line: tableLine, message: "keys before [peregrine]: put every key under [peregrine] or none")
                }
                sawTable = true
                try endOfLine()
                continue
            }
            let keyLine = line
            let key = try readKeyPart()
            skipWhitespace()
            if current == UInt8(ascii: ".") { throw error("dotted keys are not supported (key '\(key)')") }
            guard current == UInt8(ascii: "=") else { throw error("expected '=' after key '\(key)'") }
            index += 1
            skipWhitespace()
            let value = try readValue()
            guard seen.insert(key).inserted else { throw TOMLError(line: keyLine, message: "key '\(key)' is defined twice") }
            entries.append(TOMLEntry(key: key, value: value, line: keyLine))
            try endOfLine()
        }
    }

    private mutating func skipWhitespace() {
        while let c = current, c == UInt8(ascii: " ") || c == UInt8(ascii: "\t") { index += 1 }
    }

    /// Optional whitespace and comment, then a newline or the end.
    private mutating func endOfLine() throws(TOMLError) {
        skipWhitespace()
        if current == UInt8(ascii: "#") {
            index += 1
            let start = index
            while let c = current, c != UInt8(ascii: "\n") {
                if c == UInt8(ascii: "\r") && index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "\n") { break }
                // TOML 1.0 "Comment": control characters other than tab are not permitted.
                if c < 0x20 && c != UInt8(ascii: "\t") || c == 0x7F { throw error("control character in a comment") }
                index += 1
            }
            if String(validating: bytes[start..<index], as: UTF8.self) == nil { throw error("invalid UTF-8 in a comment") }
        }
        guard let c = current else { return }
        if c == UInt8(ascii: "\n") {
            index += 1
            line += 1
        } else if c == UInt8(ascii: "\r"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "\n") {
            index += 2
            line += 1
        } else {
            throw error("unexpected text after the value (one key = value per line)")
        }
    }

    /// A bare key (A-Za-z0-9_-) or a quoted one.
    private mutating func readKeyPart() throws(TOMLError) -> String {
        guard let c = current else { throw error("expected a key") }
        if c == UInt8(ascii: "\"") { return try readBasicString() }
        if c == UInt8(ascii: "'") { return try readLiteralString() }
        let start = index
        while let b = current, isBareKeyByte(b) { index += 1 }
        guard index > start else { throw error("expected a key, found '\(Unicode.Scalar(c))'") }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private func isBareKeyByte(_ b: UInt8) -> Bool {
        (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z"))
            || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || b == UInt8(ascii: "_") || b == UInt8(ascii: "-")
    }

    private mutating func readValue() throws(TOMLError) -> TOMLValue {
        guard let c = current else { throw error("expected a value") }
        switch c {
        case UInt8(ascii: "\""): return .string(try readBasicString())
        case UInt8(ascii: "'"): return .string(try readLiteralString())
        case UInt8(ascii: "["): return try readArray()
        case UInt8(ascii: "{"): throw error("inline tables are not supported")
        default: break
        }
        // A bare value runs to a delimiter: true, false, an integer, or
        // something TOML has and we refuse (float, date, inf, nan).
        let start = index
        while let b = current, !(b == UInt8(ascii: " ") || b == UInt8(ascii: "\t") || b == UInt8(ascii: "\n")
                                 || b == UInt8(ascii: "\r") || b == UInt8(ascii: ",") || b == UInt8(ascii: "]")
                                 || b == UInt8(ascii: "#")) {
            index += 1
        }
        let token = Array(bytes[start..<index])
        if token == Array("true".utf8) { return .boolean(true) }
        if token == Array("false".utf8) { return .boolean(false) }
        if let n = Self.integer(token) { return .integer(n) }
        // A date-time may have one space between date and time (TOML "Offset Date-Time").
        if token.count == 10 && token[4] == UInt8(ascii: "-") && token[7] == UInt8(ascii: "-") {
            throw error("dates and times are not supported")
        }
        let text = String(decoding: token, as: UTF8.self)
        if token.contains(UInt8(ascii: ":")) || (token.count > 4 && token[4] == UInt8(ascii: "-")) {
            throw error("dates and times are not supported ('\(text)')")
        }
        let digitsOrSign = token.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || "+-_.eE".utf8.contains($0) }
        if !token.isEmpty && (digitsOrSign || ["inf", "+inf", "-inf", "nan", "+nan", "-nan"].contains(text)) {
            if token.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") })
                || text.hasSuffix("inf") || text.hasSuffix("nan") {
                throw error("floats are not supported ('\(text)')")
            }
            throw error("invalid integer '\(text)'")
        }
        if token.isEmpty { throw error("expected a value") }
        throw error("invalid value '\(text)' (strings need quotes)")
    }

    /// TOML 1.0 "Integer": decimal with optional sign, no leading zero, `_`
    /// only between digits; or 0x/0o/0b without sign.
    static func integer(_ token: [UInt8]) -> Int64? {
        var digits = token[...]
        var radix = 10
        var negative = false
        if digits.count > 2 && digits.first == UInt8(ascii: "0") {
            switch digits[digits.startIndex + 1] {
            case UInt8(ascii: "x"): radix = 16
            case UInt8(ascii: "o"): radix = 8
            case UInt8(ascii: "b"): radix = 2
            default: return nil
            }
            digits = digits.dropFirst(2)
        } else if let sign = digits.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            negative = sign == UInt8(ascii: "-")
            digits = digits.dropFirst()
            if digits.isEmpty { return nil }
        }
        if radix == 10 && digits.count > 1 && digits.first == UInt8(ascii: "0") { return nil }
        guard let first = digits.first, first != UInt8(ascii: "_"), digits.last != UInt8(ascii: "_") else { return nil }
        var magnitude: UInt64 = 0
        var previousUnderscore = false
        for b in digits {
            if b == UInt8(ascii: "_") {
                if previousUnderscore { return nil }
                previousUnderscore = true
                continue
            }
            previousUnderscore = false
            let d: Int
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = Int(b - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = Int(b - UInt8(ascii: "a")) + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = Int(b - UInt8(ascii: "A")) + 10
            default: return nil
            }
            guard d < radix else { return nil }
            let (m, o1) = magnitude.multipliedReportingOverflow(by: UInt64(radix))
            let (s, o2) = m.addingReportingOverflow(UInt64(d))
            if o1 || o2 { return nil }
            magnitude = s
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
        }
        guard magnitude <= UInt64(Int64.max) else { return nil }
        return Int64(magnitude)
    }

    private mutating func readArray() throws(TOMLError) -> TOMLValue {
        index += 1
        var items: [TOMLValue] = []
        while true {
            try skipArraySpace()
            guard let c = current else { throw error("unterminated array") }
            if c == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            if c == UInt8(ascii: "[") { throw error("nested arrays are not supported") }
            items.append(try readValue())
            try skipArraySpace()
            guard let next = current else { throw error("unterminated array") }
            if next == UInt8(ascii: ",") {
                index += 1
            } else if next != UInt8(ascii: "]") {
                throw error("expected ',' or ']' in the array")
            }
        }
    }

    /// Whitespace, newlines and comments, allowed between array items.
    private mutating func skipArraySpace() throws(TOMLError) {
        while true {
            skipWhitespace()
            guard let c = current else { return }
            if c == UInt8(ascii: "#") || c == UInt8(ascii: "\n") || c == UInt8(ascii: "\r") {
                try endOfLine()
            } else {
                return
            }
        }
    }

    private mutating func readLiteralString() throws(TOMLError) -> String {
        if bytes[index...].starts(with: "'''".utf8) { throw error("multi-line strings are not supported") }
        index += 1
        let start = index
        while let c = current, c != UInt8(ascii: "'") {
            if c == UInt8(ascii: "\n") || c == UInt8(ascii: "\r") { throw error("unterminated string") }
            if c < 0x20 && c != UInt8(ascii: "\t") || c == 0x7F { throw error("control character in a string") }
            index += 1
        }
        guard current != nil else { throw error("unterminated string") }
        let raw = bytes[start..<index]
        index += 1
        guard let text = String(validating: raw, as: UTF8.self) else { throw error("invalid UTF-8 in a string") }
        return text
    }

    private mutating func readBasicString() throws(TOMLError) -> String {
        if bytes[index...].starts(with: "\"\"\"".utf8) { throw error("multi-line strings are not supported") }
        index += 1
        var out: [UInt8] = []
        while true {
            guard let c = current else { throw error("unterminated string") }
            index += 1
            switch c {
            case UInt8(ascii: "\""):
                guard let text = String(validating: out, as: UTF8.self) else { throw error("invalid UTF-8 in a string") }
                return text
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                throw error("unterminated string")
            case UInt8(ascii: "\\"):
                guard let e = current else { throw error("unterminated string") }
                index += 1
                switch e {
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "u"): out += try readUnicodeEscape(digits: 4)
                case UInt8(ascii: "U"): out += try readUnicodeEscape(digits: 8)
                default: throw error("invalid escape '\\\(Unicode.Scalar(e))' in a string")
                }
            default:
                if c < 0x20 && c != UInt8(ascii: "\t") || c == 0x7F { throw error("control character in a string") }
                out.append(c)
            }
        }
    }

    /// `\uXXXX` / `\UXXXXXXXX`: a Unicode scalar value (no surrogates).
    private mutating func readUnicodeEscape(digits: Int) throws(TOMLError) -> [UInt8] {
        guard index + digits <= bytes.count else { throw error("incomplete \\u escape") }
        var value: UInt32 = 0
        for b in bytes[index..<index + digits] {
            guard let d = Self.hexDigit(b) else { throw error("invalid \\u escape (hex digits expected)") }
            value = value << 4 | d
        }
        index += digits
        guard let scalar = Unicode.Scalar(value) else { throw error("\\u escape is not a Unicode scalar value") }
        return Array(String(Character(scalar)).utf8)
    }

    private static func hexDigit(_ b: UInt8) -> UInt32? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(b - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(b - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(b - UInt8(ascii: "A") + 10)
        default: nil
        }
    }
}
