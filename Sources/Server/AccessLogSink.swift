import CSys
import Core

/// Where a worker's access-log lines go: standard output, or the
/// `--access-log-file` it opened for appending.
///
/// Every worker (thread) opens the file itself with O_APPEND: each line is
/// one write(2), and appends of one write never interleave, so the lines of
/// all workers stay whole. Reopening (logrotate renamed the file): the
/// supervisor relays SIGUSR1 as the reopen signal, whose handler counts
/// (csys_reopen_generation). The worker's loop checks the count each time
/// it wakes (at the latest at its next heartbeat, within a second), and
/// every line checks it before it is written: either way PATH is opened
/// again — a new file if the old
/// one was moved away — and the old descriptor closed, so no line written
/// after the signal reached the worker goes to the old file.
final class AccessLogSink {
    private let path: String?
    private(set) var fd: Int32
    private var generation: UInt32

    /// `path` nil: standard output. Throws when the file cannot be opened
    /// (the supervisor checked it at start-up; this is a later change).
    init(path: String?) throws(SystemError) {
        self.path = path
        generation = csys_reopen_generation()
        guard let path else { fd = 1; return }
        fd = csys_open_append(path)
        if fd < 0 { throw SystemError(call: "open \(path)", errno: csys_errno()) }
    }

    deinit {
        if path != nil && fd >= 0 { _ = csys_close(fd) }
    }

    /// Writes one whole line (retrying partial writes and EINTR).
    /// Reopens the file if a reopen signal came since it was opened.
    @inline(__always)
    func reopenIfAsked() {
        if let path, csys_reopen_generation() != generation { reopen(path) }
    }

    func write(_ line: [UInt8]) {
        reopenIfAsked()
        line.withUnsafeBytes { b in
            var offset = 0
            while offset < b.count {
                let n = csys_write_plain(fd, b.baseAddress! + offset, b.count - offset)
                if n <= 0 {
                    if n < 0 && csys_eintr(csys_errno()) != 0 { continue }
                    return
                }
                offset += n
            }
        }
    }

    private func reopen(_ path: String) {
        generation = csys_reopen_generation()
        let new = csys_open_append(path)
        guard new >= 0 else {
            // Keep writing to the old file rather than lose lines.
            Log.error("cannot reopen --access-log-file \(path): \(String(cString: csys_strerror(csys_errno())))")
            return
        }
        _ = csys_close(fd)
        fd = new
    }
}
