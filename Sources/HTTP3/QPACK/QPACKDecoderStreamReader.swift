// The peer's decoder stream, read by this server's encoder (RFC 9204 §4.4).
//
// Our encoder never inserts into the dynamic table (QPACKEncoder), so:
//   * a Section Acknowledgment (§4.4.1) always refers to a stream "on which
//     every encoded field section with a non-zero Required Insert Count has
//     already been acknowledged" → QPACK_DECODER_STREAM_ERROR;
//   * an Insert Count Increment (§4.4.3) of zero, or any increment at all
//     (it would raise the Known Received Count beyond the zero entries we
//     sent) → QPACK_DECODER_STREAM_ERROR;
//   * a Stream Cancellation (§4.4.2) is accepted and reported.
// Instructions may be split anywhere; a partial one (at most 11 bytes: a
// 62-bit stream ID) is kept until the rest arrives.

import HTTPFields

public struct QPACKDecoderStreamReader: Sendable {
    private var pending: [UInt8] = []

    public init() {}

    /// Consumes decoder-stream bytes. - Returns: the streams cancelled.
    public mutating func read(_ bytes: UnsafeRawBufferPointer) throws(H3Error) -> [UInt64] {
        pending.append(contentsOf: bytes)
        var cancelled: [UInt64] = []
        var i = 0
        let r: Result<Int, H3Error> = pending.withUnsafeBytes { p in
            do throws(H3Error) {
                while i < p.count {
                    let first = p[i]
                    let prefix = first & 0x80 != 0 ? 7 : 6
                    let v: (Int, Int)
                    do throws(FieldCodingError) { v = try IntegerCoding.decode(p, at: i, prefixBits: prefix) } catch {
                        if error == .integerTruncated { break }
                        throw H3Error(error, in: .decoderStream)
                    }
                    if first & 0x80 != 0 { throw .qpackUnexpectedAcknowledgment }
                    if first & 0x40 == 0 { throw .qpackBadInsertCountIncrement }
                    cancelled.append(UInt64(v.0))
                    i += v.1
                }
                return .success(i)
            } catch { return .failure(error) }
        }
        pending.removeSubrange(0 ..< (try r.get()))
        return cancelled
    }
}
