// Errors of the HPACK decoder (RFC 7541; scopes from RFC 9113 §4.3, §10.5.1).
//
// Three scopes, kept apart in the type (STYLE §4):
//
// * `compression` — the block broke RFC 7541 (bad index, bad Huffman, bad
//   integer, misplaced table-size update, …). The decoder's dynamic table can
//   no longer be trusted to match the peer's, so RFC 9113 §4.3 makes this a
//   connection error of type COMPRESSION_ERROR (GOAWAY).
// * `headerListTooLarge` — the block was valid HPACK but its fields exceed our
//   SETTINGS_MAX_HEADER_LIST_SIZE. The decoder has still processed the whole
//   block, so the table stays in sync and only this stream fails: RST_STREAM,
//   or a 431 response (RFC 9113 §10.5.1, RFC 6585 §5).
// * `enhanceYourCalm` — valid HPACK used as an attack (HPACK bomb); the
//   decoder stopped mid-block, so this is a connection error too.
//
// Every error the module throws is a named constant below, so tests compare
// against the very constant the decoder used.

import Core

/// An HPACK decoding failure: its scope and a fixed description.
public struct HPACKError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Scope: Sendable, Equatable {
        /// Connection error COMPRESSION_ERROR (RFC 9113 §4.3).
        case compression
        /// Stream-level: the decoded field list exceeds the advertised limit.
        case headerListTooLarge
        /// Connection error ENHANCE_YOUR_CALM: valid HPACK used as an attack
        /// (a block decoding to many times the list-size limit).
        case enhanceYourCalm
    }

    public let scope: Scope
    /// A short, fixed description (also fit for GOAWAY debug data).
    public let reason: StaticString

    public init(scope: Scope, reason: StaticString) {
        self.scope = scope
        self.reason = reason
    }

    /// The wire code: COMPRESSION_ERROR for a connection error; for a header
    /// list that is too large the stream is reset with PROTOCOL_ERROR unless
    /// the server answers 431 instead (RFC 9113 §8.2.3 leaves the choice).
    public var errorCode: HTTP2ErrorCode {
        switch scope {
        case .compression: .compressionError
        case .headerListTooLarge: .protocolError
        case .enhanceYourCalm: .enhanceYourCalm
        }
    }

    /// True when the whole connection must go (GOAWAY), not just the stream.
    public var isConnectionError: Bool { scope != .headerListTooLarge }

    /// The HTTP status to answer a stream-level failure with (431).
    public var status: UInt16? { scope == .headerListTooLarge ? 431 : nil }

    public static func == (lhs: HPACKError, rhs: HPACKError) -> Bool {
        lhs.scope == rhs.scope && lhs.reason.sameText(as: rhs.reason)
    }

    public var description: String { "\(scope) \(reason)" }
}

extension HPACKError {
    /// The HPACK error for a failed integer or Huffman decoding: all are
    /// COMPRESSION_ERROR (RFC 9113 §4.3).
    init(_ e: FieldCodingError) {
        switch e {
        case .integerTruncated: self = .integerTruncated
        case .integerOverflow: self = .integerOverflow
        case .huffmanEOS: self = .huffmanEOS
        case .huffmanPadding: self = .huffmanPadding
        }
    }

    // RFC 7541 §5.1: integers.
    public static let integerTruncated = HPACKError(scope: .compression, reason: "HPACK integer truncated")
    public static let integerOverflow = HPACKError(scope: .compression, reason: "HPACK integer too large")
    // RFC 7541 §5.2: string literals.
    public static let stringTruncated = HPACKError(scope: .compression, reason: "HPACK string longer than the block")
    public static let huffmanEOS = HPACKError(scope: .compression, reason: "Huffman string contains EOS")
    public static let huffmanPadding = HPACKError(scope: .compression, reason: "Huffman padding longer than 7 bits or not all ones")
    // RFC 7541 §2.3.3: index address space.
    public static let indexZero = HPACKError(scope: .compression, reason: "HPACK index 0")
    public static let indexOutOfRange = HPACKError(scope: .compression, reason: "HPACK index beyond the tables")
    // RFC 7541 §4.2, §6.3: dynamic table size updates.
    public static let tableSizeUpdateNotAtStart = HPACKError(scope: .compression, reason: "dynamic table size update after a field")
    public static let tableSizeUpdateTooLarge = HPACKError(scope: .compression, reason: "dynamic table size update above SETTINGS_HEADER_TABLE_SIZE")
    public static let tableSizeUpdateMissing = HPACKError(scope: .compression, reason: "dynamic table size update required after SETTINGS_HEADER_TABLE_SIZE was lowered")
    // RFC 9113 §6.5.2 SETTINGS_MAX_HEADER_LIST_SIZE, §10.5.1.
    public static let headerListTooLarge = HPACKError(scope: .headerListTooLarge, reason: "header list larger than SETTINGS_MAX_HEADER_LIST_SIZE")
}
