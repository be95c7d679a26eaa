import CSys

/// Server log levels, in increasing severity; `silent` logs nothing.
public enum LogLevel: Int, Comparable, Sendable {
    case debug = 10, info = 20, warning = 30, error = 40, silent = 100

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }

    public init?(name: String) {
        switch name.lowercased() {
        case "debug": self = .debug
        case "info": self = .info
        case "warning", "warn": self = .warning
        case "error": self = .error
        case "silent", "critical", "none": self = .silent
        default: return nil
        }
    }

    var label: String {
        switch self {
        case .debug: "DEBUG"
        case .info: "INFO"
        case .warning: "WARNING"
        case .error: "ERROR"
        case .silent: ""
        }
    }
}

/// `--log-format`: how the server's own log lines look.
public enum LogFormat: String, Sendable {
    /// `[2026-11-30 14:00:00 +0000] [pid] [LEVEL] message`
    case text
    /// `{"time": "2026-11-30 14:00:00 +0000", "level": "INFO", "pid": 12,
    /// "message": "..."}`, one object per line (for log shippers).
    case json
}

/// The operator's log, on standard error, one line per event:
/// `[2026-11-30 14:00:00 +0000] [pid] [LEVEL] message`, or a JSON object
/// (`LogFormat.json`).
/// Logging is off the request path except for errors and the access log,
/// which has its own writer.
public enum Log {
    nonisolated(unsafe) public static var level: LogLevel = .info
    /// Set once at start-up, before any thread but the main one runs.
    nonisolated(unsafe) public static var format: LogFormat = .text

    @inlinable public static func enabled(_ l: LogLevel) -> Bool { l >= level && level != .silent }

    public static func debug(_ message: @autoclosure () -> String) { write(.debug, message) }
    public static func info(_ message: @autoclosure () -> String) { write(.info, message) }
    public static func warning(_ message: @autoclosure () -> String) { write(.warning, message) }
    public static func error(_ message: @autoclosure () -> String) { write(.error, message) }

    public static func write(_ l: LogLevel, _ message: () -> String) {
        guard enabled(l) else { return }
        switch format {
        case .text:
            var line = "[\(timestamp())] [\(csys_getpid())] [\(l.label)] "
            line += message()
            if line.last != "\n" { line += "\n" }
            writeAll(2, line)
        case .json:
            writeAll(2, jsonLine(level: l, message: message()))
        }
    }

    /// One JSON object: `time`, `level`, `pid`, `message` (a trailing
    /// newline of the message dropped: the object is the line).
    static func jsonLine(level l: LogLevel, message: String) -> String {
        var m = Substring(message)
        while m.last == "\n" { m = m.dropLast() }
        var out: [UInt8] = []
        out.reserveCapacity(m.utf8.count + 80)
        out.append("{\"time\": ")
        out.appendJSONString(timestamp())
        out.append(", \"level\": \"")
        out.append(contentsOf: l.label.utf8)
        out.append("\", \"pid\": ")
        out.appendDecimal(Int64(csys_getpid()))
        out.append(", \"message\": ")
        out.appendJSONString(String(m))
        out.append("}\n")
        return String(decoding: out, as: UTF8.self)
    }

    /// Writes a whole string to a descriptor, retrying partial writes.
    public static func writeAll(_ fd: Int32, _ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            var offset = 0
            while offset < utf8.count {
                let n = csys_write_plain(fd, utf8.baseAddress! + offset, utf8.count - offset)
                if n <= 0 {
                    if n < 0 && csys_eintr(csys_errno()) != 0 { continue }
                    return
                }
                offset += n
            }
        }
    }

    public static func timestamp() -> String {
        var buf = [CChar](repeating: 0, count: 40)
        csys_log_time(&buf, 40)
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
