// Frame encoders (RFC 9113 §4.1, §6), size first, write once (STYLE §2).
//
// Each frame type has a `…Size` function giving the exact encoded length and
// an `encode…` function writing header and payload into a caller buffer of at
// least that size, returning the bytes written. Nothing is allocated and
// nothing is written past the returned length. Variable payloads (DATA,
// field block fragments, debug data) are copied in from the caller's bytes;
// a caller that wants to produce them in place reserves `FrameHeader.size`
// bytes, writes the payload after them and back-fills with
// `FrameHeader.encode(into:)`. Padding octets are written as zero (§6.1:
// "Padding octets MUST be set to zero when sending").

public enum FrameEncoder {
    // MARK: sizes

    public static func dataSize(dataLength: Int, padLength: Int? = nil) -> Int {
        FrameHeader.size + paddedOverhead(padLength) + dataLength
    }

    public static func headersSize(fieldBlockLength: Int, priority: PrioritySpec? = nil, padLength: Int? = nil) -> Int {
        FrameHeader.size + paddedOverhead(padLength) + (priority == nil ? 0 : PrioritySpec.size) + fieldBlockLength
    }

    public static let prioritySize = FrameHeader.size + PrioritySpec.size
    public static let rstStreamSize = FrameHeader.size + 4
    public static let pingSize = FrameHeader.size + 8
    public static let windowUpdateSize = FrameHeader.size + 4
    public static let settingsAckSize = FrameHeader.size

    public static func settingsSize(count: Int) -> Int { FrameHeader.size + 6 * count }

    public static func pushPromiseSize(fieldBlockLength: Int, padLength: Int? = nil) -> Int {
        FrameHeader.size + paddedOverhead(padLength) + 4 + fieldBlockLength
    }

    public static func goAwaySize(debugDataLength: Int) -> Int { FrameHeader.size + 8 + debugDataLength }

    public static func continuationSize(fieldBlockLength: Int) -> Int { FrameHeader.size + fieldBlockLength }

    private static func paddedOverhead(_ pad: Int?) -> Int { pad.map { 1 + $0 } ?? 0 }

    // MARK: encoders

    @discardableResult
    public static func encodeData(streamID: UInt32, data: UnsafeRawBufferPointer, endStream: Bool,
                                  padLength: Int? = nil, into out: UnsafeMutableRawBufferPointer) -> Int {
        let n = dataSize(dataLength: data.count, padLength: padLength)
        var w = Writer(out, size: n)
        var flags: FrameFlags = endStream ? .endStream : []
        if padLength != nil { flags.insert(.padded) }
        w.header(n, .data, flags, streamID)
        w.padLength(padLength)
        w.bytes(data)
        w.zeros(padLength ?? 0)
        return w.finish()
    }

    @discardableResult
    public static func encodeHeaders(streamID: UInt32, fieldBlock: UnsafeRawBufferPointer, endStream: Bool,
                                     endHeaders: Bool, priority: PrioritySpec? = nil, padLength: Int? = nil,
                                     into out: UnsafeMutableRawBufferPointer) -> Int {
        let n = headersSize(fieldBlockLength: fieldBlock.count, priority: priority, padLength: padLength)
        var w = Writer(out, size: n)
        var flags: FrameFlags = []
        if endStream { flags.insert(.endStream) }
        if endHeaders { flags.insert(.endHeaders) }
        if padLength != nil { flags.insert(.padded) }
        if priority != nil { flags.insert(.priority) }
        w.header(n, .headers, flags, streamID)
        w.padLength(padLength)
        if let priority { w.priority(priority) }
        w.bytes(fieldBlock)
        w.zeros(padLength ?? 0)
        return w.finish()
    }

    @discardableResult
    public static func encodePriority(streamID: UInt32, priority: PrioritySpec, into out: UnsafeMutableRawBufferPointer) -> Int {
        var w = Writer(out, size: prioritySize)
        w.header(prioritySize, .priority, [], streamID)
        w.priority(priority)
        return w.finish()
    }

    @discardableResult
    public static func encodeRstStream(streamID: UInt32, errorCode: HTTP2ErrorCode, into out: UnsafeMutableRawBufferPointer) -> Int {
        var w = Writer(out, size: rstStreamSize)
        w.header(rstStreamSize, .rstStream, [], streamID)
        w.uint32(errorCode.rawValue)
        return w.finish()
    }

    @discardableResult
    public static func encodeSettings(_ settings: [Setting], into out: UnsafeMutableRawBufferPointer) -> Int {
        let n = settingsSize(count: settings.count)
        var w = Writer(out, size: n)
        w.header(n, .settings, [], 0)
        for s in settings {
            w.uint8(UInt8(s.parameter.rawValue >> 8))
            w.uint8(UInt8(truncatingIfNeeded: s.parameter.rawValue))
            w.uint32(s.value)
        }
        return w.finish()
    }

    @discardableResult
    public static func encodeSettingsAck(into out: UnsafeMutableRawBufferPointer) -> Int {
        var w = Writer(out, size: settingsAckSize)
        w.header(settingsAckSize, .settings, .ack, 0)
        return w.finish()
    }

    @discardableResult
    public static func encodePushPromise(streamID: UInt32, promisedStreamID: UInt32, fieldBlock: UnsafeRawBufferPointer,
                                         endHeaders: Bool, padLength: Int? = nil,
                                         into out: UnsafeMutableRawBufferPointer) -> Int {
        let n = pushPromiseSize(fieldBlockLength: fieldBlock.count, padLength: padLength)
        var w = Writer(out, size: n)
        var flags: FrameFlags = endHeaders ? .endHeaders : []
        if padLength != nil { flags.insert(.padded) }
        w.header(n, .pushPromise, flags, streamID)
        w.padLength(padLength)
        w.uint32(promisedStreamID)
        w.bytes(fieldBlock)
        w.zeros(padLength ?? 0)
        return w.finish()
    }

    @discardableResult
    public static func encodePing(ack: Bool, opaqueData: UInt64, into out: UnsafeMutableRawBufferPointer) -> Int {
        var w = Writer(out, size: pingSize)
        w.header(pingSize, .ping, ack ? .ack : [], 0)
        w.uint32(UInt32(truncatingIfNeeded: opaqueData >> 32))
        w.uint32(UInt32(truncatingIfNeeded: opaqueData))
        return w.finish()
    }

    @discardableResult
    public static func encodeGoAway(lastStreamID: UInt32, errorCode: HTTP2ErrorCode, debugData: UnsafeRawBufferPointer,
                                    into out: UnsafeMutableRawBufferPointer) -> Int {
        let n = goAwaySize(debugDataLength: debugData.count)
        var w = Writer(out, size: n)
        w.header(n, .goAway, [], 0)
        w.uint32(lastStreamID)
        w.uint32(errorCode.rawValue)
        w.bytes(debugData)
        return w.finish()
    }

    @discardableResult
    public static func encodeWindowUpdate(streamID: UInt32, increment: UInt32, into out: UnsafeMutableRawBufferPointer) -> Int {
        precondition(increment >= 1 && increment <= SettingsLimits.maxWindowSize)
        var w = Writer(out, size: windowUpdateSize)
        w.header(windowUpdateSize, .windowUpdate, [], streamID)
        w.uint32(increment)
        return w.finish()
    }

    @discardableResult
    public static func encodeContinuation(streamID: UInt32, fieldBlock: UnsafeRawBufferPointer, endHeaders: Bool,
                                          into out: UnsafeMutableRawBufferPointer) -> Int {
        let n = continuationSize(fieldBlockLength: fieldBlock.count)
        var w = Writer(out, size: n)
        w.header(n, .continuation, endHeaders ? .endHeaders : [], streamID)
        w.bytes(fieldBlock)
        return w.finish()
    }
}

/// A bounds-checked cursor over the caller's buffer for one frame.
private struct Writer {
    let base: UnsafeMutableRawPointer
    let size: Int
    var at = 0

    init(_ out: UnsafeMutableRawBufferPointer, size: Int) {
        precondition(out.count >= size, "buffer smaller than the frame's size function")
        base = out.baseAddress!
        self.size = size
    }

    mutating func header(_ total: Int, _ type: FrameType, _ flags: FrameFlags, _ streamID: UInt32) {
        FrameHeader(length: total - FrameHeader.size, type: type, flags: flags, streamID: streamID).encode(into: base)
        at = FrameHeader.size
    }

    mutating func uint8(_ v: UInt8) {
        base.storeBytes(of: v, toByteOffset: at, as: UInt8.self)
        at += 1
    }

    mutating func uint32(_ v: UInt32) {
        writeUInt32(v, to: base + at)
        at += 4
    }

    mutating func padLength(_ pad: Int?) {
        if let pad {
            precondition(pad >= 0 && pad <= 255)
            uint8(UInt8(pad))
        }
    }

    mutating func priority(_ p: PrioritySpec) {
        uint32(p.dependency | (p.exclusive ? 0x8000_0000 : 0))
        uint8(p.weight)
    }

    mutating func bytes(_ b: UnsafeRawBufferPointer) {
        if b.count > 0 { (base + at).copyMemory(from: b.baseAddress!, byteCount: b.count) }
        at += b.count
    }

    mutating func zeros(_ n: Int) {
        if n > 0 { (base + at).initializeMemory(as: UInt8.self, repeating: 0, count: n) }
        at += n
    }

    func finish() -> Int {
        precondition(at == size)
        return at
    }
}
