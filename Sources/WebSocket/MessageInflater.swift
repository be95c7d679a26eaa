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
/// `messageTooBig`) one byte past the limit, before the array grows past
/// it — not after inflating the whole thing. Text is UTF-8 validated as it
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
    private var produced = 0
    private var utf8 = UTF8Validator()

    public init(parameters: PerMessageDeflateParameters, maxMessageLength: Int) {
        self.parameters = parameters
        self.maxMessageLength = maxMessageLength
    }

    private static let tail: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]

    /// Inflates one piece of a compressed message, appending to `output`
    /// (the caller empties it at the message's first piece).
    public func inflate(_ piece: UnsafeRawBufferPointer, isFirst: Bool, isLast: Bool, text: Bool,
                        into output: inout [UInt8]) throws(WebSocketError) {
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
        run(piece, text: text, into: &output)
        if let failure { throw failure }
        guard isLast else { return }
        MessageInflater.tail.withUnsafeBytes { run($0, text: text, into: &output) }
        if text && !utf8.isComplete { fail(.invalidUTF8) }
        if parameters.clientNoContextTakeover { stream!.reset() }
        if let failure { throw failure }
    }

    private var failure: WebSocketError?

    private func fail(_ error: WebSocketError) {
        if failure == nil { failure = error }
    }

    /// Inflates all of `input`; a failure is left in `failure` (sticky).
    private func run(_ input: UnsafeRawBufferPointer, text: Bool, into output: inout [UInt8]) {
        if failure != nil { return }
        let stream = self.stream!
        var consumed = 0
        while true {
            let left = maxMessageLength - produced + 1
            let room = min(left, max(16 * 1024, min((input.count - consumed) * 4, 1 << 20)))
            let start = output.count
            output.append(contentsOf: repeatElement(0, count: room))
            let step = output.withUnsafeMutableBytes { out in
                stream.run(UnsafeRawBufferPointer(rebasing: input[consumed...]),
                           UnsafeMutableRawBufferPointer(rebasing: out[start..<start + room]), flush: true)
            }
            output.removeLast(room - step.written)
            consumed += step.consumed
            produced += step.written
            if produced > maxMessageLength { fail(.messageTooBig); break }
            if text && step.written > 0 {
                let ok = output.withUnsafeBytes { utf8.validate(UnsafeRawBufferPointer(rebasing: $0[start..<start + step.written])) }
                if !ok { fail(.invalidUTF8); break }
            }
            switch step.status {
            case .ok, .noProgress:
                break
            case .streamEnd:
                let restarted = parameters.clientNoContextTakeover ? { stream.reset(); return true }() : stream.restartKeepingWindow()
                if !restarted { fatalError("zlib could not allocate") }
                continue
            case .dataError:
                fail(.compressedDataInvalid)
            case .outOfMemory:
                fatalError("zlib could not allocate")
            }
            if failure != nil { break }
            // Done when all input is in and zlib did not fill the room.
            if consumed == input.count && step.written < room { break }
            if step.status == .noProgress && step.written == 0 && consumed < input.count {
                fail(.compressedDataInvalid)  // cannot happen with room left; never spin
                break
            }
        }
    }
}
