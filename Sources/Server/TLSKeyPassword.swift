import CSys
import Core
import Options

/// The password of encrypted TLS keys, from `--tls-key-password` or from
/// the first line of `--tls-key-password-file`. Each worker (and the check
/// the supervisor runs before binding and on SIGHUP) reads the file as it
/// starts, so replacing the file and sending SIGHUP changes the password
/// along with the keys.
enum TLSKeyPassword {
    /// A password file is read up to this many bytes: one line of a
    /// password, not a whole file of something else.
    static let fileLimit = 4096

    /// The password bytes, or nil when none was given.
    static func resolve(_ config: Config) throws(StartupFailure) -> [UInt8]? {
        if let text = config.tlsKeyPassword { return Array(text.utf8) }
        guard let path = config.tlsKeyPasswordFile else { return nil }
        let fd = csys_open_read(path)
        guard fd >= 0 else {
            throw StartupFailure("cannot read --tls-key-password-file \(path): \(String(cString: csys_strerror(csys_errno())))")
        }
        defer { _ = csys_close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while bytes.count <= fileLimit {
            let n = chunk.withUnsafeMutableBytes { csys_read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                throw StartupFailure("cannot read --tls-key-password-file \(path): \(String(cString: csys_strerror(csys_errno())))")
            }
            if n == 0 { break }
            bytes += chunk.prefix(n)
        }
        return try firstLine(of: bytes, path: path)
    }

    /// The first line, without its line ending (LF or CRLF); it must not
    /// be empty.
    static func firstLine(of bytes: [UInt8], path: String) throws(StartupFailure) -> [UInt8] {
        var line = bytes.prefix { $0 != UInt8(ascii: "\n") }
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        if line.count > fileLimit {
            throw StartupFailure("--tls-key-password-file \(path): the first line is longer than \(fileLimit) bytes")
        }
        if line.isEmpty { throw StartupFailure("--tls-key-password-file \(path): the first line is empty") }
        return Array(line)
    }
}
