import CSys

/// A worker's resident memory and CPU time, from procfs (proc(5)), for
/// `peregrine_worker_resident_memory_bytes` and
/// `peregrine_worker_cpu_seconds_total`.
struct ProcessSample {
    var residentBytes: Int64
    /// User plus system time, in clock ticks.
    var cpuTicks: Int64

    static let pageBytes = Int64(csys_page_bytes())
    static let ticksPerSecond = Int64(max(csys_clock_ticks_per_second(), 1))

    /// nil: the process is gone (or procfs is not mounted).
    static func read(pid: Int32) -> ProcessSample? {
        // statm: "size resident shared text lib data dt", in pages.
        guard let statm = readSmallFile("/proc/\(pid)/statm"),
              let stat = readSmallFile("/proc/\(pid)/stat") else { return nil }
        let pages = statm.split(separator: UInt8(ascii: " "))
        guard pages.count >= 2, let resident = Int64(text: pages[1]),
              let ticks = cpuTicks(stat: stat) else { return nil }
        return ProcessSample(residentBytes: resident * pageBytes, cpuTicks: ticks)
    }

    /// utime and stime, fields 14 and 15 of /proc/PID/stat, counted after
    /// the command name, which is in parentheses and may itself hold spaces
    /// and parentheses: the fields start after the last ')'.
    static func cpuTicks(stat: [UInt8]) -> Int64? {
        guard let close = stat.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        // After ") ": field 3 (state) is the first.
        let fields = stat[(close + 1)...].split(separator: UInt8(ascii: " "))
        guard fields.count >= 13, let user = Int64(text: fields[11]), let system = Int64(text: fields[12]) else { return nil }
        return user + system
    }

    /// CPU seconds with the tick's precision, as exposition text.
    var cpuSecondsText: String {
        MetricsExposition.seconds(microseconds: cpuTicks * 1_000_000 / ProcessSample.ticksPerSecond)
    }

    private static func readSmallFile(_ path: String) -> [UInt8]? {
        let fd = csys_open_read(path)
        guard fd >= 0 else { return nil }
        defer { _ = csys_close(fd) }
        var buf = [UInt8](repeating: 0, count: 1024)
        let n = buf.withUnsafeMutableBytes { csys_read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        return Array(buf.prefix(n))
    }
}

extension Int64 {
    /// A non-negative decimal integer (a procfs field), or nil.
    init?(text: ArraySlice<UInt8>) {
        var v: Int64 = 0
        guard !text.isEmpty else { return nil }
        for b in text {
            guard b >= UInt8(ascii: "0"), b <= UInt8(ascii: "9") else {
                if b == UInt8(ascii: "\n") { break }
                return nil
            }
            v = v &* 10 &+ Int64(b - UInt8(ascii: "0"))
        }
        self = v
    }
}
