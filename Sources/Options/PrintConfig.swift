/// `--print-config`: the effective configuration as a TOML document that
/// `--config` accepts. What a source set is a `key = value` line with its
/// origin in a comment; what is left at its default is a comment, so the
/// output read back as a file sets exactly what was set before.
public enum PrintConfig {
    /// `environmentNames`: the names of the process's environment variables,
    /// so that a `PEREGRINE_*` one that names no option (a typo) is pointed out.
    public static func render(_ resolved: ResolvedConfiguration, environmentNames: [String] = []) -> String {
        var lines = ["# peregrine \(peregrineVersion): effective configuration"
                     + (resolved.configFile.map { " (file \($0))" } ?? "")]
        lines.append(line("app", value: tomlString(resolved.app), origin: resolved.appOrigin))
        for spec in OptionCatalog.options where spec.sources.contains(.file) {
            if let e = resolved.entries.first(where: { $0.option == spec.name }) {
                switch e.setting {
                case .flag(let on): lines.append(line(spec.name, value: on ? "true" : "false", origin: e.origin))
                case .values(let values):
                    let text = spec.kind == .repeatable
                        ? "[" + values.map(tomlScalar).joined(separator: ", ") + "]" : tomlScalar(values.last ?? "")
                    lines.append(line(spec.name, value: text, origin: e.origin))
                }
            } else if spec.kind == .flag {
                lines.append(line(spec.name, value: "false", origin: .defaultValue, commented: true))
            } else if spec.kind == .repeatable {
                lines.append(line(spec.name, value: "[]", origin: .defaultValue, commented: true))
            } else if let d = spec.defaultText {
                lines.append(line(spec.name, value: tomlScalar(d), origin: .defaultValue, commented: true))
            } else {
                lines.append("# \(spec.name)  (default: not set)")
            }
        }
        for (name, _) in resolved.environmentFile {
            lines.append("# --env-file sets \(name) for the application (unless already set)")
        }
        lines += ignoredVariables(environmentNames).map { "# ignored: \($0)" }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `PEREGRINE_*` variables that name no option and look like one: each
    /// with the variable it probably meant. The launcher's, the build's and
    /// the tests' own variables are far from every option name.
    static func ignoredVariables(_ names: [String]) -> [String] {
        let known = Set(OptionCatalog.options.filter { $0.sources.contains(.environment) }.map(\.environmentName) + ["PEREGRINE_APP"])
        var notes: [String] = []
        for name in names.sorted() where name.hasPrefix("PEREGRINE_") && !known.contains(name) {
            let option = String(name.dropFirst("PEREGRINE_".count).lowercased().map { $0 == "_" ? "-" : $0 })
            guard let close = OptionCatalog.suggestion(for: option, allowing: .environment),
                  let spec = OptionCatalog.spec(named: close) else { continue }
            notes.append("\(name) names no option (did you mean \(spec.environmentName)?)")
        }
        return notes
    }

    private static func line(_ key: String, value: String, origin: ConfigOrigin, commented: Bool = false) -> String {
        let body = (commented ? "# " : "") + "\(key) = \(value)"
        let pad = String(repeating: " ", count: max(1, 40 - body.count))
        return body + pad + "# " + origin.description
    }

    /// A canonical decimal integer stays an integer; anything else is a string.
    static func tomlScalar(_ text: String) -> String {
        if TOMLReader.integer(Array(text.utf8)).map({ String($0) == text }) ?? false { return text }
        return tomlString(text)
    }

    /// A TOML basic string: `"`, `\` and control characters escaped.
    static func tomlString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = String(scalar.value, radix: 16, uppercase: true)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
