// `--quic-log DIR`: a qlog trace per QUIC connection (QUIC/QLog), each in its
// own file `DIR/<original destination connection ID>-<worker pid>.sqlog`,
// records appended as they happen (one write each: this is for debugging,
// and a trace cut short by a crash still holds everything before it).

import CSys
import Core
import QUIC

/// One connection's trace file.
final class QLogFile: QLogOutput {
    private var fd: Int32

    init?(path: String) {
        fd = csys_open_append(path)
        if fd < 0 { return nil }
    }

    deinit { close() }

    func write(_ record: UnsafeRawBufferPointer) {
        guard fd >= 0, let base = record.baseAddress else { return }
        var offset = 0
        while offset < record.count {
            let n = csys_write_plain(fd, base + offset, record.count - offset)
            if n < 0 && csys_eintr(csys_errno()) != 0 { continue }
            guard n > 0 else {
                close()  // a full disk or the like: the trace stops, the connection goes on
                return
            }
            offset += n
        }
    }

    func close() {
        guard fd >= 0 else { return }
        _ = csys_close(fd)
        fd = -1
    }
}

enum QLogFiles {
    /// The endpoint's trace factory for `directory`. A file that cannot be
    /// made is reported once per worker; its connection runs untraced.
    static func factory(directory: String) -> (ConnectionID, Instant) -> QLogTrace? {
        let pid = csys_getpid()
        var reported = false
        return { originalDestinationID, now in
            let path = directory + "/" + originalDestinationID.description + "-" + String(pid) + ".sqlog"
            guard let file = QLogFile(path: path) else {
                if !reported {
                    reported = true
                    Log.error("--quic-log: cannot create \(path): \(String(cString: csys_strerror(csys_errno())))")
                }
                return nil
            }
            return QLogTrace(output: file, originalDestinationID: originalDestinationID, now: now)
        }
    }
}
