/// Compresses outgoing messages for permessage-deflate (RFC 7692 §7.2.1).
///
/// Theory of operation. Each message is deflated with a sync flush, which
/// ends the output on a byte boundary with an empty stored block
/// `00 00 ff ff`; §7.2.1 has the sender remove those 4 bytes, and the
/// receiver puts them back. Without `server_no_context_takeover` the LZ77
/// window carries over from message to message (§7.2.3.2: a repeated
/// "Hello" costs 5 bytes instead of 7); with it, the stream is reset after
/// each message.
///
/// Resumable, writing into the caller's buffer: `compress(_:into:)` takes
/// the input not yet consumed and an output area, and reports what it
/// consumed and wrote and whether the message is complete. When it is, the
/// last `tailLength` bytes written are the flush tail; the payload is what
/// precedes them. A caller with one growing, contiguous buffer:
///
///     var consumed = 0, written = 0
///     while true {
///         reserve(room); let step = deflater.compress(rest(of: message, from: consumed), into: area(after: written))
///         consumed += step.consumed; written += step.written
///         if step.isFinished { payloadLength = written - MessageDeflater.tailLength; break }
///     }
///
/// Messages shorter than `minimumLength` are better sent uncompressed
/// (`shouldCompress`): deflate's framing (≥ 1 byte, plus the RSV1 message
/// being re-inflated by the peer) gains nothing on a few bytes, and §6
/// allows RSV1 clear on any message.
///
/// zlib state is allocated at the first compressed message, so a connection
/// that never sends one costs nothing here. Memory once allocated, at
/// memLevel 8 and a 2^15 window: 2^17 (window) + 2^17 (hash chains and
/// pending buffer) ≈ 256 KiB of address space, of which the pages actually
/// touched depend on the messages (TRANSPORT.md has the measured RSS).
public final class MessageDeflater {
    /// Messages shorter than this go out uncompressed.
    public static let minimumLength = 64
    /// The flush tail §7.2.1 removes: `00 00 ff ff`.
    public static let tailLength = 4
    /// zlib's memLevel: 8 is zlib's default (9 would double the hash memory
    /// for a marginal gain).
    public static let memLevel = 8

    public let parameters: PerMessageDeflateParameters
    private let level: Int
    private var stream: ZlibStream?
    /// A message has been partly compressed (its last call was not finished).
    private var messageInProgress = false

    /// `level`: zlib's 0...9, or -1 for its default (6).
    public init(parameters: PerMessageDeflateParameters, level: Int = -1) {
        self.parameters = parameters
        self.level = level
    }

    /// Whether a message of `length` bytes should be compressed.
    public func shouldCompress(length: Int) -> Bool {
        parameters.serverCompresses && length >= MessageDeflater.minimumLength
    }

    /// Worst case output for `length` input bytes in one message: deflate's
    /// stored-block bound (5 bytes per 16 KiB block, plus the flush blocks).
    public static func bound(length: Int) -> Int {
        length + (length >> 12) + (length >> 14) + 64
    }

    public struct Step: Equatable, Sendable {
        public var consumed: Int
        public var written: Int
        /// The message is done; the last `tailLength` bytes written are the tail.
        public var isFinished: Bool
    }

    /// Compresses `input` (the rest of the current message) into `output`.
    /// Call again with the unconsumed input and fresh room until `isFinished`.
    public func compress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Step {
        precondition(parameters.serverCompresses, "no compression with a 2^8 window")
        if stream == nil {
            guard let s = ZlibStream(deflateLevel: level, windowBits: parameters.deflateWindowBits,
                                     memLevel: MessageDeflater.memLevel) else {
                fatalError("zlib could not allocate a deflate stream")
            }
            stream = s
        }
        var (status, consumed, written) = stream!.run(input, output, flush: true)
        precondition(status == .ok || status == .noProgress, "deflate failed: \(status)")
        if status == .noProgress && input.isEmpty && !messageInProgress {
            // An empty message right after another: zlib refuses a second
            // sync flush with no new input (Z_BUF_ERROR), so nothing would
            // be written, not even the tail the caller strips. The stream
            // is on a byte boundary after the last flush, so the empty
            // stored block a sync flush makes there is written here: a
            // header byte (BFINAL 0, type 00, padding), then LEN 0 and NLEN
            // (RFC 1951 §3.2.4), the last 4 being the tail — the message is
            // the single byte 00 of RFC 7692 §7.2.3.6 (found by
            // fuzz-ws-deflate; needs 6 bytes of room).
            let block: [UInt8] = [0x00, 0x00, 0x00, 0xFF, 0xFF]
            guard output.count > block.count else { return Step(consumed: 0, written: 0, isFinished: false) }
            for (k, byte) in block.enumerated() { output[k] = byte }
            written = block.count
        }
        // With a sync flush, deflate is done when all input is in and it
        // left output room (zlib: "if deflate returns with avail_out == 0,
        // this function must be called again").
        let finished = consumed == input.count && written < output.count
        messageInProgress = !finished
        if finished && parameters.serverNoContextTakeover { stream!.reset() }
        return Step(consumed: consumed, written: written, isFinished: finished)
    }

    /// Compresses a whole message into an array (tests, and callers without
    /// a contiguous output buffer); the tail is already removed.
    public func compress(_ message: UnsafeRawBufferPointer) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: MessageDeflater.bound(length: message.count))
        var consumed = 0, written = 0
        while true {
            if output.count - written < 64 { output.append(contentsOf: repeatElement(0, count: output.count)) }
            let step = output.withUnsafeMutableBytes { out in
                compress(UnsafeRawBufferPointer(rebasing: message[consumed...]), into: UnsafeMutableRawBufferPointer(rebasing: out[written...]))
            }
            consumed += step.consumed
            written += step.written
            if step.isFinished { break }
        }
        output.removeSubrange((written - MessageDeflater.tailLength)...)
        return output
    }
}
