// Incremental HTTP/3 frame reader for one stream (RFC 9114 §7).
//
// Theory of operation. A stream's bytes arrive in pieces split anywhere; the
// reader is a small state machine over them:
//
//     header ──(type, length)──▶ payload of HEADERS / SETTINGS / GOAWAY /
//       ▲                          CANCEL_PUSH / MAX_PUSH_ID: buffered whole,
//       │                          then one event
//       │                      ──▶ DATA: `.dataHeader`, then `.data` slices
//       │                          of the caller's input (no copy)
//       │                      ──▶ unknown or reserved type: skipped (§9
//       └──────────────────────────  "MUST ignore"), nothing buffered
//
// `read(_:)` consumes bytes until it has one event or the input is used up,
// and returns the event with the number of bytes consumed; the caller feeds
// the rest again. The frame header (two variable-length integers, at most 16
// bytes) is parsed in place when whole and gathered in a 16-byte scratch
// when split. What may occur on which stream (§7.2 table, §6.2.1, §4.1) is
// checked as soon as the type is known, before any payload is buffered; the
// order of HEADERS and DATA on a request stream is `H3RequestStream`'s job.
//
// Limits: buffered payloads are bounded per type (`Limits`), so a peer cannot
// make us hold more than those bounds on any stream; DATA and unknown frames
// are never buffered. A single-integer frame (GOAWAY, CANCEL_PUSH,
// MAX_PUSH_ID) must hold exactly one integer (§7.1: H3_FRAME_ERROR).

import Core

/// What a stream carries, which decides the frames allowed on it (§7.2).
public enum H3FrameStreamKind: Sendable, Equatable {
    /// A client-initiated bidirectional stream (§6.1), read by a server.
    case request
    /// The peer's control stream (§6.2.1), read by a server.
    case control
}

public struct H3FrameReader: Sendable {
    /// Bounds on buffered payloads.
    public struct Limits: Sendable, Equatable {
        /// Longest HEADERS payload (an encoded field section). Beyond it the
        /// request stream fails with `headersFrameTooLarge`.
        public var maxHeadersLength: Int
        /// Longest SETTINGS payload; beyond it H3_EXCESSIVE_LOAD.
        public var maxSettingsLength: Int
        /// WebTransport is on: the WT_STREAM type (0x41) is valid only as the
        /// first bytes of a request stream, which the session reads itself;
        /// as a frame anywhere else it is H3_FRAME_ERROR
        /// (draft-ietf-webtrans-http3 §4.3).
        public var rejectsWebTransportStreamFrame: Bool

        public init(maxHeadersLength: Int = 64 * 1024, maxSettingsLength: Int = 4096, rejectsWebTransportStreamFrame: Bool = false) {
            self.maxHeadersLength = maxHeadersLength
            self.maxSettingsLength = maxSettingsLength
            self.rejectsWebTransportStreamFrame = rejectsWebTransportStreamFrame
        }
    }

    public enum Event: Sendable, Equatable {
        /// A whole HEADERS frame; its payload is `payload` until the next read.
        case headers
        /// A DATA frame of `length` bytes begins (also for empty ones).
        case dataHeader(length: UInt64)
        /// DATA payload bytes: this range of the input given to this read.
        case data(Range<Int>)
        case settings(H3Settings)
        case goaway(UInt64)
        case cancelPush(UInt64)
        case maxPushID(UInt64)
    }

    private enum State: Sendable {
        case header
        case buffering(H3FrameType, remaining: Int)
        case data(remaining: UInt64)
        case skipping(remaining: UInt64)
    }

    public let kind: H3FrameStreamKind
    public let limits: Limits
    private var state = State.header
    private var headerScratch: [UInt8] = []
    /// The payload of the last buffered frame.
    public private(set) var payload: [UInt8] = []

    /// Gives back the payload's storage, which the reader otherwise keeps
    /// for the next frame: for a stream whose frames are few and far
    /// between (the control stream), whose reader lives as long as the
    /// connection.
    public mutating func releasePayload() {
        payload = []
    }
    private var framesSeen = 0

    public init(kind: H3FrameStreamKind, limits: Limits = Limits()) {
        self.kind = kind
        self.limits = limits
        headerScratch.reserveCapacity(16)
    }

    /// True between frames: a stream may end here cleanly (§7.1).
    public var isAtFrameBoundary: Bool {
        if case .header = state { return headerScratch.isEmpty }
        return false
    }

    /// The stream ended (FIN): a truncated last frame is H3_FRAME_ERROR (§7.1).
    public func finish() throws(H3Error) {
        guard isAtFrameBoundary else { throw .frameTruncatedAtEnd }
    }

    /// Consumes bytes up to and including the next event.
    /// - Returns: the event (nil when the input ran out first) and the bytes used.
    public mutating func read(_ input: UnsafeRawBufferPointer) throws(H3Error) -> (event: Event?, consumed: Int) {
        var i = 0
        while true {
            switch state {
            case .header:
                guard let (type, length, n) = takeHeader(input, at: i) else { return (nil, input.count) }
                i += n
                if let event = try begin(type, length) { return (event, i) }
            case .buffering(let type, let remaining):
                let take = min(remaining, input.count - i)
                payload.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[i ..< i + take]))
                i += take
                guard take == remaining else {
                    state = .buffering(type, remaining: remaining - take)
                    return (nil, i)
                }
                state = .header
                return (try complete(type), i)
            case .data(let remaining):
                if remaining == 0 { state = .header; continue }
                guard i < input.count else { return (nil, i) }
                let take = Int(min(remaining, UInt64(input.count - i)))
                state = remaining == UInt64(take) ? .header : .data(remaining: remaining - UInt64(take))
                return (.data(i ..< i + take), i + take)
            case .skipping(let remaining):
                let take = Int(min(remaining, UInt64(input.count - i)))
                i += take
                guard UInt64(take) == remaining else {
                    state = .skipping(remaining: remaining - UInt64(take))
                    return (nil, i)
                }
                state = .header
            }
            if i == input.count, case .header = state { return (nil, i) }
        }
    }

    /// The frame header at `input[at]`, joined with bytes kept from earlier
    /// reads; nil (with the bytes kept) when still incomplete.
    private mutating func takeHeader(_ input: UnsafeRawBufferPointer, at start: Int) -> (UInt64, UInt64, Int)? {
        if headerScratch.isEmpty, let (t, n) = QUICVarInt.decode(input, at: start),
           let (l, m) = QUICVarInt.decode(input, at: start + n) {
            return (t, l, n + m)
        }
        var i = start
        while i < input.count {
            headerScratch.append(input[i])
            i += 1
            let parsed: (UInt64, UInt64)? = headerScratch.withUnsafeBytes { h in
                guard let (t, n) = QUICVarInt.decode(h, at: 0), let (l, m) = QUICVarInt.decode(h, at: n),
                      n + m == h.count else { return nil }
                return (t, l)
            }
            if let (t, l) = parsed {
                headerScratch.removeAll(keepingCapacity: true)
                return (t, l, i - start)
            }
        }
        return nil
    }

    /// Checks a frame type against the stream and picks how to read it.
    private mutating func begin(_ rawType: UInt64, _ length: UInt64) throws(H3Error) -> Event? {
        let type = H3FrameType(rawValue: rawType)
        framesSeen += 1
        if kind == .control && framesSeen == 1 && type != .settings { throw .missingSettings }
        if type.isHTTP2Only { throw .http2FrameType }
        if limits.rejectsWebTransportStreamFrame && rawType == WebTransportStreamHeader.bidiSignal {
            throw .misplacedWebTransportStream
        }
        switch (kind, type) {
        case (.request, .data), (.request, .headers):
            break
        case (.request, .settings), (.request, .goaway), (.request, .cancelPush), (.request, .maxPushID):
            throw .controlFrameOnRequestStream
        case (.request, .pushPromise):
            // §7.2.5: "A server MUST treat the receipt of a PUSH_PROMISE
            // frame as a connection error of type H3_FRAME_UNEXPECTED."
            throw .pushPromiseFromClient
        case (.control, .data): throw .dataOnControlStream
        case (.control, .headers): throw .headersOnControlStream
        case (.control, .pushPromise): throw .pushPromiseOnControlStream
        case (.control, .settings):
            if framesSeen > 1 { throw .secondSettings }
        case (.control, .goaway), (.control, .cancelPush), (.control, .maxPushID):
            // One variable-length integer: 1 to 8 bytes (§7.2.3, §7.2.6, §7.2.7).
            guard length >= 1 && length <= 8 else { throw .framePayloadMismatch }
        default:
            state = .skipping(remaining: length)
            return nil
        }
        if type == .data {
            state = length == 0 ? .header : .data(remaining: length)
            return .dataHeader(length: length)
        }
        let limit = type == .headers ? limits.maxHeadersLength : type == .settings ? limits.maxSettingsLength : 8
        guard length <= UInt64(limit) else { throw type == .headers ? .headersFrameTooLarge : .frameTooLarge }
        payload.removeAll(keepingCapacity: true)
        state = .buffering(type, remaining: Int(length))
        if length == 0 { state = .header; return try complete(type) }
        return nil
    }

    /// The event for a fully buffered frame.
    private func complete(_ type: H3FrameType) throws(H3Error) -> Event {
        switch type {
        case .headers: return .headers
        case .settings:
            let decoded: Result<H3Settings, H3Error> = payload.withUnsafeBytes { p in
                do throws(H3Error) { return .success(try H3Settings.decode(p)) } catch { return .failure(error) }
            }
            return .settings(try decoded.get())
        default:
            let v: UInt64? = payload.withUnsafeBytes { p in
                guard let (v, n) = QUICVarInt.decode(p, at: 0), n == p.count else { return nil }
                return v
            }
            guard let v else { throw .framePayloadMismatch }
            switch type {
            case .goaway: return .goaway(v)
            case .cancelPush: return .cancelPush(v)
            default: return .maxPushID(v)
            }
        }
    }
}
