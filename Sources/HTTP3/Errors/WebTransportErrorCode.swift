// WebTransport's error codes in the HTTP/3 error space
// (draft-ietf-webtrans-http3, "Resetting Data Streams" and the IANA
// registrations; draft-02 §4.3 for the older, 8-bit range).
//
// A WebTransport application's stream error code is remapped into a range
// of HTTP/3 codes, skipping the reserved codepoints 0x1f * N + 0x21 (RFC 9114
// §8.1) that fall inside it. The current draft maps 32-bit codes
// (0x00000000 → 0x52e4a40fa8db, 0xffffffff → 0x52e5ac983162); draft-02
// mapped 8-bit ones onto the first 0x100 + 8 codepoints of the same range,
// so its codes are the current ones below 0x100.

public enum WebTransportErrorCode {
    /// The first and last HTTP/3 codes of the range (current draft).
    public static let first: UInt64 = 0x52e4_a40f_a8db
    public static let last: UInt64 = 0x52e5_ac98_3162

    /// WT_BUFFERED_STREAM_REJECTED: a stream or datagram for a session not
    /// (yet) there was dropped.
    public static let bufferedStreamRejected = H3ErrorCode(rawValue: 0x3994_bd84)
    /// WT_SESSION_GONE: the stream's session was closed.
    public static let sessionGone = H3ErrorCode(rawValue: 0x170d_7b68)
    /// WT_FLOW_CONTROL_ERROR: a session's flow-control limit was violated.
    public static let flowControlError = H3ErrorCode(rawValue: 0x045d_4487)
    /// WT_ALPN_ERROR.
    public static let alpnError = H3ErrorCode(rawValue: 0x0817_b3dd)
    /// WT_REQUIREMENTS_NOT_MET.
    public static let requirementsNotMet = H3ErrorCode(rawValue: 0x212c_0d48)

    /// The HTTP/3 code that carries application code `n` on the wire.
    public static func http3Code(application n: UInt32) -> H3ErrorCode {
        let n = UInt64(n)
        return H3ErrorCode(rawValue: first + n + n / 0x1e)
    }

    /// The application code an HTTP/3 code carries, or nil when the code is
    /// outside the range or one of the reserved codepoints in it (the
    /// stream is reset all the same, "with no application error code").
    public static func applicationCode(http3 code: H3ErrorCode) -> UInt32? {
        let h = code.rawValue
        guard h >= first, h <= last, !code.isReserved else { return nil }
        let shifted = h - first
        return UInt32(shifted - shifted / 0x1f)
    }
}
