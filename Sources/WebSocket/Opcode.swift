/// A frame opcode (RFC 6455 §5.2, §11.8), as the 4-bit number on the wire.
///
/// A struct over `UInt8` rather than an enum so the header decoder can hold
/// an unknown opcode long enough to refuse it with the right code (§5.2: "If
/// an unknown opcode is received, the receiving endpoint MUST _Fail the
/// WebSocket Connection_"). Opcodes with the high bit set (8–F) are control
/// frames (§5.5); 3–7 and B–F are reserved.
public struct Opcode: RawRepresentable, Equatable, Hashable, Sendable {
    public var rawValue: UInt8

    @inlinable
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let continuation = Opcode(rawValue: 0x0)
    public static let text = Opcode(rawValue: 0x1)
    public static let binary = Opcode(rawValue: 0x2)
    public static let close = Opcode(rawValue: 0x8)
    public static let ping = Opcode(rawValue: 0x9)
    public static let pong = Opcode(rawValue: 0xA)

    /// §5.5: "Control frames are identified by opcodes where the most
    /// significant bit of the opcode is 1."
    @inlinable
    public var isControl: Bool { rawValue & 0x8 != 0 }

    /// One of the six opcodes RFC 6455 defines.
    @inlinable
    public var isKnown: Bool {
        switch rawValue {
        case 0x0, 0x1, 0x2, 0x8, 0x9, 0xA: return true
        default: return false
        }
    }
}
