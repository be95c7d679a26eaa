// Connection IDs (RFC 9000 §5.1, §17.2).
//
// In QUIC versions 1 and 2 a connection ID is 0 to 20 bytes ("Endpoints that
// receive a version 1 long header with a value larger than 20 MUST drop the
// packet", §17.2). It is stored inline — no allocation — so it can be a
// dictionary key, sit in a header struct and be copied freely. Longer IDs of
// other versions (RFC 8999 §5.1 allows 255) are only ever seen as spans, to
// echo them in a Version Negotiation packet.

import Core

/// A connection ID of at most 20 bytes, stored inline.
public struct ConnectionID: Hashable, Sendable, CustomStringConvertible {
    /// The longest connection ID of QUIC v1 and v2 (RFC 9000 §17.2).
    public static let maxLength = 20

    // 20 bytes in declaration order; bytes past `length` stay zero so
    // equality and hashing compare only the ID. Declared before `length` so
    // the struct packs into 21 bytes (stride 24).
    private var storage: (UInt64, UInt64, UInt32) = (0, 0, 0)
    public private(set) var length: UInt8

    public static let empty = ConnectionID()

    public init() {
        length = 0
    }

    /// nil when `bytes` is longer than 20.
    public init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count <= Self.maxLength else { return nil }
        length = UInt8(bytes.count)
        if bytes.count > 0 {
            withUnsafeMutableBytes(of: &storage) { $0.baseAddress!.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
        }
    }

    public init?(_ bytes: [UInt8]) {
        guard let id = bytes.withUnsafeBytes({ ConnectionID($0) }) else { return nil }
        self = id
    }

    public var count: Int { Int(length) }
    public var isEmpty: Bool { length == 0 }

    /// Calls `body` with the ID's bytes.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeBytes(of: storage) { try body(UnsafeRawBufferPointer(rebasing: $0[0..<Int(length)])) }
    }

    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    public static func == (lhs: ConnectionID, rhs: ConnectionID) -> Bool {
        lhs.length == rhs.length && lhs.storage.0 == rhs.storage.0 && lhs.storage.1 == rhs.storage.1
            && lhs.storage.2 == rhs.storage.2
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(length)
        hasher.combine(storage.0)
        hasher.combine(storage.1)
        hasher.combine(storage.2)
    }

    public var description: String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}
