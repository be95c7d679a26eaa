internal import CZlib

/// The zlib binding (CZlib) kept apart from the permessage-deflate logic
/// (`MessageDeflater`, `MessageInflater`), the way a crypto binding is kept
/// apart from the protocol using it (STYLE §1). One raw-DEFLATE stream;
/// the C side owns the `z_stream`, which must not move, behind a handle.
final class ZlibStream {
    enum Status: Equatable {
        /// Progress made.
        case ok
        /// Inflate: the DEFLATE stream ended (a block with BFINAL set).
        case streamEnd
        /// Nothing could be done: no input or no output room.
        case noProgress
        /// Inflate: not DEFLATE data.
        case dataError
        /// zlib could not allocate.
        case outOfMemory
    }

    private let handle: OpaquePointer

    /// A compressor; nil if zlib refuses the parameters or memory is short.
    init?(deflateLevel level: Int, windowBits: Int, memLevel: Int) {
        guard let h = czlib_deflater_new(Int32(level), Int32(windowBits), Int32(memLevel)) else { return nil }
        handle = h
    }

    /// A decompressor; nil if zlib refuses the window or memory is short.
    init?(inflateWindowBits windowBits: Int) {
        guard let h = czlib_inflater_new(Int32(windowBits)) else { return nil }
        handle = h
    }

    deinit { czlib_free(handle) }

    /// One deflate (`flush`: Z_SYNC_FLUSH, else Z_NO_FLUSH) or inflate call.
    func run(_ input: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer,
             flush: Bool) -> (status: Status, consumed: Int, written: Int) {
        var consumed = 0, written = 0
        let rc = czlib_run(handle, input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count, &consumed,
                           output.baseAddress?.assumingMemoryBound(to: UInt8.self), output.count, &written, flush ? 1 : 0)
        let status: Status
        switch rc {
        case Int32(CZLIB_OK): status = .ok
        case Int32(CZLIB_STREAM_END): status = .streamEnd
        case Int32(CZLIB_NO_PROGRESS): status = .noProgress
        case Int32(CZLIB_MEMORY): status = .outOfMemory
        default: status = .dataError
        }
        return (status, consumed, written)
    }

    /// Forgets the window (no context takeover).
    func reset() { czlib_reset(handle) }

    /// Inflate, after `.streamEnd`: a new stream that may refer back into
    /// the old window (context takeover across a BFINAL block).
    func restartKeepingWindow() -> Bool { czlib_inflate_restart_keeping_window(handle) == 0 }
}
