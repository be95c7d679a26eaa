/// Client-to-server masking (RFC 6455 §5.3).
///
///     j                   = i MOD 4
///     transformed-octet-i = original-octet-i XOR masking-key-octet-j
///
/// Theory of operation. A frame's payload may arrive in several reads, so
/// the caller says where in the payload the bytes start (`phase`, the count
/// of payload bytes already unmasked, mod 4); the key is rotated by that
/// much and then applied eight bytes at a time (the 4-byte key repeated
/// twice in a 64-bit word), with a byte loop for the tail. Masking and
/// unmasking are the same operation. The key is the four key bytes in wire
/// order, loaded as a native `UInt32` from memory, so no byte swapping is
/// needed on either endianness.
public enum Masking {
    /// XORs `bytes` in place with `key`, starting at payload offset `phase`.
    @inlinable
    public static func apply(_ bytes: UnsafeMutableRawBufferPointer, key: MaskingKey, phase: Int) {
        guard let base = bytes.baseAddress else { return }
        let count = bytes.count
        let key = key.rotated(by: phase)
        let word = UInt64(key.rawValue) << 32 | UInt64(key.rawValue)  // both halves equal: order-independent
        var i = 0
        while i + 8 <= count {
            let v = base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            base.storeBytes(of: v ^ word, toByteOffset: i, as: UInt64.self)
            i += 8
        }
        withUnsafeBytes(of: key.rawValue) { k in
            var j = 0
            while i < count {
                base.storeBytes(of: base.load(fromByteOffset: i, as: UInt8.self) ^ k[j & 3], toByteOffset: i, as: UInt8.self)
                i += 1
                j += 1
            }
        }
    }
}

/// The four masking-key bytes of a frame header, in wire order in memory.
public struct MaskingKey: Equatable, Sendable {
    public var rawValue: UInt32

    @inlinable
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The key as the bytes `b0 b1 b2 b3` appear on the wire.
    @inlinable
    public init(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8) {
        var raw: UInt32 = 0
        withUnsafeMutableBytes(of: &raw) { $0[0] = b0; $0[1] = b1; $0[2] = b2; $0[3] = b3 }
        rawValue = raw
    }

    /// The key as seen from payload offset `phase`: byte `phase mod 4` first.
    @inlinable
    public func rotated(by phase: Int) -> MaskingKey {
        let p = phase & 3
        if p == 0 { return self }
        var out: UInt32 = 0
        withUnsafeBytes(of: rawValue) { k in
            withUnsafeMutableBytes(of: &out) { o in
                for j in 0..<4 { o[j] = k[(p + j) & 3] }
            }
        }
        return MaskingKey(rawValue: out)
    }
}
