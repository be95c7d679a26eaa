/// SHA-1 (FIPS 180-4 §6.1; RFC 3174), for the opening handshake only.
///
/// Theory of operation. RFC 6455 §4.2.2 step 5 derives `Sec-WebSocket-Accept`
/// from a SHA-1 hash of the client's key and a GUID. That is the only use, so
/// this is a small, allocation-free, streaming implementation: input is
/// gathered into a 64-byte block, each full block is compressed into the five
/// 32-bit state words (80 rounds, message schedule computed in a 16-word ring
/// to stay on the stack), and `finish` appends the padding of FIPS 180-4
/// §5.1.1 — a 1 bit, zeros, and the 64-bit big-endian message length in bits
/// — before writing the 20-byte digest big-endian.
///
/// SHA-1 is broken for collision resistance; that does not matter here — the
/// accept value only proves the server read the handshake (RFC 6455 §1.3),
/// it is not a security mechanism. Not for any other use.
///
/// Arithmetic on state words is modulo 2^32 by definition (FIPS 180-4 §3.2),
/// hence the wrapping operators.
public struct SHA1: Sendable {
    public static let digestLength = 20

    private var h0: UInt32 = 0x6745_2301
    private var h1: UInt32 = 0xEFCD_AB89
    private var h2: UInt32 = 0x98BA_DCFE
    private var h3: UInt32 = 0x1032_5476
    private var h4: UInt32 = 0xC3D2_E1F0
    /// The partial block, big-endian words filled byte by byte.
    private var block: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
    private var blockCount = 0
    private var totalBytes: UInt64 = 0

    public init() {}

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        for byte in bytes { append(byte) }
        // Wrapping: messages longer than 2^64 bytes cannot exist here.
        totalBytes &+= UInt64(bytes.count)
    }

    /// Pads, compresses the last block(s) and writes the 20-byte digest to
    /// the start of `output`, which must hold at least `digestLength` bytes.
    public mutating func finish(into output: UnsafeMutableRawBufferPointer) {
        precondition(output.count >= SHA1.digestLength)
        let bitLength = totalBytes &* 8  // modulo 2^64, as FIPS 180-4 §5.1.1 specifies
        append(0x80)
        while blockCount != 56 { append(0) }
        for shift in stride(from: 56, through: 0, by: -8) {
            append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
        }
        store(h0, at: 0, in: output)
        store(h1, at: 4, in: output)
        store(h2, at: 8, in: output)
        store(h3, at: 12, in: output)
        store(h4, at: 16, in: output)
    }

    private func store(_ word: UInt32, at offset: Int, in output: UnsafeMutableRawBufferPointer) {
        output[offset] = UInt8(truncatingIfNeeded: word >> 24)
        output[offset + 1] = UInt8(truncatingIfNeeded: word >> 16)
        output[offset + 2] = UInt8(truncatingIfNeeded: word >> 8)
        output[offset + 3] = UInt8(truncatingIfNeeded: word)
    }

    private mutating func append(_ byte: UInt8) {
        withUnsafeMutableBytes(of: &block) { $0[blockCount] = byte }
        blockCount += 1
        if blockCount == 64 {
            compress()
            blockCount = 0
        }
    }

    private mutating func compress() {
        var w: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32,
                UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeBytes(of: block) { src in
            withUnsafeMutableBytes(of: &w) { dst in
                for i in 0..<16 {
                    let word = UInt32(src[i * 4]) << 24 | UInt32(src[i * 4 + 1]) << 16
                        | UInt32(src[i * 4 + 2]) << 8 | UInt32(src[i * 4 + 3])
                    dst.storeBytes(of: word, toByteOffset: i * 4, as: UInt32.self)
                }
            }
        }
        var a = h0, b = h1, c = h2, d = h3, e = h4
        withUnsafeMutableBytes(of: &w) { ring in
            let words = ring.bindMemory(to: UInt32.self)
            for t in 0..<80 {
                let word: UInt32
                if t < 16 {
                    word = words[t]
                } else {
                    // FIPS 180-4 §6.1.2 step 1, kept in a 16-word ring.
                    let x = words[(t - 3) & 15] ^ words[(t - 8) & 15] ^ words[(t - 14) & 15] ^ words[t & 15]
                    word = rotl(x, 1)
                    words[t & 15] = word
                }
                let f: UInt32, k: UInt32
                switch t {
                case 0..<20: f = (b & c) | (~b & d); k = 0x5A82_7999
                case 20..<40: f = b ^ c ^ d; k = 0x6ED9_EBA1
                case 40..<60: f = (b & c) | (b & d) | (c & d); k = 0x8F1B_BCDC
                default: f = b ^ c ^ d; k = 0xCA62_C1D6
                }
                let temp = rotl(a, 5) &+ f &+ e &+ k &+ word
                e = d
                d = c
                c = rotl(b, 30)
                b = a
                a = temp
            }
        }
        h0 &+= a; h1 &+= b; h2 &+= c; h3 &+= d; h4 &+= e
    }

    @inline(__always)
    private func rotl(_ x: UInt32, _ n: UInt32) -> UInt32 { (x << n) | (x >> (32 - n)) }
}
