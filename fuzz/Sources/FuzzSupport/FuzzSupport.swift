// What every fuzz target shares: starting libFuzzer from the target's own
// `main`, and replaying files through the same checks without it.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

#if FUZZING
// SwiftPM links every executable with `main` aliased to `<module>_main`
// (--defsym main=fuzz_http1_main, say), so libFuzzer's own main is never
// linked in; each target's `<module>_main` calls `runLibFuzzer` instead,
// which starts libFuzzer through its public driver entry point (declared
// here because no C module declares it; the signature uses only pointer and
// int arguments, passed alike by both calling conventions).
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// Runs libFuzzer over `testOneInput` (the target's
/// `LLVMFuzzerTestOneInput`) with the process's arguments.
public func runLibFuzzer(
    _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>,
    _ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv, testOneInput)
}
#endif

/// Replay: runs `check` on the contents of each file named, then exits (1
/// if a file could not be read). A plain build of a target is this: the
/// same checks without the sanitizer, to reproduce a finding.
public func replay(_ paths: ArraySlice<String>, _ check: (String, UnsafeRawBufferPointer) -> Void) -> Never {
    var unreadable = 0
    for path in paths {
        guard let contents = readFile(path) else {
            print("cannot open \(path)")
            unreadable += 1
            continue
        }
        contents.withUnsafeBytes { check(path, $0) }
    }
    print("checked \(paths.count - unreadable) inputs")
    exit(unreadable == 0 ? 0 : 1)
}

/// The bytes of the file at `path` (nil: it cannot be opened).
public func readFile(_ path: String) -> [UInt8]? {
    guard let file = fopen(path, "rb") else { return nil }
    defer { fclose(file) }
    var contents: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
        if n <= 0 { break }
        contents += chunk[..<n]
    }
    return contents
}
