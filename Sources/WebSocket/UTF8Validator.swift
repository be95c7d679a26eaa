/// Incremental UTF-8 validation for text messages (RFC 6455 §5.6, §8.1).
///
/// Theory of operation. A text message may be split across frames, and each
/// frame across reads, at any byte — including inside a multi-byte sequence —
/// so the validator carries its position in the current sequence between
/// calls: how many continuation bytes are still due and the range the next
/// one must fall in. The ranges are those of RFC 3629 §4 (Unicode Table 3-7),
/// which rule out everything RFC 6455 §8.1 means by "not valid UTF-8":
///
///     first byte   second     third    fourth
///     00–7F
///     C2–DF        80–BF                          (C0, C1: overlong)
///     E0           A0–BF      80–BF               (E0 80–9F: overlong)
///     E1–EC        80–BF      80–BF
///     ED           80–9F      80–BF               (ED A0–BF: surrogates D800–DFFF)
///     EE–EF        80–BF      80–BF
///     F0           90–BF      80–BF    80–BF      (F0 80–8F: overlong)
///     F1–F3        80–BF      80–BF    80–BF
///     F4           80–8F      80–BF    80–BF      (F4 90+: above U+10FFFF)
///                                                 (F5–FF: never valid)
///
/// Failing on the first bad byte, not at the end of the message, is what
/// Autobahn case 6 calls "fail fast". A message that ends between a lead byte
/// and its last continuation byte is invalid too: the decoder asks
/// `isComplete` at the end of each text message (and of a close reason).
///
/// Runs of ASCII are skipped eight bytes at a time.
public struct UTF8Validator: Sendable, Equatable {
    /// Continuation bytes still due in the current sequence (0 between sequences).
    @usableFromInline var pending: UInt8 = 0
    /// The inclusive range the next continuation byte must fall in.
    @usableFromInline var lower: UInt8 = 0x80
    @usableFromInline var upper: UInt8 = 0xBF

    public init() {}

    /// True when the bytes so far end on a character boundary.
    @inlinable
    public var isComplete: Bool { pending == 0 }

    /// Validates the next bytes of the stream. Returns false at the first byte
    /// that cannot continue valid UTF-8; the state is then meaningless.
    public mutating func validate(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let count = bytes.count
        var i = 0
        var pending = self.pending
        var lower = self.lower
        var upper = self.upper
        while i < count {
            if pending == 0 {
                // ASCII fast path: eight bytes with no high bit set.
                while i + 8 <= count {
                    let word = base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                    if word & 0x8080_8080_8080_8080 != 0 { break }
                    i += 8
                }
                if i == count { break }
                let byte = base.load(fromByteOffset: i, as: UInt8.self)
                i += 1
                switch byte {
                case 0x00...0x7F: continue
                case 0xC2...0xDF: pending = 1; lower = 0x80; upper = 0xBF
                case 0xE0: pending = 2; lower = 0xA0; upper = 0xBF
                case 0xE1...0xEC, 0xEE...0xEF: pending = 2; lower = 0x80; upper = 0xBF
                case 0xED: pending = 2; lower = 0x80; upper = 0x9F
                case 0xF0: pending = 3; lower = 0x90; upper = 0xBF
                case 0xF1...0xF3: pending = 3; lower = 0x80; upper = 0xBF
                case 0xF4: pending = 3; lower = 0x80; upper = 0x8F
                default: return false  // 80–C1, F5–FF
                }
            } else {
                let byte = base.load(fromByteOffset: i, as: UInt8.self)
                i += 1
                guard byte >= lower && byte <= upper else { return false }
                pending -= 1
                lower = 0x80
                upper = 0xBF
            }
        }
        self.pending = pending
        self.lower = lower
        self.upper = upper
        return true
    }

    /// Validates a whole, self-contained byte string (a close reason).
    public static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var validator = UTF8Validator()
        return validator.validate(bytes) && validator.isComplete
    }
}
