// Prefixed integers and string literals (RFC 9204 §4.1) with the error of
// the place they are read from: a field section is complete when decoded,
// so running out is QPACK_DECOMPRESSION_FAILED; on the encoder stream it only
// means the rest has not arrived yet (nil).

import HTTPFields

extension QPACKDecoder {
    func sectionInteger(_ s: UnsafeRawBufferPointer, at i: Int, prefixBits: Int) throws(H3Error) -> (Int, Int) {
        do { return try IntegerCoding.decode(s, at: i, prefixBits: prefixBits) } catch {
            throw error == .integerTruncated ? .qpackTruncatedSection : H3Error(error, in: .fieldSection)
        }
    }

    /// §4.1.2: H bit just above the `prefixBits`-bit length.
    func sectionString(_ s: UnsafeRawBufferPointer, at i: Int, prefixBits: Int, to out: inout [UInt8]) throws(H3Error) -> Int {
        guard i < s.count else { throw .qpackTruncatedSection }
        let huffman = s[i] & (1 << prefixBits) != 0
        let (length, n) = try sectionInteger(s, at: i, prefixBits: prefixBits)
        guard length <= s.count - i - n else { throw .qpackTruncatedSection }
        let raw = UnsafeRawBufferPointer(rebasing: s[i + n ..< i + n + length])
        if huffman {
            do { try Huffman.decode(raw, to: &out) } catch { throw H3Error(error, in: .fieldSection) }
        } else {
            out.append(contentsOf: raw)
        }
        return n + length
    }

    func streamInteger(_ b: UnsafeRawBufferPointer, at i: Int, prefixBits: Int) throws(H3Error) -> (Int, Int)? {
        do { return try IntegerCoding.decode(b, at: i, prefixBits: prefixBits) } catch {
            if error == .integerTruncated { return nil }
            throw H3Error(error, in: .encoderStream)
        }
    }

    func streamString(_ b: UnsafeRawBufferPointer, at i: Int, prefixBits: Int, to out: inout [UInt8]) throws(H3Error) -> Int? {
        guard i < b.count else { return nil }
        let huffman = b[i] & (1 << prefixBits) != 0
        guard let (length, n) = try streamInteger(b, at: i, prefixBits: prefixBits) else { return nil }
        // A string longer than the capacity (even Huffman-coded: ≥ 5 bits a
        // byte) can never fit an entry: refuse it now rather than wait for it.
        guard length <= 4 * maxTableCapacity + 32 else { throw .qpackEncoderInstructionTooLong }
        guard length <= b.count - i - n else { return nil }
        let raw = UnsafeRawBufferPointer(rebasing: b[i + n ..< i + n + length])
        if huffman {
            do { try Huffman.decode(raw, to: &out) } catch { throw H3Error(error, in: .encoderStream) }
        } else {
            out.append(contentsOf: raw)
        }
        return n + length
    }
}
