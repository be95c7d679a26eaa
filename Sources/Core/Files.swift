import CSys

/// File facts the gateways need without importing the C shim themselves.
public enum Files {
    /// The size of a regular file, or -1 for anything else (pipes, sockets).
    public static func regularFileSize(_ fd: Int32) -> Int64 { csys_regular_file_size(fd) }
}

extension Files {
    /// open(2) read-only; -1 on failure.
    public static func openForReading(_ path: String) -> Int32 { csys_open_read(path) }
    public static func close(_ fd: Int32) { _ = csys_close(fd) }
}
