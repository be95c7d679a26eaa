/// How an option takes its value, which decides how every configuration
/// source (command line, TOML file, environment) spells it.
public enum OptionKind: Sendable, Equatable {
    /// `--name`, no value. In a file a boolean; in the environment
    /// 1/true/yes/on or 0/false/no/off. False means "not given".
    case flag
    /// `--name VALUE`, the last one given wins. In a file a string or an
    /// integer.
    case value
    /// `--name VALUE`, repeatable; the values accumulate in order. In a file
    /// an array (or one value). The highest source that has it replaces the
    /// lower ones wholesale.
    case repeatable
}

/// Where an option may come from besides the command line.
public struct OptionSources: OptionSet, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let file = OptionSources(rawValue: 1)
    public static let environment = OptionSources(rawValue: 2)
    public static let everywhere: OptionSources = [.file, .environment]
    /// Command line only: --help, --version, --print-config, and the
    /// hidden options the supervisor gives its workers.
    public static let commandLineOnly: OptionSources = []
}

/// One option: its name without `--`, its kind, where else it may be set,
/// and the default `--print-config` shows (nil: not set by default).
public struct OptionSpec: Sendable {
    public let name: String
    public let kind: OptionKind
    public let sources: OptionSources
    /// Internal options (`--worker`, `--worker-udp`) are not in `usageText`.
    public let hidden: Bool
    public let defaultText: String?

    init(_ name: String, _ kind: OptionKind, _ defaultText: String? = nil,
         sources: OptionSources = .everywhere, hidden: Bool = false) {
        self.name = name
        self.kind = kind
        self.defaultText = defaultText
        self.sources = sources
        self.hidden = hidden
    }

    /// `PEREGRINE_` and the name upper-cased, dashes to underscores:
    /// `max-body` is `PEREGRINE_MAX_BODY`.
    public var environmentName: String {
        "PEREGRINE_" + String(name.uppercased().map { $0 == "-" ? "_" : $0 })
    }
}

/// Every option `CommandLineParser` knows, in `usageText` order. A test
/// (OptionCatalogTests) checks that it names exactly the options of
/// `usageText` plus the hidden ones: an option added to the parser and the
/// help but not here fails it.
public enum OptionCatalog {
    public static let options: [OptionSpec] = [
        OptionSpec("config", .value, sources: .environment),
        OptionSpec("env-file", .value),
        OptionSpec("app-dir", .value),
        OptionSpec("print-config", .flag, sources: .commandLineOnly),
        OptionSpec("host", .value, "127.0.0.1"),
        OptionSpec("port", .value, "8000"),
        OptionSpec("unix", .value),
        OptionSpec("unix-mode", .value),
        OptionSpec("fd", .repeatable),
        OptionSpec("backlog", .value, "2048"),
        OptionSpec("protocol", .value, "auto"),
        OptionSpec("factory", .flag),
        OptionSpec("root-path", .value, ""),
        OptionSpec("max-connections", .value, "4096"),
        OptionSpec("max-body", .value, "16m"),
        OptionSpec("max-header-size", .value, "32k"),
        OptionSpec("keep-alive", .value, "5000"),
        OptionSpec("request-timeout", .value, "30000"),
        OptionSpec("min-body-rate", .value, "500"),
        OptionSpec("python-path", .repeatable),
        OptionSpec("log-level", .value, "info"),
        OptionSpec("access-log", .flag),
        OptionSpec("access-log-format", .value, "text"),
        OptionSpec("access-log-file", .value),
        OptionSpec("request-id-header", .value),
        OptionSpec("log-format", .value, "text"),
        OptionSpec("workers", .value, "1"),
        OptionSpec("free-threaded", .flag),
        OptionSpec("wsgi-threads", .value, "1"),
        OptionSpec("worker-timeout", .value, "30000"),
        OptionSpec("graceful-timeout", .value, "10000"),
        OptionSpec("max-requests", .value, "0"),
        OptionSpec("max-requests-jitter", .value, "0"),
        OptionSpec("reload", .flag),
        OptionSpec("reload-dir", .repeatable),
        OptionSpec("reload-include", .repeatable),
        OptionSpec("no-http2", .flag),
        OptionSpec("http2-only", .flag),
        OptionSpec("http2-max-streams", .value, "100"),
        OptionSpec("no-websockets", .flag),
        OptionSpec("no-webtransport", .flag),
        OptionSpec("ws-max-message", .value, "16m"),
        OptionSpec("ws-max-queue", .value, "32"),
        OptionSpec("ws-max-queue-bytes", .value, "4m"),
        OptionSpec("ws-ping-interval", .value, "20000"),
        OptionSpec("ws-ping-timeout", .value, "20000"),
        OptionSpec("ws-compress", .flag),
        OptionSpec("tls-cert", .repeatable),
        OptionSpec("tls-key", .repeatable),
        OptionSpec("tls-ciphers", .value),
        OptionSpec("tls-ca", .value),
        OptionSpec("tls-client-cert", .value),
        OptionSpec("tls-handshake-timeout", .value, "10000"),
        OptionSpec("tls-key-password-file", .value),
        OptionSpec("tls-key-password", .value),
        OptionSpec("tls-min-version", .value, "1.2"),
        OptionSpec("tls-ocsp", .repeatable),
        OptionSpec("http3", .flag),
        OptionSpec("quic-port", .value),
        OptionSpec("http3-max-streams", .value, "100"),
        OptionSpec("quic-idle-timeout", .value, "30000"),
        OptionSpec("quic-stream-window", .value, "1m"),
        OptionSpec("quic-connection-window", .value, "4m"),
        OptionSpec("quic-congestion", .value, "cubic"),
        OptionSpec("quic-key-update-interval", .value, "1048576"),
        OptionSpec("quic-log", .value),
        OptionSpec("quic-retry", .flag),
        OptionSpec("quic-retry-threshold", .value, "100"),
        OptionSpec("quic-max-datagram-size", .value, "1452"),
        OptionSpec("quic-no-migration", .flag),
        OptionSpec("forwarded-allow-ips", .value),
        OptionSpec("scheme", .value),
        OptionSpec("proxy-protocol", .flag),
        OptionSpec("proxy-allow-ips", .value, "127.0.0.1,::1,unix"),
        OptionSpec("health-path", .value),
        OptionSpec("drain-delay", .value, "0"),
        OptionSpec("limit-concurrency", .value),
        OptionSpec("max-connection-age", .value, "0"),
        OptionSpec("header", .repeatable),
        OptionSpec("server-header", .value),
        OptionSpec("no-date-header", .flag),
        OptionSpec("metrics-port", .value),
        OptionSpec("metrics-host", .value),
        OptionSpec("no-lifespan", .flag),
        OptionSpec("lifespan-scope", .value, "worker"),
        OptionSpec("no-uvloop", .flag),
        OptionSpec("version", .flag, sources: .commandLineOnly),
        OptionSpec("help", .flag, sources: .commandLineOnly),
        OptionSpec("worker", .value, sources: .commandLineOnly, hidden: true),
        OptionSpec("worker-udp", .value, sources: .commandLineOnly, hidden: true),
        OptionSpec("worker-metrics", .value, sources: .commandLineOnly, hidden: true),
    ]

    private static let byName: [String: Int] = {
        var map: [String: Int] = [:]
        for (i, o) in options.enumerated() { map[o.name] = i }
        return map
    }()

    /// The option named `name` (without `--`), if any.
    public static func spec(named name: String) -> OptionSpec? { byName[name].map { options[$0] } }

    /// The settable option closest to `name` (a small edit distance), for
    /// "did you mean" in an error.
    public static func suggestion(for name: String, allowing sources: OptionSources) -> String? {
        var best: (name: String, distance: Int)?
        // Short names are near everything: one edit for them, two from six letters on.
        let allowed = name.count >= 6 ? 2 : (name.count >= 3 ? 1 : 0)
        for o in options where !o.hidden && o.sources.isSuperset(of: sources) {
            let d = editDistance(Array(name.utf8), Array(o.name.utf8))
            if d <= allowed && d < (best?.distance ?? .max) { best = (o.name, d) }
        }
        return best?.name
    }

    /// Levenshtein distance (small inputs: option names).
    static func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        if a.isEmpty { return b.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in stride(from: 1, through: b.count, by: 1) {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
