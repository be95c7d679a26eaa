// SETTINGS parameters (RFC 9113 §6.5.1, §6.5.2; RFC 8441 §3; RFC 9218 §2.1).
//
// A SETTINGS payload is a run of 6-byte (identifier: 16, value: 32) pairs.
// Decoding validates each known value with the code the RFC names — an
// invalid value condemns the whole frame, so nothing is applied — and skips
// unknown identifiers (§6.5.2: "An endpoint that receives a SETTINGS frame
// with any unknown or unsupported identifier MUST ignore that setting").
// The pairs themselves stay in the input and are read back in order with
// `SettingsFrame.parameter(_:in:)`: later values of the same identifier win,
// which a caller applying them in order gets for free.

/// A SETTINGS identifier. Unknown values are representable.
public struct SettingsParameter: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let headerTableSize = SettingsParameter(rawValue: 0x1)
    public static let enablePush = SettingsParameter(rawValue: 0x2)
    public static let maxConcurrentStreams = SettingsParameter(rawValue: 0x3)
    public static let initialWindowSize = SettingsParameter(rawValue: 0x4)
    public static let maxFrameSize = SettingsParameter(rawValue: 0x5)
    public static let maxHeaderListSize = SettingsParameter(rawValue: 0x6)
    /// RFC 8441 §3 (extended CONNECT, for WebSocket over HTTP/2).
    public static let enableConnectProtocol = SettingsParameter(rawValue: 0x8)
    /// RFC 9218 §2.1.
    public static let noRFC7540Priorities = SettingsParameter(rawValue: 0x9)
}

/// One SETTINGS pair.
public struct Setting: Equatable, Sendable {
    public var parameter: SettingsParameter
    public var value: UInt32

    public init(_ parameter: SettingsParameter, _ value: UInt32) {
        self.parameter = parameter
        self.value = value
    }
}

/// The limits of RFC 9113 §6.5.2.
public enum SettingsLimits {
    /// Initial and smallest SETTINGS_MAX_FRAME_SIZE.
    public static let minMaxFrameSize: UInt32 = 16_384
    /// Largest SETTINGS_MAX_FRAME_SIZE: 2^24-1.
    public static let maxMaxFrameSize: UInt32 = 16_777_215
    /// Largest window, and so largest SETTINGS_INITIAL_WINDOW_SIZE: 2^31-1.
    public static let maxWindowSize: UInt32 = 0x7fff_ffff
}

extension Setting {
    /// Checks the value against §6.5.2 (and RFC 8441, RFC 9218 for theirs).
    func validate() throws(FrameError) {
        switch parameter {
        case .enablePush:
            guard value <= 1 else { throw .settingsEnablePush }
        case .initialWindowSize:
            guard value <= SettingsLimits.maxWindowSize else { throw .settingsInitialWindowSize }
        case .maxFrameSize:
            guard value >= SettingsLimits.minMaxFrameSize && value <= SettingsLimits.maxMaxFrameSize else {
                throw .settingsMaxFrameSize
            }
        case .enableConnectProtocol, .noRFC7540Priorities:
            guard value <= 1 else { throw .settingsBoolean }
        default:
            break
        }
    }
}
