// Writing frames into `output` (size first, write once: STYLE §2).
//
// `output` grows by doubling and is compacted when the server has written
// its front; an empty one above 64 KiB is given back. `outputBase` counts the
// bytes dropped off the front, so `outputBase + readerIndex` is how much the
// server has written in all — which is what `ControlQueue` compares with.
//
// The frames the peer can make us queue without limit (SETTINGS and PING
// acks, RST_STREAM answering its errors, a 431) are `counted`; past
// `maxQueuedControlFrames` unwritten ones the connection fails with
// ENHANCE_YOUR_CALM. WINDOW_UPDATEs follow the application's consumption and
// GOAWAY comes once, so they are not counted.

import Core

extension H2Connection {
    /// An empty output above this capacity is released.
    static let outputKeepCapacity = 64 * 1024
    /// Field-block scratch buffers above this capacity are released after use.
    static let scratchKeepCapacity = 16 * 1024

    var flushedOffset: Int { outputBase + output.readerIndex }
    var writtenOffset: Int { outputBase + output.writerIndex }

    /// Room for `n` more bytes at `output.writable`.
    func reserveOutput(_ n: Int) {
        if output.readerIndex > 0 && output.readerIndex == output.writerIndex {
            outputBase += output.readerIndex
            output.readerIndex = 0
            output.writerIndex = 0
        }
        guard output.writableCount < n else { return }
        if output.readerIndex > 0 && output.capacity - output.readableCount >= n {
            outputBase += output.readerIndex
            output.compact()
            return
        }
        let needed = output.readableCount + n
        var capacity = max(4096, output.capacity * 2)
        while capacity < needed { capacity *= 2 }
        let block = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        outputBase += output.readerIndex
        output.move(toNewStorage: block, capacity: capacity)?.deallocate()
    }

    /// Releases a large empty output (called between reads).
    func trimOutput() {
        guard output.isEmpty, output.capacity > Self.outputKeepCapacity else { return }
        outputBase += output.readerIndex
        output.detach()?.deallocate()
    }

    /// Writes one frame of exactly `size` bytes with `encode`.
    @inline(__always)
    func writeFrame(size: Int, _ encode: (UnsafeMutableRawBufferPointer) -> Int) {
        reserveOutput(size)
        let n = encode(UnsafeMutableRawBufferPointer(rebasing: output.writable[0 ..< size]))
        output.writerIndex += n
    }

    /// Counts a peer-provoked frame just written; the flood error if over.
    func countControlFrame() -> H2Event? {
        if controlQueue.add(endingAt: writtenOffset, flushed: flushedOffset) { return nil }
        return fail(.controlFrameFlood)
    }

    func writeRstStream(_ id: UInt32, _ code: HTTP2ErrorCode) {
        writeFrame(size: FrameEncoder.rstStreamSize) { FrameEncoder.encodeRstStream(streamID: id, errorCode: code, into: $0) }
    }

    func writeWindowUpdate(_ id: UInt32, _ increment: UInt32) {
        writeFrame(size: FrameEncoder.windowUpdateSize) {
            FrameEncoder.encodeWindowUpdate(streamID: id, increment: increment, into: $0)
        }
    }

    func writeInitialSettings() {
        var settings: [Setting] = []
        settings.reserveCapacity(7)
        if limits.headerTableSize != 4096 { settings.append(Setting(.headerTableSize, UInt32(limits.headerTableSize))) }
        settings.append(Setting(.enablePush, 0))
        settings.append(Setting(.maxConcurrentStreams, UInt32(limits.maxConcurrentStreams)))
        if limits.initialStreamWindow != defaultWindow {
            settings.append(Setting(.initialWindowSize, UInt32(limits.initialStreamWindow)))
        }
        if limits.maxFrameSize != Int(SettingsLimits.minMaxFrameSize) {
            settings.append(Setting(.maxFrameSize, UInt32(limits.maxFrameSize)))
        }
        settings.append(Setting(.maxHeaderListSize, UInt32(limits.maxHeaderListSize)))
        if limits.enableConnectProtocol { settings.append(Setting(.enableConnectProtocol, 1)) }
        writeFrame(size: FrameEncoder.settingsSize(count: settings.count)) { FrameEncoder.encodeSettings(settings, into: $0) }
        if limits.connectionWindow > defaultWindow {
            writeWindowUpdate(0, UInt32(limits.connectionWindow - defaultWindow))
        }
    }

    /// A connection error: GOAWAY queued, everything else stops.
    func fail(_ error: H2Error) -> H2Event {
        if let failure { return .connectionError(code: failure.code, reason: failure.reason) }
        failure = error
        let last = min(lastProcessedStreamID, goAwayLastStreamID ?? .max)
        goAwayLastStreamID = last
        error.reason.withUTF8Buffer { reason in
            writeFrame(size: FrameEncoder.goAwaySize(debugDataLength: reason.count)) {
                FrameEncoder.encodeGoAway(lastStreamID: last, errorCode: error.code,
                                          debugData: UnsafeRawBufferPointer(reason), into: $0)
            }
        }
        streams.removeAll()
        readMode = .frames
        outgoing = nil
        settingsDeadline = nil
        return .connectionError(code: error.code, reason: error.reason)
    }

    /// Writes a field block in `sendBlock` as HEADERS plus CONTINUATION frames
    /// of at most the peer's max frame size.
    func writeFieldBlock(streamID: UInt32, endStream: Bool) {
        sendBlock.withUnsafeBytes { block in
            let first = min(block.count, peerMaxFrameSize)
            let frames = block.count <= first ? 1 : 1 + (block.count - first + peerMaxFrameSize - 1) / peerMaxFrameSize
            reserveOutput(block.count + frames * FrameHeader.size)
            var at = first
            writeFrame(size: FrameEncoder.headersSize(fieldBlockLength: first)) {
                FrameEncoder.encodeHeaders(streamID: streamID, fieldBlock: UnsafeRawBufferPointer(rebasing: block[0 ..< first]),
                                           endStream: endStream, endHeaders: first == block.count, into: $0)
            }
            while at < block.count {
                let n = min(block.count - at, peerMaxFrameSize)
                let piece = UnsafeRawBufferPointer(rebasing: block[at ..< at + n])
                at += n
                let last = at == block.count
                writeFrame(size: FrameEncoder.continuationSize(fieldBlockLength: n)) {
                    FrameEncoder.encodeContinuation(streamID: streamID, fieldBlock: piece, endHeaders: last, into: $0)
                }
            }
        }
    }
}
