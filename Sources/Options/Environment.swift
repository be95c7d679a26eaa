import CSys

public func getenvText(_ name: String) -> String? {
    guard let p = csys_getenv(name) else { return nil }
    return String(cString: p)
}

public func fileExists(_ path: String) -> Bool { csys_file_exists(path) != 0 }

#if canImport(Glibc)
import Glibc
#endif

/// Whether `path` names a directory this process can open.
public func isDirectory(_ path: String) -> Bool {
    guard let d = opendir(path) else { return false }
    closedir(d)
    return true
}

/// `--app-dir` in a worker: change to `dir` and return it as an absolute
/// path (for sys.path, which must not depend on the directory again), or
/// nil with errno set.
public func enterAppDirectory(_ dir: String) -> String? {
    var absolute = dir
    if !dir.hasPrefix("/") {
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buffer, buffer.count) != nil else { return nil }
        let cwd = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        absolute = (cwd == "/" ? "" : cwd) + "/" + dir
    }
    guard chdir(absolute) == 0 else { return nil }
    return absolute
}
