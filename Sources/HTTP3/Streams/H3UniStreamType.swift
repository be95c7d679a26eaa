// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2) and the reader
// of the stream-type preamble.
//
// "The purpose is indicated by a stream type, which is sent as a
// variable-length integer at the start of the stream" (§6.2). The preamble
// may be split like any other bytes; `H3UniStreamPreamble` gathers it.

import Core

/// A unidirectional stream type. Unknown values are kept as they are.
public struct H3UniStreamType: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt64

    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    public static let control = H3UniStreamType(rawValue: 0x00)
    public static let push = H3UniStreamType(rawValue: 0x01)
    public static let qpackEncoder = H3UniStreamType(rawValue: 0x02)
    public static let qpackDecoder = H3UniStreamType(rawValue: 0x03)
}

/// Reads the stream type at the start of a unidirectional stream.
public struct H3UniStreamPreamble: Sendable {
    private var scratch: [UInt8] = []

    public init() {}

    /// Consumes preamble bytes. - Returns: the type once complete (and the
    /// bytes of `input` it used), or nil with all of `input` kept.
    public mutating func read(_ input: UnsafeRawBufferPointer) -> (type: H3UniStreamType?, consumed: Int) {
        if scratch.isEmpty, let (v, n) = QUICVarInt.decode(input, at: 0) {
            return (H3UniStreamType(rawValue: v), n)
        }
        var i = 0
        while i < input.count {
            scratch.append(input[i])
            i += 1
            if scratch.count == QUICVarInt.length(firstByte: scratch[0]) {
                let v = scratch.withUnsafeBytes { QUICVarInt.decode($0, at: 0)!.value }
                scratch.removeAll()
                return (H3UniStreamType(rawValue: v), i)
            }
        }
        return (nil, i)
    }
}
