/// The Prometheus text exposition format, version 0.0.4: what `/metrics`
/// answers.
///
/// Per metric family: `# HELP name text` and `# TYPE name type`, then one
/// line per sample, `name{label="value",...} value`. The format's escaping
/// rules: in HELP text a backslash becomes `\\` and a line feed `\n`; in a
/// label value a backslash, a double quote and a line feed become `\\`,
/// `\"` and `\n`. Nothing else is escaped (the text is UTF-8). Values are
/// Go-style floats; ours are integers, exact decimals (seconds from
/// microseconds) or `+Inf`.
struct MetricsExposition {
    private(set) var text = ""

    enum Kind: String { case counter, gauge, histogram }

    mutating func family(_ name: String, _ kind: Kind, help: String) {
        text += "# HELP \(name) \(Self.escapeHelp(help))\n# TYPE \(name) \(kind.rawValue)\n"
    }

    mutating func sample(_ name: String, _ labels: [(String, String)] = [], _ value: String) {
        text += name
        if !labels.isEmpty {
            text += "{"
            for (i, (key, v)) in labels.enumerated() {
                if i > 0 { text += "," }
                text += "\(key)=\"\(Self.escapeLabelValue(v))\""
            }
            text += "}"
        }
        text += " \(value)\n"
    }

    mutating func sample(_ name: String, _ labels: [(String, String)] = [], _ value: Int64) {
        sample(name, labels, String(value))
    }

    static func escapeHelp(_ s: String) -> String {
        guard s.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\n") }) else { return s }
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    static func escapeLabelValue(_ s: String) -> String {
        guard s.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\"") })
        else { return s }
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\"": out += "\\\""
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// Microseconds as decimal seconds, exactly: 2500 → "0.0025",
    /// 1_000_000 → "1", 1_500_000 → "1.5".
    static func seconds(microseconds us: Int64) -> String {
        let negative = us < 0
        let magnitude = us.magnitude
        let whole = magnitude / 1_000_000
        var fraction = magnitude % 1_000_000
        var text = (negative ? "-" : "") + String(whole)
        guard fraction != 0 else { return text }
        var digits = 6
        while fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        let f = String(fraction)
        text += "." + String(repeating: "0", count: digits - f.count) + f
        return text
    }
}
