import CSys
import Core

/// Starts `executable` with `arguments` (argv[0] is the executable) in a
/// child process that keeps the descriptors `keep` across exec and dies with
/// the supervisor (csys_spawn). Returns its pid, or -1 (errno set).
func spawnProcess(_ executable: String, arguments: [String], keeping keep: [Int32] = []) -> Int32 {
    let argv = [executable] + arguments
    var cargs: [UnsafeMutablePointer<CChar>?] = argv.map { allocateCString($0) } + [nil]
    defer { for p in cargs { p?.deallocate() } }
    return csys_spawn(executable, &cargs, keep, Int32(keep.count))
}
