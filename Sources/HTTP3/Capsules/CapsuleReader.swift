// The Capsule Protocol (RFC 9297 §3.2) read from a request stream's data,
// sans-I/O: bytes in, whole capsules out, split at any point.
//
//   Capsule { Capsule Type (i), Capsule Length (i), Capsule Value (..) }
//
// Capsules of the types the caller asks for are delivered whole, as a view
// into the caller's bytes when the capsule arrived in one piece and from a
// buffer of ours otherwise; their value is bounded (`maxValueLength`), since
// buffering a whole capsule holds flow control (§3.2 "SHOULD be avoided"):
// the types we read are all small. Every other type is skipped as it
// streams past, never buffered (§3.2: "Endpoints which receive a Capsule
// with an unknown Capsule Type MUST silently drop that Capsule").
//
// A stream that ends inside a capsule is a malformed message (§3.3): the
// caller asks `finish()` at the FIN.

import Core

public struct CapsuleError: Error, Equatable, Sendable {
    /// The HTTP/3 error code the request stream is reset with.
    public let code: H3ErrorCode
    public let reason: StaticString

    public static func == (a: CapsuleError, b: CapsuleError) -> Bool { a.code == b.code && a.reason.sameText(as: b.reason) }

    /// §3.3: "... the last capsule on the stream was truncated".
    public static let truncated = CapsuleError(code: .messageError, reason: "stream ended inside a capsule")
    /// A capsule we read is above the bound we buffer.
    public static let valueTooLarge = CapsuleError(code: .excessiveLoad, reason: "capsule value too large")
    /// §3.3: a capsule's value holds more or fewer bytes than its fields.
    public static let lengthMismatch = CapsuleError(code: .messageError, reason: "capsule value does not match its fields")
    /// WT_CLOSE_SESSION's message is over 1024 bytes or not UTF-8 (WebTransport draft §6).
    public static let badCloseMessage = CapsuleError(code: .messageError, reason: "WT_CLOSE_SESSION message too long or not UTF-8")
    /// A stream count over 2^60 (WebTransport draft §5.6.2, §5.6.3).
    public static let streamLimitTooLarge = CapsuleError(code: WebTransportErrorCode.flowControlError,
                                                         reason: "WT_MAX_STREAMS / WT_STREAMS_BLOCKED over 2^60")
}

public struct CapsuleReader: Sendable {
    /// The largest value of a delivered capsule.
    public let maxValueLength: Int
    private let delivers: @Sendable (UInt64) -> Bool

    private enum State {
        /// Reading the Type and Length varints (partial ones in `header`).
        case header
        /// In a delivered capsule's value, collecting it in `buffer`.
        case collecting(type: UInt64, remaining: Int)
        /// In a skipped capsule's value.
        case skipping(remaining: UInt64)
    }

    private var state = State.header
    private var header: [UInt8] = []
    private var buffer: [UInt8] = []
    /// Set when `onCapsule` asked to stop after the capsule it was given.
    private var stopRequested = false

    /// `delivers` says which capsule types are wanted; the rest are skipped.
    public init(maxValueLength: Int = 16 << 10, delivers: @escaping @Sendable (UInt64) -> Bool) {
        self.maxValueLength = maxValueLength
        self.delivers = delivers
    }

    /// Whether the last byte read ended a capsule (a FIN here is clean).
    public var isAtCapsuleBoundary: Bool {
        if case .header = state { return header.isEmpty }
        return false
    }

    /// Reads all of `input`, calling `onCapsule(type, value)` for each
    /// complete capsule of a delivered type. `value` is valid only during
    /// the call. After an error the reader must not be used again.
    public mutating func read(_ input: UnsafeRawBufferPointer,
                              onCapsule: (UInt64, UnsafeRawBufferPointer) -> Void) throws(CapsuleError) {
        _ = try readWhile(input, onCapsule: { type, value in
            onCapsule(type, value)
            return true
        })
    }

    /// Reads `input` as `read(_:onCapsule:)` does while `onCapsule` returns
    /// true: it stops right after a delivered capsule for which it returns
    /// false, and returns how many bytes of `input` it read. A caller that must see whether any byte
    /// follows a capsule (WT_CLOSE_SESSION) needs this: capsules of types it
    /// does not deliver are otherwise skipped without a call.
    public mutating func readWhile(_ input: UnsafeRawBufferPointer,
                                   onCapsule: (UInt64, UnsafeRawBufferPointer) -> Bool) throws(CapsuleError) -> Int {
        var i = 0
        stopRequested = false
        while i < input.count && !stopRequested {
            switch state {
            case .header:
                i = try readHeader(input, from: i, onCapsule: onCapsule)
            case .collecting(let type, let remaining):
                let n = min(remaining, input.count - i)
                buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[i..<(i + n)]))
                i += n
                if n == remaining {
                    if !buffer.withUnsafeBytes({ onCapsule(type, $0) }) { stopRequested = true }
                    buffer.removeAll(keepingCapacity: true)
                    state = .header
                } else {
                    state = .collecting(type: type, remaining: remaining - n)
                }
            case .skipping(let remaining):
                let n = Int(min(remaining, UInt64(input.count - i)))
                i += n
                state = UInt64(n) == remaining ? .header : .skipping(remaining: remaining - UInt64(n))
            }
        }
        return i
    }

    /// At the end of the stream: an error if it ended inside a capsule.
    public func finish() throws(CapsuleError) {
        guard isAtCapsuleBoundary else { throw .truncated }
    }

    /// Parses Type and Length at `start` (completing a partial header kept
    /// from earlier input); returns where the value begins.
    private mutating func readHeader(_ input: UnsafeRawBufferPointer, from start: Int,
                                     onCapsule: (UInt64, UnsafeRawBufferPointer) -> Bool) throws(CapsuleError) -> Int {
        // The fast path: the whole header (and often the value) in `input`.
        if header.isEmpty, let (type, length, headerLength) = Self.parseHeader(input, at: start) {
            return try begin(type: type, length: length, input: input, valueStart: start + headerLength, onCapsule: onCapsule)
        }
        // A header split across reads: gather bytes until it parses. A
        // header is at most 16 bytes (two 8-byte varints).
        let before = header.count
        let take = min(16 - before, input.count - start)
        header.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[start..<(start + take)]))
        let parsed = header.withUnsafeBytes { Self.parseHeader($0, at: 0) }
        guard let (type, length, headerLength) = parsed else {
            return start + take  // still partial (16 bytes always parse)
        }
        header.removeAll(keepingCapacity: true)
        return try begin(type: type, length: length, input: input, valueStart: start + headerLength - before, onCapsule: onCapsule)
    }

    private mutating func begin(type: UInt64, length: UInt64, input: UnsafeRawBufferPointer, valueStart: Int,
                                onCapsule: (UInt64, UnsafeRawBufferPointer) -> Bool) throws(CapsuleError) -> Int {
        guard delivers(type) else {
            state = length == 0 ? .header : .skipping(remaining: length)
            return valueStart
        }
        guard length <= UInt64(maxValueLength) else { throw .valueTooLarge }
        let n = Int(length)
        if input.count - valueStart >= n {
            if !onCapsule(type, UnsafeRawBufferPointer(rebasing: input[valueStart..<(valueStart + n)])) { stopRequested = true }
            state = .header
            return valueStart + n
        }
        buffer.reserveCapacity(n)
        state = .collecting(type: type, remaining: n)
        return valueStart
    }

    private static func parseHeader(_ bytes: UnsafeRawBufferPointer, at start: Int) -> (UInt64, UInt64, Int)? {
        guard let (type, a) = QUICVarInt.decode(bytes, at: start),
              let (length, b) = QUICVarInt.decode(bytes, at: start + a) else { return nil }
        return (type, length, a + b)
    }
}

/// Writes capsules (§3.2).
public enum CapsuleWriter {
    /// Appends a capsule of `type` with `value` to `out`.
    public static func append(type: UInt64, value: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        QUICVarInt.append(type, to: &out)
        QUICVarInt.append(UInt64(value.count), to: &out)
        out.append(contentsOf: value)
    }
}
