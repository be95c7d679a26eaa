/// Where an option's effective value came from, for error messages and
/// `--print-config`.
public enum ConfigOrigin: Sendable, Equatable, CustomStringConvertible {
    case defaultValue
    case file(path: String, line: Int, key: String)
    case environment(String)
    case commandLine

    public var description: String {
        switch self {
        case .defaultValue: "default"
        case .file(let path, let line, let key): "\(path):\(line) (key \(key))"
        case .environment(let name): "environment variable \(name)"
        case .commandLine: "command line"
        }
    }
}

/// Why a configuration or environment file could not be read.
public struct FileReadFailure: Error, Sendable {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
}

/// What one source says about one option.
public enum OptionSetting: Sendable, Equatable {
    /// A flag: true given, false not given (a higher source can turn a
    /// lower one's flag off).
    case flag(Bool)
    /// The value(s) of a value (one) or repeatable (any number) option.
    case values([String])
}

public struct ConfigEntry: Sendable, Equatable {
    public let option: String
    public let setting: OptionSetting
    public let origin: ConfigOrigin
}

/// The configuration from every source, resolved once by the supervisor.
public struct ResolvedConfiguration: Sendable {
    public let config: Config
    /// The winning entry of each option that some source set, in catalog
    /// order (`app` apart).
    public let entries: [ConfigEntry]
    public let app: String
    public let appOrigin: ConfigOrigin
    /// What the workers run with: every effective option as command-line
    /// arguments, then MODULE:ATTR. Neither --config, --env-file nor
    /// --print-config: a worker never reads the file or PEREGRINE_*.
    public let arguments: [String]
    /// `--env-file`'s variables, read at startup, for the application.
    public let environmentFile: [(name: String, value: String)]
    public let printConfig: Bool
    public let configFile: String?
}

/// Layers the configuration sources, lowest to highest:
///
///     defaults < WEB_CONCURRENCY, FORWARDED_ALLOW_IPS < TOML file (--config)
///              < PEREGRINE_<OPTION> < command line
///
/// Each source becomes (option, value, origin) entries; for each option
/// the highest source that has it wins wholesale (a repeatable option's
/// list is not merged across sources). The winners become the argument
/// list `CommandLineParser` parses, so a value is validated by exactly the
/// code that validates it on the command line. A value that fails is
/// reported with its origin (file:line and key, or the variable).
public enum ConfigSources {
    /// `PEREGRINE_APP` / `app` in a file: the MODULE:ATTR when the command
    /// line names none.
    public static let appKey = "app"

    public enum Outcome {
        case resolved(ResolvedConfiguration)
        case printAndExit(String, status: Int32)
    }

    /// Resolves `commandLine` (the arguments after the program name)
    /// against the environment (`environment` looks a variable up) and the
    /// file --config or PEREGRINE_CONFIG names (`readFile` returns its
    /// bytes, or why it cannot be read).
    public static func resolve(commandLine: [String], environment: (String) -> String?,
                               readFile: (String) -> Result<[UInt8], FileReadFailure>) throws(UsageError) -> Outcome {
        let scanned = try scanCommandLine(commandLine)
        if scanned.asksForHelpOrVersion {
            // --help and --version print whatever else is there, as before.
            switch try CommandLineParser.parse(commandLine, environment: environment) {
            case .printAndExit(let text, let status): return .printAndExit(text, status: status)
            case .run: break
            }
        }
        let commandLineEntries = scanned.entries
        let env = try environmentEntries(environment)
        let legacy = try legacyEnvironmentEntries(environment)
        var configPath: (path: String, origin: ConfigOrigin)?
        if let e = commandLineEntries.last(where: { $0.option == "config" }) ?? env.last(where: { $0.option == "config" }),
           case .values(let v) = e.setting, let path = v.last {
            configPath = (path, e.origin)
        }
        var fileEntries: [ConfigEntry] = []
        if let (path, origin) = configPath {
            if path.isEmpty { throw UsageError(message: "--config needs a path (\(origin))") }
            switch readFile(path) {
            case .success(let bytes): fileEntries = try entries(fromFile: bytes, path: path)
            case .failure(let failure): throw UsageError(message: "--config: cannot read \(path): \(failure.reason) (\(origin))")
            }
        }
        // Highest first: the first layer that has an option wins.
        let layers = [commandLineEntries, env, fileEntries, legacy]
        var winners: [ConfigEntry] = []
        for spec in OptionCatalog.options {
            for layer in layers {
                if let e = layer.last(where: { $0.option == spec.name }) {
                    winners.append(e)
                    break
                }
            }
        }
        var app: (String, ConfigOrigin)?
        for layer in layers {
            if let e = layer.last(where: { $0.option == appKey }), case .values(let v) = e.setting, let a = v.last {
                app = (a, e.origin)
                break
            }
        }
        if let a = scanned.app { app = (a, .commandLine) }
        for e in winners where e.origin != .commandLine { try validate(e, environment: environment) }
        var arguments: [String] = []
        for e in winners where !supervisorOnly.contains(e.option) {
            switch e.setting {
            case .flag(let on): if on { arguments.append("--" + e.option) }
            case .values(let values): for v in values { arguments += ["--" + e.option, v] }
            }
        }
        // No `--` before it: the supervisor appends its hidden options for
        // each worker after these arguments.
        if let (a, _) = app { arguments.append(a) }
        let config: Config
        do {
            switch try CommandLineParser.parse(arguments, environment: environment) {
            case .run(let c): config = c
            case .printAndExit(let text, let status): return .printAndExit(text, status: status)
            }
        } catch {
            throw UsageError(message: annotate(error.message, winners: winners, app: app))
        }
        var environmentFile: [(name: String, value: String)] = []
        if let e = winners.first(where: { $0.option == "env-file" }), case .values(let v) = e.setting, let path = v.last {
            switch readFile(path) {
            case .success(let bytes):
                do {
                    environmentFile = try DotEnv.read(bytes, environment: environment)
                } catch {
                    throw UsageError(message: "--env-file \(path):\(error.line): \(error.message)")
                }
            case .failure(let failure):
                throw UsageError(message: "--env-file: cannot read \(path): \(failure.reason) (\(e.origin))")
            }
        }
        let printConfig = winners.contains { $0.option == "print-config" && $0.setting == .flag(true) }
        return .resolved(ResolvedConfiguration(config: config, entries: winners, app: app?.0 ?? "",
                                               appOrigin: app?.1 ?? .defaultValue, arguments: arguments,
                                               environmentFile: environmentFile, printConfig: printConfig,
                                               configFile: configPath?.path))
    }

    /// Options the supervisor acts on and the workers never see.
    static let supervisorOnly: Set<String> = ["config", "env-file", "print-config"]

    // MARK: - Validation

    /// Runs the parser's own check of one entry's value(s): alone, without
    /// an application, a good value gets only as far as the first check
    /// after the option loop ("no application given"); anything else is
    /// this value's fault, reported with where it came from.
    static func validate(_ entry: ConfigEntry, environment: (String) -> String?) throws(UsageError) {
        if entry.origin == .environment("FORWARDED_ALLOW_IPS"), case .values(let v) = entry.setting, let list = v.last {
            // The parser's own message for it, as before there were sources.
            _ = try CommandLineParser.trustedPeers("FORWARDED_ALLOW_IPS", list)
            return
        }
        var arguments: [String] = []
        switch entry.setting {
        case .flag: return
        case .values(let values): for v in values { arguments += ["--" + entry.option, v] }
        }
        do {
            _ = try CommandLineParser.parse(arguments, environment: { _ in nil })
        } catch {
            if error.message == noApplicationMessage { return }
            throw UsageError(message: "\(entry.origin): \(error.message)")
        }
    }

    static let noApplicationMessage: String = {
        do throws(UsageError) {
            _ = try CommandLineParser.parse([], environment: { _ in nil })
            return ""
        } catch {
            return error.message
        }
    }()

    /// A check across options ("--tls-ca needs --tls-cert"): the origin of
    /// each option it names, when that is not the command line.
    static func annotate(_ message: String, winners: [ConfigEntry], app: (String, ConfigOrigin)?) -> String {
        var notes: [String] = []
        for e in winners where e.origin != .commandLine && message.contains("--" + e.option) {
            let after = message.split(separator: "--" + e.option, omittingEmptySubsequences: false).dropFirst()
            // A longer option with this prefix (--tls-ca in --tls-ca-file) is not this one.
            guard after.contains(where: { $0.first.map { !($0.isLetter || $0.isNumber || $0 == "-") } ?? true }) else { continue }
            notes.append("--\(e.option) from \(e.origin)")
        }
        if let (_, origin) = app, origin != .commandLine, message.hasPrefix("application") {
            notes.append("application from \(origin)")
        }
        return notes.isEmpty ? message : message + " (" + notes.joined(separator: "; ") + ")"
    }
}
