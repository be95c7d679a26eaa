/// Each configuration source read into (option, value, origin) entries:
/// the command line, the TOML file, the environment.
extension ConfigSources {
    // MARK: - Command line

    struct ScannedCommandLine {
        var entries: [ConfigEntry] = []
        var app: String?
        var asksForHelpOrVersion = false
    }

    /// The command line as entries: flags true, a value option's last
    /// value, a repeatable option's values in order. Unknown options and
    /// missing values are the parser's own errors.
    static func scanCommandLine(_ arguments: [String]) throws(UsageError) -> ScannedCommandLine {
        var scanned = ScannedCommandLine()
        var values: [String: [String]] = [:]
        var order: [String] = []
        var positional: [String] = []
        var i = 0
        while i < arguments.count {
            let arg = arguments[i]
            i += 1
            if arg == "--" {
                positional += arguments[i...]
                break
            }
            guard arg.hasPrefix("--") else {
                if arg.hasPrefix("-") && arg.count > 1 { throw UsageError(message: "unknown option '\(arg)' (see --help)") }
                positional.append(arg)
                continue
            }
            var name = String(arg.dropFirst(2))
            var inline: String?
            if let eq = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            guard let spec = OptionCatalog.spec(named: name) else {
                throw UsageError(message: "unknown option '--\(name)' (see --help)")
            }
            if name == "help" || name == "version" { scanned.asksForHelpOrVersion = true }
            if values[name] == nil { order.append(name) }
            switch spec.kind {
            case .flag:
                if inline != nil { throw UsageError(message: "option --\(name) takes no value") }
                values[name] = []
            case .value, .repeatable:
                let v: String
                if let inline {
                    v = inline
                } else {
                    guard i < arguments.count else { throw UsageError(message: "option --\(name) needs a value") }
                    v = arguments[i]
                    i += 1
                }
                values[name] = spec.kind == .value ? [v] : (values[name] ?? []) + [v]
            }
        }
        for name in order {
            let spec = OptionCatalog.spec(named: name)!
            let setting: OptionSetting = spec.kind == .flag ? .flag(true) : .values(values[name] ?? [])
            scanned.entries.append(ConfigEntry(option: name, setting: setting, origin: .commandLine))
        }
        if positional.count > 1 {
            throw UsageError(message: "expected one MODULE:ATTR, got \(positional.count): \(positional.joined(separator: " "))")
        }
        scanned.app = positional.first
        return scanned
    }

    // MARK: - TOML file

    /// The file's keys as entries. Keys are option names without `--`
    /// (underscores accepted for dashes) or `app`; types are checked
    /// against the option's kind.
    static func entries(fromFile bytes: [UInt8], path: String) throws(UsageError) -> [ConfigEntry] {
        let document: [TOMLEntry]
        do {
            document = try TOMLReader.read(bytes)
        } catch {
            throw UsageError(message: "\(path):\(error.line): \(error.message)")
        }
        var result: [ConfigEntry] = []
        var seen: [String: String] = [:]
        for item in document {
            let name = String(item.key.map { $0 == "_" ? "-" : $0 })
            let origin = ConfigOrigin.file(path: path, line: item.line, key: item.key)
            func fail(_ why: String) -> UsageError { UsageError(message: "\(path):\(item.line): \(why)") }
            if let earlier = seen[name] { throw fail("'\(item.key)' and '\(earlier)' set the same option") }
            seen[name] = item.key
            if name == appKey {
                guard case .string(let s) = item.value else { throw fail("'app' takes a string (MODULE:ATTR)") }
                result.append(ConfigEntry(option: appKey, setting: .values([s]), origin: origin))
                continue
            }
            guard let spec = OptionCatalog.spec(named: name), !spec.hidden else {
                let hint = OptionCatalog.suggestion(for: name, allowing: .file).map { " (did you mean '\($0)'?)" } ?? ""
                throw fail("unknown key '\(item.key)'\(hint)")
            }
            guard spec.sources.contains(.file) else { throw fail("--\(name) cannot be set in a configuration file") }
            result.append(ConfigEntry(option: name, setting: try setting(spec, item.value, fail), origin: origin))
        }
        return result
    }

    static func setting(_ spec: OptionSpec, _ value: TOMLValue,
                                _ fail: (String) -> UsageError) throws(UsageError) -> OptionSetting {
        func scalar(_ v: TOMLValue) -> String? {
            switch v {
            case .string(let s): s
            case .integer(let n): String(n)
            default: nil
            }
        }
        switch spec.kind {
        case .flag:
            guard case .boolean(let on) = value else { throw fail("'\(spec.name)' is a flag: it takes true or false") }
            return .flag(on)
        case .value:
            guard let s = scalar(value) else { throw fail("'\(spec.name)' takes a string or an integer") }
            return .values([s])
        case .repeatable:
            if case .array(let items) = value {
                var out: [String] = []
                for item in items {
                    guard let s = scalar(item) else { throw fail("'\(spec.name)' takes an array of strings or integers") }
                    out.append(s)
                }
                return .values(out)
            }
            guard let s = scalar(value) else { throw fail("'\(spec.name)' takes an array of strings or integers") }
            return .values([s])
        }
    }

    // MARK: - Environment

    /// `PEREGRINE_<OPTION>` for every option that may come from the
    /// environment, and `PEREGRINE_APP`. An empty variable counts as unset
    /// (as click, hence uvicorn, treats it): `-e PEREGRINE_PORT=` in a
    /// container changes nothing.
    static func environmentEntries(_ environment: (String) -> String?) throws(UsageError) -> [ConfigEntry] {
        var result: [ConfigEntry] = []
        if let app = environment("PEREGRINE_APP"), !app.isEmpty {
            result.append(ConfigEntry(option: appKey, setting: .values([app]), origin: .environment("PEREGRINE_APP")))
        }
        for spec in OptionCatalog.options where spec.sources.contains(.environment) {
            let variable = spec.environmentName
            guard let text = environment(variable), !text.isEmpty else { continue }
            result.append(ConfigEntry(option: spec.name, setting: try environmentSetting(spec, text, variable),
                                      origin: .environment(variable)))
        }
        return result
    }

    /// Flags: 1/true/yes/on or 0/false/no/off. Repeatable options: one
    /// value, or several as a TOML array (`["a.pem", "b,c.pem"]`): paths
    /// and header values may contain commas and colons, so no separator
    /// character would do.
    static func environmentSetting(_ spec: OptionSpec, _ text: String,
                                   _ variable: String) throws(UsageError) -> OptionSetting {
        switch spec.kind {
        case .flag:
            switch text.lowercased() {
            case "1", "true", "yes", "on": return .flag(true)
            case "0", "false", "no", "off": return .flag(false)
            default:
                throw UsageError(message: "environment variable \(variable) must be 1, true, yes, on, 0, false, no or off, got '\(text)'")
            }
        case .value:
            return .values([text])
        case .repeatable:
            guard text.hasPrefix("[") else { return .values([text]) }
            let value: TOMLValue
            do {
                value = try TOMLReader.readValue(text)
            } catch {
                throw UsageError(message: "environment variable \(variable): \(error.message) (a list is a TOML array: [\"a\", \"b\"])")
            }
            return try setting(spec, value) { UsageError(message: "environment variable \(variable): \($0)") }
        }
    }

    /// The variables other servers read, below the file: WEB_CONCURRENCY
    /// (gunicorn, uvicorn; Heroku and others set it) for --workers, and
    /// FORWARDED_ALLOW_IPS (uvicorn) for --forwarded-allow-ips.
    static func legacyEnvironmentEntries(_ environment: (String) -> String?) throws(UsageError) -> [ConfigEntry] {
        var result: [ConfigEntry] = []
        for (variable, option) in [("WEB_CONCURRENCY", "workers"), ("FORWARDED_ALLOW_IPS", "forwarded-allow-ips")] {
            guard let text = environment(variable), !text.isEmpty else { continue }
            result.append(ConfigEntry(option: option, setting: .values([text]), origin: .environment(variable)))
        }
        return result
    }
}
