/// How a server takes the PROXY header off a connection without taking
/// any byte after it: by peeking (MSG_PEEK) and consuming only header
/// bytes, so what follows the header (a TLS ClientHello that OpenSSL reads
/// from the descriptor itself) stays in the socket.
///
/// Sans-I/O: the caller keeps the bytes consumed so far at the start of a
/// buffer, peeks at most `peekLimit(taken:)` more right after them, and
/// asks `next` what to do:
///
///     var taken = 0                                   // bytes consumed, at buffer[0..<taken]
///     loop on readable:
///         n = peek(into: buffer[taken...], max: reader.peekLimit(taken: taken))
///         switch reader.next(buffer[0..<taken + n], taken: taken, peerClosed: n == 0) {
///         case .consume(let k): read k bytes into buffer[taken...]; taken += k  // wait for more
///         case .complete(let header, let k): read k bytes; serve `header`
///         case .failed(let error): close without an answer
///         }
///
/// While the decoder needs more, every byte seen belongs to the header
/// (its `needMoreData(atLeast:)` never asks past the header's end), so all
/// of them are consumed: the socket is readable again only when new bytes
/// come, and a slow sender costs no busy loop. A complete header consumes
/// exactly its own remaining bytes.
public struct ProxyHeaderReader: Sendable {
    public let decoder: ProxyHeaderDecoder

    public init(decoder: ProxyHeaderDecoder = ProxyHeaderDecoder()) {
        self.decoder = decoder
    }

    public enum Step: Equatable, Sendable {
        /// Consume this many peeked bytes (all of them) and wait for more.
        case consume(Int)
        /// The header is complete: consume this many peeked bytes (the
        /// rest of it), then serve what follows.
        case complete(ProxyHeader, consume: Int)
        case failed(ProxyHeaderError)
    }

    /// The longest header: a v1 line (107 bytes) or 16 + the v2 cap.
    public var maxHeaderLength: Int {
        max(ProxyHeaderDecoder.v1MaxLength, ProxyHeaderDecoder.v2FixedLength + decoder.maxV2Length)
    }

    /// The most bytes worth peeking after `taken` consumed ones.
    public func peekLimit(taken: Int) -> Int {
        max(maxHeaderLength - taken, 0)
    }

    /// `seen`: the `taken` bytes consumed so far followed by what a peek
    /// returned (none and `peerClosed` when the peer closed its side).
    public func next(_ seen: UnsafeRawBufferPointer, taken: Int, peerClosed: Bool) -> Step {
        precondition(taken <= seen.count)
        switch decoder.decode(seen, endOfInput: peerClosed) {
        case .needMoreData:
            // A peek that returned nothing new while the peer is open
            // (a spurious wake-up) consumes nothing.
            // (The decoder refuses a header past its bound before this.)
            guard seen.count < maxHeaderLength else { return .failed(.v2TooLong) }
            return .consume(seen.count - taken)
        case .complete(let header):
            // The decoder reads no byte past the header, and bytes already
            // consumed are header bytes (see above): the rest is here.
            return .complete(header, consume: header.length - taken)
        case .failed(let error):
            return .failed(error)
        }
    }
}
