import Core

/// Incremental decoder for a chunked request body (RFC 9112 §7.1).
///
///     chunked-body   = *chunk last-chunk trailer-section CRLF
///     chunk          = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
///     last-chunk     = 1*("0") [ chunk-ext ] CRLF
///     trailer-section = *( field-line CRLF )
///
/// Theory of operation. A four-state machine:
///
///     sizeLine ──size>0──> data(remaining) ──0 left──> dataCRLF ──CRLF──> sizeLine
///         └──size=0──> trailer(used) ──field line──> trailer ──CRLF──> finished
///
/// Framing is consumed only in whole units (a size line, the CRLF after data,
/// one trailer line), so when a unit is cut short the decoder reports
/// `.needMoreData` and the caller keeps those bytes; it holds no partial
/// framing itself. Payload is handed out as soon as any is available, as a
/// span into the caller's bytes (no copy). Each verdict depends only on the
/// bytes, never on how they were split: feeding a body whole or one byte at
/// a time yields the same payload and the same end or error.
///
/// Rules enforced: the size line as in `ChunkSizeLine`; exactly CRLF after
/// chunk-data (anything else is 400 — a lenient reader here is a smuggling
/// vector); trailer fields parsed and validated like header fields
/// (RFC 9112 §7.1.2) and then discarded — we never merge them into the head
/// ("A recipient MUST NOT merge a received trailer field into the header
/// section unless ..."), bounded by `maxTrailerBytes` (431). Errors are sticky.
///
/// Usage:
///
///     var decoder = H1ChunkedDecoder(limits: limits)
///     loop {
///         switch decoder.decode(buffer.readable) {
///         case .data(let span, let n): deliver(span); buffer.drop(n)
///         case .needMoreData(let n): buffer.drop(n); read more
///         case .end(let n): buffer.drop(n); body complete
///         case .failed(let e): respond(e.status); close
///         }
///     }
public struct H1ChunkedDecoder: Sendable {
    private enum State: Sendable {
        case sizeLine
        case data(remaining: Int64)
        case dataCRLF
        case trailer(used: Int)
        case finished
        case failed(H1Error)
    }

    public let limits: H1Limits
    private var state = State.sizeLine

    public init(limits: H1Limits) {
        self.limits = limits
    }

    /// The last chunk and the trailer section have been consumed.
    public var isFinished: Bool {
        if case .finished = state { return true }
        return false
    }

    /// Decodes from the start of `bytes`. Returns how many bytes of input
    /// were used and, if any, the span (relative to `bytes`) of body payload
    /// found. Call repeatedly, dropping `consumed` bytes each time, until it
    /// returns `.end` or `.needMoreData` with consumed == 0.
    public mutating func decode(_ bytes: UnsafeRawBufferPointer) -> H1ChunkedStep {
        let b = Bytes(bytes)
        var position = 0
        do throws(H1Error) {
            while true {
                switch state {
                case .sizeLine:
                    switch try ChunkSizeLine.parse(b, from: position, maxExtensionBytes: limits.maxChunkExtensionBytes) {
                    case .needMore:
                        return .needMoreData(consumed: position)
                    case .complete(let size, let end):
                        position = end
                        state = size == 0 ? .trailer(used: 0) : .data(remaining: size)
                    }
                case .data(let remaining):
                    let available = b.count - position
                    if available == 0 { return .needMoreData(consumed: position) }
                    let n = Int(Swift.min(remaining, Int64(available)))
                    state = remaining == Int64(n) ? .dataCRLF : .data(remaining: remaining - Int64(n))
                    return .data(ByteSpan(offset: position, length: n), consumed: position + n)
                case .dataCRLF:
                    // RFC 9112 §7.1: chunk = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
                    if position < b.count && b[position] != Byte.cr { throw .missingChunkDataCRLF }
                    if position + 1 < b.count && b[position + 1] != Byte.lf { throw .missingChunkDataCRLF }
                    if position + 2 > b.count { return .needMoreData(consumed: position) }
                    position += 2
                    state = .sizeLine
                case .trailer(let used):
                    let budget = limits.maxTrailerBytes - used
                    guard let lf = b.firstIndex(of: Byte.lf, from: position, to: Swift.min(b.count, position + budget)) else {
                        if b.count - position >= budget { throw .trailerTooLarge }
                        return .needMoreData(consumed: position)
                    }
                    guard lf > position, b[lf - 1] == Byte.cr else { throw .chunkBareLF }
                    if lf - 1 > position {
                        _ = try FieldLine.parse(b, position, lf - 1)
                        state = .trailer(used: used + lf + 1 - position)
                        position = lf + 1
                    } else {
                        state = .finished
                        return .end(consumed: lf + 1)
                    }
                case .finished:
                    return .end(consumed: 0)
                case .failed(let error):
                    return .failed(error)
                }
            }
        } catch {
            state = .failed(error)
            return .failed(error)
        }
    }
}

public enum H1ChunkedStep: Equatable, Sendable {
    /// Payload bytes inside the input; `consumed` covers the framing before
    /// them and the payload itself.
    case data(ByteSpan, consumed: Int)
    /// Framing consumed (may be 0), no payload available yet.
    case needMoreData(consumed: Int)
    /// The last chunk and trailer section were consumed; the body is complete.
    case end(consumed: Int)
    /// 400 for framing errors, 431 for an oversized trailer section.
    case failed(H1Error)
}
