import CSys
import Core

/// A bound, listening socket and what the application is told about it.
public struct Listener {
    public let fd: Int32
    public let isUnix: Bool
    public let host: String
    public let port: Int
    public let unixPath: String?
    /// Connections are TLS (the URL says https).
    public var secure = false
    /// Inherited from the parent (--fd, systemd): never shut down, only
    /// closed, so the parent's copy keeps its queue.
    public var inherited = false
    /// systemd's name for it (LISTEN_FDNAMES), for the log.
    public var name: String?

    /// Binds per the configuration, or fails with one line for the operator.
    public static func bind(_ config: Config) throws(StartupFailure) -> Listener {
        var err = [CChar](repeating: 0, count: 256)
        if let path = config.unixPath {
            let fd = csys_listen_unix(path, Int32(config.backlog), &err, 256)
            guard fd >= 0 else { throw StartupFailure("cannot listen on unix socket \(path): \(text(err))") }
            if let mode = config.unixMode, csys_chmod(path, Int32(mode)) != 0 {
                let error = SystemError(call: "chmod", errno: csys_errno())
                _ = csys_close(fd)
                throw StartupFailure("--unix-mode \(String(mode, radix: 8)): cannot change \(path): \(error)")
            }
            return Listener(fd: fd, isUnix: true, host: path, port: 0, unixPath: path)
        }
        let fd = csys_listen_tcp(config.host, Int32(config.port), Int32(config.backlog), &err, 256)
        guard fd >= 0 else {
            throw StartupFailure("cannot listen on \(config.host):\(config.port): \(text(err).replacingFirst("cannot listen: ", with: ""))")
        }
        return Listener(fd: fd, isUnix: false, host: config.host, port: Int(csys_local_port(fd)), unixPath: nil)
    }

    /// A socket the parent left listening on `fd`, checked (an open,
    /// listening stream socket of TCP or unix), made non-blocking and
    /// close-on-exec. `origin` names where the number came from, for the
    /// error line ("--fd 3", "systemd socket 3").
    public static func adopt(fd: Int32, origin: String) throws(StartupFailure) -> Listener {
        var isUnix: Int32 = 0
        var problem: Int32 = 0
        guard csys_inherited_listener(fd, &isUnix, &problem) == 0 else {
            switch problem {
            case 2: throw StartupFailure("\(origin) is not a stream socket")
            case 3: throw StartupFailure("\(origin) is not listening (the parent must bind and listen)")
            case 4: throw StartupFailure("\(origin) is neither a TCP nor a unix socket")
            default: throw StartupFailure("\(origin) is not an open socket")
            }
        }
        guard csys_adopt_listener(fd) == 0 else {
            throw StartupFailure("\(origin): \(SystemError(call: "fcntl", errno: csys_errno()))")
        }
        var listener = describe(fd: fd, isUnix: isUnix != 0, fallbackHost: "")
        listener.inherited = true
        return listener
    }

    /// A worker's view of the sockets its supervisor bound or inherited:
    /// the first (`inheritedListener`) and the others.
    public static func inherited(_ config: Config) -> [Listener] {
        ([config.inheritedListener] + config.moreListeners).map { fd in
            var isUnix: Int32 = 0
            var problem: Int32 = 0
            let unix = csys_inherited_listener(fd, &isUnix, &problem) == 0 ? isUnix != 0 : config.unixPath != nil
            return describe(fd: fd, isUnix: unix, fallbackHost: config.host)
        }
    }

    /// What the socket itself says it is bound to.
    private static func describe(fd: Int32, isUnix: Bool, fallbackHost: String) -> Listener {
        var buf = [CChar](repeating: 0, count: 128)
        if isUnix {
            let path = csys_unix_socket_path(fd, &buf, 128) == 0 ? text(buf) : ""
            return Listener(fd: fd, isUnix: true, host: path, port: 0, unixPath: path)
        }
        var port: Int32 = 0
        let host = csys_local_address(fd, &buf, 128, &port) == 0 ? text(buf) : fallbackHost
        return Listener(fd: fd, isUnix: false, host: host, port: Int(csys_local_port(fd)), unixPath: nil)
    }

    public var displayURL: String {
        if let unixPath { return "unix:\(unixPath)" }
        let h = host.contains(":") ? "[\(host)]" : host
        return "\(secure ? "https" : "http")://\(h):\(port)"
    }

    private static func text(_ buf: [CChar]) -> String {
        String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A problem that stops the server before it serves: one line, exit 2.
public struct StartupFailure: Error {
    public let message: String
    public let detail: String?
    public init(_ message: String, detail: String? = nil) {
        self.message = message
        self.detail = detail
    }
}

extension String {
    func replacingFirst(_ target: String, with replacement: String) -> String {
        guard let r = range(of: target) else { return self }
        return String(self[..<r.lowerBound]) + replacement + String(self[r.upperBound...])
    }

    func range(of target: String) -> Range<String.Index>? {
        guard !target.isEmpty else { return nil }
        var i = startIndex
        while i < endIndex {
            if self[i...].hasPrefix(target) {
                return i..<index(i, offsetBy: target.count)
            }
            i = index(after: i)
        }
        return nil
    }
}
