import CSys

/// The shared metrics region: `blocks` blocks of `MetricsLayout.blockWords`
/// counters in one memfd, created by the supervisor and mapped by every
/// worker it starts (hidden option `--worker-metrics FD:FIRST:BLOCKS`).
///
/// The supervisor gives each worker process a run of consecutive blocks,
/// one per worker thread (`Config.workerContexts()`), never one a live
/// process holds; thread `i` of the process writes block `FIRST + i`.
public struct MetricsRegion: @unchecked Sendable {
    public let fd: Int32
    public let blocks: Int
    private let base: UnsafeMutablePointer<Int64>

    private init(fd: Int32, blocks: Int, base: UnsafeMutablePointer<Int64>) {
        self.fd = fd
        self.blocks = blocks
        self.base = base
    }

    /// A new region of zeros (nil: memfd or mmap failed).
    public static func create(blocks: Int) -> MetricsRegion? {
        let words = blocks * MetricsLayout.blockWords
        let fd = csys_metrics_create(words)
        guard fd >= 0 else { return nil }
        guard let base = csys_metrics_map(fd, words) else {
            _ = csys_close(fd)
            return nil
        }
        return MetricsRegion(fd: fd, blocks: blocks, base: base)
    }

    /// The region a supervisor passed down.
    public static func map(fd: Int32, blocks: Int) -> MetricsRegion? {
        guard fd >= 0, blocks > 0, let base = csys_metrics_map(fd, blocks * MetricsLayout.blockWords) else { return nil }
        return MetricsRegion(fd: fd, blocks: blocks, base: base)
    }

    public func block(_ index: Int) -> UnsafeMutablePointer<Int64>? {
        guard index >= 0 && index < blocks else { return nil }
        return base + index * MetricsLayout.blockWords
    }

    /// Word `word` of block `index`, as the writer last stored it.
    public func load(_ index: Int, _ word: Int) -> Int64 {
        csys_counter_load(base + index * MetricsLayout.blockWords, Int32(word))
    }

    /// Zeros a block no process holds (before it is handed out again).
    public func clear(_ index: Int) {
        let b = base + index * MetricsLayout.blockWords
        for w in 0..<MetricsLayout.blockWords { csys_counter_store(b, Int32(w), 0) }
    }
}
