import CSys

/// The file pages a process touched while it started, given back once it
/// is serving (ARCHITECTURE.md, "Memory after start-up").
///
/// A first touch of a mapped file maps the 64 KiB around it (fault-around),
/// and start-up (option parsing, the Swift runtime's type lookups,
/// initialising CPython and importing the application, OpenSSL's set-up)
/// touches code all over the executable and its libraries: in a pip build
/// the supervisor has 4.1 MiB of file pages resident and needs 1.3 again,
/// an ASGI worker 16.5 and needs about 9 once it has served requests.
/// Dropping them costs the first requests a few dozen minor faults for the
/// code they do use; it is done once per process, never on the request
/// path.
public enum StartupPages {
    /// Drops the resident pages of the process's clean, read-only file
    /// mappings (see `csys_release_clean_file_pages`); returns the KiB they
    /// had resident, or nil when /proc/self/smaps cannot be read.
    @discardableResult
    public static func release() -> Int? {
        let kib = csys_release_clean_file_pages()
        guard kib >= 0 else { return nil }
        Log.debug("released \(kib) KiB of start-up file pages")
        return kib
    }
}
