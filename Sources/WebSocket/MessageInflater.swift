/// Decompresses incoming messages for permessage-deflate (RFC 7692 §7.2.2),
/// with the message size limit applied to the *inflated* size.
///
/// Theory of operation. A compressed message (RSV1 on its first frame,
/// `MessagePiece.isCompressed`) arrives as pieces; each is inflated as it
/// comes, appending to the caller's array. After the last piece the 4 bytes
/// `00 00 ff ff` the sender removed (§7.2.1) are inflated too, which
/// completes the sync-flush block and releases the message's last bytes.
///
///     piece ──inflate, ≤ limit − produced + 1 bytes of room──▶ output
///        └── isLast: inflate 00 00 ff ff; no context takeover → reset
///
/// Bounded: zlib never gets more output room than `maxMessageLength −
/// produced + 1` bytes, so a decompression bomb is caught (1009,
/// `messageTooBig`) one byte past the limit, before the buffer grows past
/// it — not after inflating the whole thing. The buffer starts at a few
/// times the compressed size and doubles; `release()` frees it, so an idle
/// connection holds no message memory. Text is UTF-8 validated as it
/// is produced (1007 as soon as a byte is wrong, §8.1). Data that is not
/// DEFLATE fails with 1002 (`compressedDataInvalid`).
///
/// A block with BFINAL set (§7.2.3.4: allowed, e.g. from a sender that can
/// only finish streams) ends zlib's stream; the inflater starts a new one
/// — keeping the window when context takeover is on — and goes on, so the
/// appended tail is then read as one more empty stored block.
///
/// zlib state is allocated at the first compressed message (about 2^15 +
/// 7 KiB for a 2^15 window).
public final class MessageInflater {
    public let parameters: PerMessageDeflateParameters
    public let maxMessageLength: Int
    private var stream: ZlibStream?
    private var storage: UnsafeMutableRawPointer?
    private var capacity = 0
    private var produced = 0
    private var utf8 = UTF8Validator()
    private var failure: WebSocketError?

    public init(parameters: PerMessageDeflateParameters, maxMessageLength: Int) {
        self.parameters = parameters
        self.maxMessageLength = maxMessageLength
    }

    deinit { storage?.deallocate() }

    private static let tail: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]

    /// Inflates one piece of a compressed message; after the last piece,
    /// returns the message (valid until the next call or `release()`).
    public func inflate(_ piece: UnsafeRawBufferPointer, isFirst: Bool, isLast: Bool,
                        text: Bool) throws(WebSocketError) -> UnsafeRawBufferPointer? {
        if isFirst {
            produced = 0
            utf8 = UTF8Validator()
        }
        if stream == nil {
            guard let s = ZlibStream(inflateWindowBits: parameters.inflateWindowBits) else {
                fatalError("zlib could not allocate an inflate stream")
            }
            stream = s
        }
        run(piece, text: text)
        if let failure { throw failure }
        guard isLast else { return nil }
        MessageInflater.tail.withUnsafeBytes { run($0, text: text) }
        if text && !utf8.isComplete { fail(.invalidUTF8) }
        if parameters.clientNoContextTakeover { stream!.reset() }
        if let failure { throw failure }
        return UnsafeRawBufferPointer(start: storage, count: produced)
    }

    /// Bytes allocated for the message buffer (tests: the bound holds).
    var bufferCapacity: Int { capacity }

    /// Frees the message buffer (call once the message is delivered).
    public func release() {
        storage?.deallocate()
        storage = nil
        capacity = 0
        produced = 0
    }

    private func fail(_ error: WebSocketError) {
        if failure == nil { failure = error }
    }

    /// Room for at least `wanted` more bytes (capacity doubles), never past
    /// `maxMessageLength + 1` in all.
    private func grow(_ wanted: Int) {
        let limit = maxMessageLength + 1
        let needed = min(produced + wanted, limit)
        guard needed > capacity else { return }
        let newCapacity = min(max(needed, capacity * 2, 4096), limit)
        let block = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        if let storage {
            block.copyMemory(from: storage, byteCount: produced)
            storage.deallocate()
        }
        storage = block
        capacity = newCapacity
    }

    /// Inflates all of `input`; a failure is left in `failure` (sticky).
    private func run(_ input: UnsafeRawBufferPointer, text: Bool) {
        if failure != nil { return }
        let stream = self.stream!
        var consumed = 0
        while true {
            if capacity - produced < 1024 { grow(max(4 * (input.count - consumed), 1024)) }
            let room = min(capacity - produced, maxMessageLength - produced + 1)
            let out = UnsafeMutableRawBufferPointer(start: storage! + produced, count: room)
            let step = stream.run(UnsafeRawBufferPointer(rebasing: input[consumed...]), out, flush: true)
            consumed += step.consumed
            produced += step.written
            if produced > maxMessageLength { fail(.messageTooBig); return }
            if text && step.written > 0 && !utf8.validate(UnsafeRawBufferPointer(rebasing: out[0..<step.written])) {
                fail(.invalidUTF8)
                return
            }
            switch step.status {
            case .ok, .noProgress:
                break
            case .streamEnd:
                // A BFINAL block: a new stream, keeping the window with context takeover.
                if parameters.clientNoContextTakeover { stream.reset() } else if !stream.restartKeepingWindow() {
                    fatalError("zlib could not allocate")
                }
                continue
            case .dataError:
                fail(.compressedDataInvalid)
                return
            case .outOfMemory:
                fatalError("zlib could not allocate")
            }
            // Done when all input is in and zlib did not fill the room.
            if consumed == input.count && step.written < room { return }
            if step.written == 0 && step.consumed == 0 && room > 0 {
                fail(.compressedDataInvalid)  // cannot happen with input and room; never spin
                return
            }
        }
    }
}
