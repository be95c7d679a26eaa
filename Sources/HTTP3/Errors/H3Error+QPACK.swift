// QPACK errors (RFC 9204 §6), all connection errors: the decoder's view of the
// dynamic table can no longer be trusted to match the encoder's.

import HTTPFields

extension H3Error {
    /// Where a primitive (integer, Huffman) failed decides the code.
    public enum QPACKContext: Sendable { case fieldSection, encoderStream, decoderStream }

    /// A failed prefixed integer or Huffman string in `context`.
    public init(_ e: FieldCodingError, in context: QPACKContext) {
        let code: H3ErrorCode = switch context {
        case .fieldSection: .qpackDecompressionFailed
        case .encoderStream: .qpackEncoderStreamError
        case .decoderStream: .qpackDecoderStreamError
        }
        self.init(.connection, code, e.reason)
    }

    // §4.5.1.1 Required Insert Count: "If the decoder encounters a value of
    // EncodedInsertCount that could not have been produced by a conformant
    // encoder, it MUST treat this as a connection error of type
    // QPACK_DECOMPRESSION_FAILED."
    public static let qpackBadRequiredInsertCount = H3Error(.connection, .qpackDecompressionFailed, "QPACK Required Insert Count impossible for the table")
    // §4.5.1.2: Base = RIC - DeltaBase - 1 must not be negative.
    public static let qpackNegativeBase = H3Error(.connection, .qpackDecompressionFailed, "QPACK Base below zero")
    // §2.2.3: "a reference ... to a dynamic table entry that has already been
    // evicted or that has an absolute index greater than or equal to the
    // declared Required Insert Count"; a static index past Appendix A.
    public static let qpackBadDynamicReference = H3Error(.connection, .qpackDecompressionFailed, "QPACK field line references an entry outside the Required Insert Count or evicted")
    public static let qpackBadStaticReference = H3Error(.connection, .qpackDecompressionFailed, "QPACK static table index beyond Appendix A")
    // §2.2.1: "If it encounters a Required Insert Count larger than expected,
    // it MAY treat this as a connection error of type
    // QPACK_DECOMPRESSION_FAILED" — we do.
    public static let qpackRequiredInsertCountTooLarge = H3Error(.connection, .qpackDecompressionFailed, "QPACK Required Insert Count larger than the references need")
    public static let qpackTruncatedSection = H3Error(.connection, .qpackDecompressionFailed, "QPACK field section ends inside a representation")
    // §2.1.2: "If a decoder encounters more blocked streams than it promised
    // to support, it MUST treat this as a connection error of type
    // QPACK_DECOMPRESSION_FAILED."
    public static let qpackTooManyBlockedStreams = H3Error(.connection, .qpackDecompressionFailed, "more blocked streams than SETTINGS_QPACK_BLOCKED_STREAMS")
    public static let qpackSecondBlockedSection = H3Error(.connection, .qpackDecompressionFailed, "field section on a stream that already has one blocked")

    // §4.3.1: capacity "MUST NOT exceed" our maximum → encoder stream error;
    // §3.2.2 an entry larger than the capacity; §2.2.3 an evicted or absent
    // entry referenced by an encoder instruction.
    public static let qpackCapacityTooLarge = H3Error(.connection, .qpackEncoderStreamError, "QPACK dynamic table capacity above SETTINGS_QPACK_MAX_TABLE_CAPACITY")
    public static let qpackEntryTooLarge = H3Error(.connection, .qpackEncoderStreamError, "QPACK insert larger than the dynamic table capacity")
    public static let qpackEncoderBadReference = H3Error(.connection, .qpackEncoderStreamError, "QPACK encoder instruction references an absent entry")
    public static let qpackEncoderBadStaticReference = H3Error(.connection, .qpackEncoderStreamError, "QPACK encoder instruction references a static index beyond Appendix A")
    public static let qpackEncoderInstructionTooLong = H3Error(.connection, .qpackEncoderStreamError, "QPACK encoder instruction longer than any valid insert")

    // §4.4.1: a Section Acknowledgment for a stream with nothing
    // unacknowledged; §4.4.3: an Insert Count Increment of zero or past the
    // inserts sent — both QPACK_DECODER_STREAM_ERROR. This server's encoder
    // never inserts, so any acknowledgment or increment is one.
    public static let qpackUnexpectedAcknowledgment = H3Error(.connection, .qpackDecoderStreamError, "QPACK Section Acknowledgment with no section outstanding")
    public static let qpackBadInsertCountIncrement = H3Error(.connection, .qpackDecoderStreamError, "QPACK Insert Count Increment of zero or past the inserts sent")
}
