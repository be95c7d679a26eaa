// Failures of the primitive field codings shared by HPACK and QPACK: prefixed
// integers (RFC 7541 §5.1, RFC 9204 §4.1.1) and Huffman string literals
// (RFC 7541 §5.2, RFC 9204 §4.1.2).
//
// The scope and the wire code are not decided here: the same malformed integer
// is a COMPRESSION_ERROR in an HPACK block, a QPACK_DECOMPRESSION_FAILED in a
// QPACK field section and a QPACK_ENCODER_STREAM_ERROR on the encoder stream.
// Each compressor maps these cases to its own error catalogue, once
// (`HPACKError.init(_:)`, `QPACKError.init(_:in:)`).

/// A prefixed-integer or Huffman decoding failure.
public enum FieldCodingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The integer runs past the end of the input.
    case integerTruncated
    /// The integer exceeds `maxPrefixedInteger`.
    case integerOverflow
    /// RFC 7541 §5.2: "A Huffman-encoded string literal containing the EOS
    /// symbol MUST be treated as a decoding error".
    case huffmanEOS
    /// RFC 7541 §5.2: padding longer than 7 bits or not the most significant
    /// bits of EOS (ones) "MUST be treated as a decoding error".
    case huffmanPadding

    /// A fixed description.
    public var reason: StaticString {
        switch self {
        case .integerTruncated: "prefixed integer truncated"
        case .integerOverflow: "prefixed integer too large"
        case .huffmanEOS: "Huffman string contains EOS"
        case .huffmanPadding: "Huffman padding longer than 7 bits or not all ones"
        }
    }

    public var description: String { "\(reason)" }
}
