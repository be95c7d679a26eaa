import CSys
import Core

/// systemd socket activation (sd_listen_fds(3), "File descriptor passing"):
/// a service started for its `.socket` unit finds the sockets open as
/// descriptors 3, 4, ... and three variables: `LISTEN_PID` (the process
/// they are meant for: a child that inherited the environment must not
/// take them), `LISTEN_FDS` (how many) and, optionally, `LISTEN_FDNAMES`
/// (their `FileDescriptorName=`, colon-separated).
///
/// As sd_listen_fds(unset_environment: 1) does, the variables are removed
/// whether or not they name this process, so neither the workers nor the
/// application (nor anything it starts) sees them.
public struct SocketActivation: Equatable, Sendable {
    /// SD_LISTEN_FDS_START.
    public static let firstDescriptor: Int32 = 3
    /// More is a misconfiguration, not a real unit: refused.
    public static let maxSockets = 64

    public struct Socket: Equatable, Sendable {
        public var fd: Int32
        /// Its name from LISTEN_FDNAMES (nil when not given or empty).
        public var name: String?
    }

    public var sockets: [Socket]

    /// The sockets the variables pass to the process `pid`; nil when they
    /// do not name it (no LISTEN_PID, another process, no LISTEN_FDS).
    /// A malformed value is an error for the operator.
    public static func parse(pid: Int32, listenPID: String?, listenFDs: String?,
                             names: String?) throws(StartupFailure) -> SocketActivation? {
        guard let listenPID, let listenFDs else { return nil }
        guard digits(listenPID), let owner = Int32(listenPID), owner > 0 else {
            throw StartupFailure("systemd socket activation: LISTEN_PID is not a process id: '\(listenPID)'")
        }
        guard owner == pid else { return nil }
        guard digits(listenFDs), let count = Int(listenFDs), (0...maxSockets).contains(count) else {
            throw StartupFailure("systemd socket activation: LISTEN_FDS must be 0-\(maxSockets), got '\(listenFDs)'")
        }
        guard count > 0 else { return nil }
        let given = names.map { $0.split(separator: ":", omittingEmptySubsequences: false).map(String.init) } ?? []
        let sockets = (0..<count).map { i in
            Socket(fd: firstDescriptor + Int32(i), name: i < given.count && !given[i].isEmpty ? given[i] : nil)
        }
        return SocketActivation(sockets: sockets)
    }

    /// Decimal digits only: no sign, space or base prefix.
    private static func digits(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    /// This process's activation, read from and removed from its environment.
    public static func takeFromEnvironment() throws(StartupFailure) -> SocketActivation? {
        let pid = getenvText("LISTEN_PID"), fds = getenvText("LISTEN_FDS"), names = getenvText("LISTEN_FDNAMES")
        for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { _ = csys_unsetenv(name) }
        return try parse(pid: csys_getpid(), listenPID: pid, listenFDs: fds, names: names)
    }
}
