/// A `--env-file` the reader refuses: the line (1-based) and why.
public struct DotEnvError: Error, Sendable, Equatable {
    public let line: Int
    public let message: String
}

/// The dotenv syntax of python-dotenv (what uvicorn's `--env-file` loads),
/// without Foundation. One variable per line:
///
///     # a comment
///     export NAME=value          # `export ` is allowed and ignored
///     NAME = value  # comment    # spaces around `=` and the value trimmed
///     NAME='literal $NAME \n'    # single quotes: taken as written
///     NAME="line\nnext ${HOME}"  # double quotes: \\ \" \' \n \r \t \b \f \v escapes
///     NAME="spans                # quoted values may span lines
///     two lines"
///     NAME=${OTHER:-fallback}    # ${VAR} and ${VAR:-default} expand, unquoted and "..."
///     NAME                       # no `=`: ignored (python-dotenv gives it no value)
///
/// `${VAR}` takes the process environment first, then the file's earlier
/// lines (python-dotenv's order when it does not override). Names are
/// letters, digits, `_`, `.` and `-`, not starting with a digit.
public enum DotEnv {
    public static func read(_ document: [UInt8],
                            environment: (String) -> String?) throws(DotEnvError) -> [(name: String, value: String)] {
        var result: [(name: String, value: String)] = []
        var i = 0
        var line = 1
        let n = document.count
        func at(_ k: Int) -> UInt8? { k < n ? document[k] : nil }
        func skipBlanks() { while let c = at(i), c == 0x20 || c == 0x09 { i += 1 } }
        func restOfLine() { while let c = at(i), c != 0x0A { i += 1 } }
        func lookup(_ name: String) -> String? {
            environment(name) ?? result.last(where: { $0.name == name })?.value
        }
        while i < n {
            let startLine = line
            skipBlanks()
            guard let c = at(i) else { break }
            if c == 0x0A || c == 0x0D || c == UInt8(ascii: "#") {
                restOfLine()
                if i < n { i += 1; line += 1 }
                continue
            }
            if document[i...].starts(with: "export ".utf8) || document[i...].starts(with: "export\t".utf8) {
                i += 7
                skipBlanks()
            }
            let nameStart = i
            while let b = at(i), isNameByte(b) { i += 1 }
            let name = String(decoding: document[nameStart..<i], as: UTF8.self)
            guard !name.isEmpty, !(document[nameStart] >= 0x30 && document[nameStart] <= 0x39) else {
                throw DotEnvError(line: startLine, message: "expected NAME=value")
            }
            skipBlanks()
            if at(i) == nil || at(i) == 0x0A || at(i) == 0x0D || at(i) == UInt8(ascii: "#") {
                restOfLine()  // NAME alone: no value
                if i < n { i += 1; line += 1 }
                continue
            }
            guard at(i) == UInt8(ascii: "=") else {
                throw DotEnvError(line: startLine, message: "expected '=' after \(name)")
            }
            i += 1
            skipBlanks()
            var value: [UInt8] = []
            var expand = true
            if let q = at(i), q == UInt8(ascii: "'") || q == UInt8(ascii: "\"") {
                i += 1
                expand = q == UInt8(ascii: "\"")
                var closed = false
                while let b = at(i) {
                    i += 1
                    if b == q { closed = true; break }
                    if b == 0x0A { line += 1 }
                    if b == UInt8(ascii: "\\"), let e = at(i) {
                        if q == UInt8(ascii: "'") {
                            // python-dotenv: only \\ and \' are escapes in single quotes.
                            if e == UInt8(ascii: "'") || e == UInt8(ascii: "\\") { value.append(e); i += 1 } else { value.append(b) }
                            continue
                        }
                        i += 1
                        switch e {
                        case UInt8(ascii: "n"): value.append(0x0A)
                        case UInt8(ascii: "r"): value.append(0x0D)
                        case UInt8(ascii: "t"): value.append(0x09)
                        case UInt8(ascii: "b"): value.append(0x08)
                        case UInt8(ascii: "f"): value.append(0x0C)
                        case UInt8(ascii: "v"): value.append(0x0B)
                        case UInt8(ascii: "\""), UInt8(ascii: "'"), UInt8(ascii: "\\"): value.append(e)
                        default: value += [b, e]
                        }
                        continue
                    }
                    value.append(b)
                }
                guard closed else { throw DotEnvError(line: startLine, message: "\(name): unterminated quoted value") }
                skipBlanks()
                guard at(i) == nil || at(i) == 0x0A || at(i) == 0x0D || at(i) == UInt8(ascii: "#") else {
                    throw DotEnvError(line: line, message: "\(name): unexpected text after the closing quote")
                }
                restOfLine()
            } else {
                // Unquoted: to the end of the line or a ` #` comment, trimmed.
                while let b = at(i), b != 0x0A {
                    if b == UInt8(ascii: "#"), let last = value.last, last == 0x20 || last == 0x09 { break }
                    value.append(b)
                    i += 1
                }
                restOfLine()
                while let last = value.last, last == 0x20 || last == 0x09 || last == 0x0D { value.removeLast() }
            }
            if i < n { i += 1; line += 1 }
            guard let text = String(validating: value, as: UTF8.self) else {
                throw DotEnvError(line: startLine, message: "\(name): invalid UTF-8")
            }
            result.append((name, expand ? try expandReferences(text, line: startLine, lookup: lookup) : text))
        }
        return result
    }

    private static func isNameByte(_ b: UInt8) -> Bool {
        (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z"))
            || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || b == UInt8(ascii: "_") || b == UInt8(ascii: ".")
            || b == UInt8(ascii: "-")
    }

    /// `${NAME}` and `${NAME:-default}` (python-dotenv's POSIX subset); a
    /// `$` not followed by `{` stays as written. An unset name is empty.
    static func expandReferences(_ text: String, line: Int,
                                 lookup: (String) -> String?) throws(DotEnvError) -> String {
        let b = Array(text.utf8)
        var out: [UInt8] = []
        var i = 0
        while i < b.count {
            if b[i] == UInt8(ascii: "$"), i + 1 < b.count, b[i + 1] == UInt8(ascii: "{") {
                guard let close = b[(i + 2)...].firstIndex(of: UInt8(ascii: "}")) else {
                    throw DotEnvError(line: line, message: "unterminated ${ in a value")
                }
                let inner = String(decoding: b[(i + 2)..<close], as: UTF8.self)
                var name = inner
                var fallback = ""
                if let r = inner.firstRange(of: ":-") {
                    name = String(inner[..<r.lowerBound])
                    fallback = String(inner[r.upperBound...])
                }
                out += Array((lookup(name) ?? fallback).utf8)
                i = close + 1
                continue
            }
            out.append(b[i])
            i += 1
        }
        return String(decoding: out, as: UTF8.self)
    }
}
