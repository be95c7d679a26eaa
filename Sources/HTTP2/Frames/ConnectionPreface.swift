// The client connection preface (RFC 9113 §3.4).
//
// "The client connection preface starts with a sequence of 24 octets, which
// in hex notation is: 0x505249202a20485454502f322e300d0a0d0a534d0d0a0d0a
// That is, the connection preface starts with the string
// "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"." It is followed by a SETTINGS frame
// (checked by the connection). The same check serves h2c prior-knowledge
// detection on a port that also speaks HTTP/1.1: a prefix match is
// `.needMoreData`, and the first differing byte decides `.mismatch`.

public enum ConnectionPreface {
    /// The 24 preface octets.
    public static let bytes: [UInt8] = [
        0x50, 0x52, 0x49, 0x20, 0x2a, 0x20, 0x48, 0x54, 0x54, 0x50, 0x2f, 0x32,
        0x2e, 0x30, 0x0d, 0x0a, 0x0d, 0x0a, 0x53, 0x4d, 0x0d, 0x0a, 0x0d, 0x0a,
    ]
    public static let count = 24

    public enum Match: Equatable, Sendable {
        /// All 24 octets are present and right.
        case complete
        /// What is there matches, but there are fewer than 24 octets.
        case needMoreData
        /// Not HTTP/2 prior knowledge.
        case mismatch
        /// The request line `PRI * HTTP/2.0` (`requestLineCount` octets)
        /// is all there and right, and a later octet differs: an HTTP/2
        /// client whose preface is wrong, not an HTTP/1.1 request. §3.4:
        /// "Clients and servers MUST treat an invalid connection preface
        /// as a connection error (Section 5.4.1) of type PROTOCOL_ERROR."
        case invalidPreface
    }

    /// "PRI * HTTP/2.0\r\n": the part of the preface that reads as an
    /// HTTP/1.x request line, whose version only HTTP/2 sends.
    public static let requestLineCount = 16

    /// Compares the start of `input` with the preface.
    public static func match(_ input: UnsafeRawBufferPointer) -> Match {
        let n = min(input.count, count)
        for i in 0..<n where input[i] != bytes[i] { return i < requestLineCount ? .mismatch : .invalidPreface }
        return n == count ? .complete : .needMoreData
    }
}
