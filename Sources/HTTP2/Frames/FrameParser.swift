// Sans-I/O HTTP/2 frame parser (RFC 9113 §3.4, §4).
//
// The caller owns the read buffer. It appends what the socket gave, then asks
// for events over the unread bytes until `.needMoreData`, advancing its read
// cursor by each event's `consumed` (commit only on success, STYLE §2):
//
//     var parser = FrameParser(maxFrameSize: 16_384)
//     loop: while true {
//         switch try parser.nextEvent(in: buffer.readable) {   // throws: GOAWAY
//         case .needMoreData: break loop
//         case .prefaceReceived(let n): buffer.readerIndex += n
//         case .frame(let frame, let n): handle(frame); buffer.readerIndex += n
//         case .streamError(let e, let n): reset(e); buffer.readerIndex += n
//         }
//     }
//
// Spans in a frame are relative to the start of the `bytes` passed to the
// call that returned it. Read modes: first the 24-octet client preface (when
// `expectPreface`), then frames. A frame is returned only once its whole
// payload is present; its length is checked against `maxFrameSize` (our
// SETTINGS_MAX_FRAME_SIZE) as soon as the 9-byte header is, so an oversized
// frame is refused before it is buffered (§4.2: FRAME_SIZE_ERROR; we always
// make it a connection error, which §4.2 permits for any frame). Failure is
// sticky: after a connection error every call throws it again.

/// Turns bytes into frame events; see the file comment for the loop.
public struct FrameParser: Sendable {
    public enum Event: Equatable, Sendable {
        /// Nothing complete in the input; call again with more bytes.
        case needMoreData
        /// The client connection preface was read (RFC 9113 §3.4).
        case prefaceReceived(consumed: Int)
        case frame(Frame, consumed: Int)
        /// The frame broke a stream-scoped rule; it is consumed and the
        /// connection continues after RST_STREAM.
        case streamError(FrameError, consumed: Int)
    }

    /// Our SETTINGS_MAX_FRAME_SIZE; raise it only once the peer has
    /// acknowledged the new value (RFC 9113 §6.5.3).
    public var maxFrameSize: Int
    private var awaitingPreface: Bool
    private var failure: FrameError?

    public init(maxFrameSize: Int = Int(SettingsLimits.minMaxFrameSize), expectPreface: Bool = true) {
        self.maxFrameSize = maxFrameSize
        awaitingPreface = expectPreface
    }

    /// The next event from the unread bytes `bytes`.
    public mutating func nextEvent(in bytes: UnsafeRawBufferPointer) throws(FrameError) -> Event {
        if let failure { throw failure }
        do {
            return try parse(bytes)
        } catch {
            if error.isConnectionError { failure = error }
            throw error
        }
    }

    private mutating func parse(_ bytes: UnsafeRawBufferPointer) throws(FrameError) -> Event {
        if awaitingPreface {
            switch ConnectionPreface.match(bytes) {
            case .needMoreData: return .needMoreData
            case .mismatch, .invalidPreface: throw .badPreface
            case .complete:
                awaitingPreface = false
                return .prefaceReceived(consumed: ConnectionPreface.count)
            }
        }
        guard let header = FrameHeader.decode(bytes, at: 0) else { return .needMoreData }
        guard header.length <= maxFrameSize else { throw .frameTooLarge }
        let total = FrameHeader.size + header.length
        guard bytes.count >= total else { return .needMoreData }
        do {
            return .frame(try Frame.decode(header: header, in: bytes, payloadAt: FrameHeader.size), consumed: total)
        } catch where !error.isConnectionError {
            return .streamError(error, consumed: total)
        }
    }
}
