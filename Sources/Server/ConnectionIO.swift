import CSys
import Core
import TLS

/// The byte stream under a connection: the socket itself, or TLS over it.
/// Every read, write, file send and shutdown of a connection goes through
/// here, so the protocols above (HTTP/1.1, WebSocket, HTTP/2) never ask
/// which it is.
///
/// TLS differs in two ways the callers must respect. OpenSSL may hold
/// decrypted bytes the socket will never report readable again, so `read`
/// drains until the buffer is full or nothing is left, and a connection
/// that resumes reading later checks `hasBufferedInput` before waiting for
/// the poller (see H1Connection.deferReadIfBuffered). And bytes a write did
/// not take must be offered again, first, on the next write (OpenSSL's
/// retry rule): the pending-output queue does that naturally.
struct ConnectionIO {
    let fd: Int32
    let tls: TLSSession?
    /// Counts the bytes read and written (after TLS decryption).
    let metrics: WorkerMetrics

    enum ReadResult { case data(Int), again, eof, error }

    /// One non-blocking read (with TLS: as many records as fit).
    func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        let result = readUncounted(into: buffer)
        if case .data(let n) = result { metrics.received(.tcp, bytes: n) }
        return result
    }

    private func readUncounted(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        if let tls {
            switch tls.read(into: buffer) {
            case .bytes(let n): return .data(n)
            // A read that must write first (a TLS 1.3 key update while the
            // socket is full) is retried at the next readiness too.
            case .wantRead, .wantWrite: return .again
            case .closed: return .eof
            case .failed, .fileEnded: return .error
            }
        }
        while true {
            let n = csys_read(fd, buffer.baseAddress, buffer.count)
            if n > 0 { return .data(n) }
            if n == 0 { return .eof }
            let e = csys_errno()
            if csys_eintr(e) != 0 { continue }
            return csys_eagain(e) != 0 ? .again : .error
        }
    }

    /// Writes as much of `a` then `b` as the connection takes now: the
    /// bytes written, and whether the connection failed.
    func writeSome(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> (Int, Bool) {
        let (n, failed) = writeSomeUncounted(a, b)
        metrics.sent(.tcp, bytes: n)
        return (n, failed)
    }

    private func writeSomeUncounted(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> (Int, Bool) {
        guard let tls else { return SocketWriter.writeSome(fd: fd, a, b) }
        if a.isEmpty && b.isEmpty { return (0, false) }
        switch tls.write(a, b) {
        case .bytes(let n): return (n, false)
        case .wantRead, .wantWrite: return (0, false)
        case .closed, .failed, .fileEnded: return (0, true)
        }
    }

    enum FileResult { case sent(Int), again, failed }

    /// Sends up to `count` bytes of `file` from `offset` (advanced by what
    /// was sent): sendfile(2) on a plain socket; with TLS, pread into a
    /// record-sized buffer that OpenSSL encrypts (kTLS is not used).
    func sendFile(_ file: Int32, offset: inout Int64, count: Int) -> FileResult {
        let result = sendFileUncounted(file, offset: &offset, count: count)
        if case .sent(let n) = result { metrics.sent(.tcp, bytes: n) }
        return result
    }

    private func sendFileUncounted(_ file: Int32, offset: inout Int64, count: Int) -> FileResult {
        if let tls {
            switch tls.sendFile(fd: file, offset: &offset, count: count) {
            case .bytes(let n): return .sent(n)
            case .wantRead, .wantWrite: return .again
            case .closed, .failed, .fileEnded: return .failed
            }
        }
        while true {
            let n = csys_sendfile(fd, file, &offset, count)
            if n > 0 { return .sent(n) }
            if n < 0 {
                let e = csys_errno()
                if csys_eintr(e) != 0 { continue }
                if csys_eagain(e) != 0 { return .again }
            }
            return .failed  // the file shrank (0) or the socket failed
        }
    }

    /// Decrypted input OpenSSL holds that the poller will not report.
    var hasBufferedInput: Bool { (tls?.pendingBytes ?? 0) > 0 }

    /// Ends our direction: close_notify first with TLS, then FIN.
    func shutdownWrite() {
        tls?.shutdown()
        _ = csys_shutdown_write(fd)
    }
}
