// The receiving side of one request stream at a server (RFC 9114 §4.1).
//
// Theory of operation. A request is one HEADERS frame, then DATA frames, then
// optionally one trailing HEADERS frame, then the end of the stream (§4.1).
// Unknown and reserved frames may come anywhere (the frame reader skips
// them). The machine:
//
//     awaitingHead ─HEADERS─▶ decodingHead ─acceptHead─▶ body ─HEADERS─▶
//       decodingTrailers ─acceptTrailers─▶ trailersReceived ─FIN─▶ finished
//     body ─FIN─▶ finished
//
// "Receipt of an invalid sequence of frames MUST be treated as a connection
// error of type H3_FRAME_UNEXPECTED. In particular, a DATA frame before any
// HEADERS frame, or a HEADERS or DATA frame after the trailing HEADERS frame,
// is considered invalid." (§4.1)
//
// A HEADERS frame gives a `.fieldSection` event; the caller decodes the
// encoded section (`fieldSectionBytes`) with the connection's QPACK decoder —
// which may hold it until encoder-stream inserts arrive (RFC 9204 §2.1.2) —
// and hands the decoded list to `acceptHead` or `acceptTrailers`. Until then
// the stream reads nothing more, so its bytes stay in QUIC flow control. The
// decoded list is validated by the field rules HTTP/2 uses (HTTPFields,
// §4.1.2, §4.2, §4.3, RFC 9220 for :protocol) → H3_MESSAGE_ERROR, and the body
// is counted against content-length (§4.1.2: "malformed if the value of the
// Content-Length header field does not equal the sum of the DATA frame
// lengths received").

import Core
import HTTPFields

public struct H3RequestStream: Sendable {
    public enum State: Sendable, Equatable {
        case awaitingHead, decodingHead, body, decodingTrailers, trailersReceived, finished
    }

    public enum Event: Sendable, Equatable {
        /// A HEADERS frame: decode `fieldSectionBytes`, then call
        /// `acceptHead` (`trailers == false`) or `acceptTrailers`.
        case fieldSection(trailers: Bool)
        /// Request content: this range of the input given to this read.
        case body(Range<Int>)
    }

    public private(set) var state = State.awaitingHead
    private var reader: H3FrameReader
    private var validator: RequestFieldValidator
    /// content-length of the head, if any.
    public private(set) var contentLength: Int64?
    /// DATA payload bytes received so far.
    public private(set) var bodyReceived: Int64 = 0

    /// - Parameters:
    ///   - allowConnectProtocol: we sent SETTINGS_ENABLE_CONNECT_PROTOCOL = 1
    ///     (RFC 9220 §3), so `:protocol` is allowed.
    ///   - limits: bounds on buffered frames (HEADERS).
    public init(allowConnectProtocol: Bool, limits: H3FrameReader.Limits = .init()) {
        reader = H3FrameReader(kind: .request, limits: limits)
        validator = RequestFieldValidator(allowProtocol: allowConnectProtocol)
    }

    /// The encoded field section of the last `.fieldSection` event.
    public var fieldSectionBytes: [UInt8] { reader.payload }

    /// True between frames: the stream may end here (§7.1).
    public var isAtFrameBoundary: Bool { reader.isAtFrameBoundary }

    /// Reads stream bytes up to the next event. Not to be called while a
    /// field section is being decoded.
    public mutating func read(_ input: UnsafeRawBufferPointer) throws(H3Error) -> (event: Event?, consumed: Int) {
        precondition(state != .decodingHead && state != .decodingTrailers, "read while a field section is pending")
        var i = 0
        while i < input.count {
            let (event, n) = try reader.read(UnsafeRawBufferPointer(rebasing: input[i...]))
            defer { i += n }
            switch event {
            case nil:
                continue
            case .headers:
                switch state {
                case .awaitingHead: state = .decodingHead
                case .body: state = .decodingTrailers
                default: throw .frameAfterTrailers
                }
                return (.fieldSection(trailers: state == .decodingTrailers), i + n)
            case .dataHeader(let length):
                switch state {
                case .awaitingHead: throw .dataBeforeHeaders
                case .body:
                    // A DATA frame announcing more than content-length allows
                    // is malformed before its bytes arrive (§4.1.2).
                    if let contentLength, length > UInt64(contentLength - bodyReceived) { throw .contentLengthMismatch }
                    continue
                default: throw .frameAfterTrailers
                }
            case .data(let r):
                bodyReceived += Int64(r.count)
                if let contentLength, bodyReceived > contentLength { throw .contentLengthMismatch }
                return (.body(r.lowerBound + i ..< r.upperBound + i), i + n)
            case .settings, .goaway, .cancelPush, .maxPushID:
                preconditionFailure("the request-stream reader refuses control frames")
            }
        }
        return (nil, input.count)
    }

    /// The decoded request head: validated into a `RequestHead`.
    public mutating func acceptHead(_ list: HeaderList) throws(H3Error) -> RequestHead {
        precondition(state == .decodingHead)
        let head: RequestHead
        do { head = try validator.build(list, trailers: false) } catch { throw H3Error(error) }
        contentLength = head.contentLength
        state = .body
        return head
    }

    /// The decoded trailer section: no pseudo-header fields (§4.3).
    public mutating func acceptTrailers(_ list: HeaderList) throws(H3Error) -> RequestHead {
        precondition(state == .decodingTrailers)
        let head: RequestHead
        do { head = try validator.build(list, trailers: true) } catch { throw H3Error(error) }
        state = .trailersReceived
        return head
    }

    /// The client ended the stream (FIN). With a field section still being
    /// decoded, call this after `acceptHead`/`acceptTrailers`.
    public mutating func finish() throws(H3Error) {
        precondition(state != .decodingHead && state != .decodingTrailers, "finish while a field section is pending")
        try reader.finish()
        switch state {
        case .awaitingHead, .decodingHead, .decodingTrailers: throw .requestIncomplete
        case .body, .trailersReceived:
            if let contentLength, contentLength != bodyReceived { throw .contentLengthMismatch }
            state = .finished
        case .finished: break
        }
    }
}
