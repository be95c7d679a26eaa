import CSys
import Core

/// Watches source trees with inotify for --reload: a write, rename, creation
/// or deletion of a file matching one of the patterns counts as a change.
/// New directories are watched as they appear.
final class Reloader {
    let fd: Int32
    private let roots: [String]
    private let patterns: [String]

    init?(directories: [String], patterns: [String]) {
        let fd = csys_inotify_open()
        guard fd >= 0 else { return nil }
        self.fd = fd
        roots = directories
        self.patterns = patterns
        var watched = 0
        for dir in directories { watched += Int(csys_inotify_watch_tree(fd, dir)) }
        guard watched > 0 else {
            _ = csys_close(fd)
            return nil
        }
    }

    /// Drains pending events; true if any concerned a watched file.
    func changed() -> Bool {
        let max = 256
        var wds = [Int32](repeating: 0, count: max)
        var isDir = [Int32](repeating: 0, count: max)
        var names = [CChar](repeating: 0, count: 64 * 1024)
        var any = false
        while true {
            let n = Int(csys_inotify_read(fd, &wds, &isDir, &names, names.count, Int32(max)))
            if n <= 0 { break }
            var offset = 0
            var newDirectory = false
            for i in 0..<n {
                let name = names.withUnsafeBufferPointer { b in String(cString: b.baseAddress! + offset) }
                offset += name.utf8.count + 1
                if isDir[i] != 0 {
                    // A directory moved or created in the tree may bring
                    // source files whose own events were never seen.
                    newDirectory = true
                    any = true
                    continue
                }
                if patterns.contains(where: { csys_fnmatch($0, name) != 0 }) {
                    Log.debug("changed: \(name)")
                    any = true
                }
            }
            if newDirectory {
                for root in roots { _ = csys_inotify_watch_tree(fd, root) }
            }
            if n < max { break }
        }
        return any
    }
}
