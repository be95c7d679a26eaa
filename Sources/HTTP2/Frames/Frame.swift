// Decoded HTTP/2 frames (RFC 9113 §6).
//
// Each payload struct holds the header fields that matter for its type and
// `ByteSpan`s into the parser's input for variable data (DATA payload, field
// block fragments, GOAWAY debug data, SETTINGS pairs) — views, not copies
// (STYLE §2). Spans are relative to the buffer passed to the decode call and
// are valid until that buffer changes. Padding is stripped but its length is
// kept: it counts against flow control (§6.1).

import Core

/// Stream dependency and weight of a HEADERS or PRIORITY frame (RFC 9113
/// §5.3.2, deprecated but still decoded).
public struct PrioritySpec: Equatable, Sendable {
    public var exclusive: Bool
    public var dependency: UInt32
    /// The wire octet: weight - 1.
    public var weight: UInt8

    public init(exclusive: Bool, dependency: UInt32, weight: UInt8) {
        self.exclusive = exclusive
        self.dependency = dependency
        self.weight = weight
    }

    static let size = 5
}

public struct DataFrame: Equatable, Sendable {
    public var streamID: UInt32
    public var endStream: Bool
    public var data: ByteSpan
    /// Padding octets, not counting the Pad Length octet; nil if unpadded.
    public var padLength: Int?
    /// The whole payload length: what the frame costs in flow control (§6.9.1).
    public var flowControlledLength: Int
}

public struct HeadersFrame: Equatable, Sendable {
    public var streamID: UInt32
    public var endStream: Bool
    public var endHeaders: Bool
    public var priority: PrioritySpec?
    public var fieldBlockFragment: ByteSpan
    public var padLength: Int?
}

public struct PriorityFrame: Equatable, Sendable {
    public var streamID: UInt32
    public var priority: PrioritySpec
}

public struct RstStreamFrame: Equatable, Sendable {
    public var streamID: UInt32
    public var errorCode: HTTP2ErrorCode
}

public struct SettingsFrame: Equatable, Sendable {
    public var ack: Bool
    /// The 6-byte pairs, all validated.
    public var parameters: ByteSpan

    public var count: Int { parameters.count / 6 }

    /// Pair `i` (in wire order), read from the buffer the frame was decoded from.
    public func parameter(_ i: Int, in bytes: UnsafeRawBufferPointer) -> Setting {
        let at = parameters.start + i * 6
        return Setting(SettingsParameter(rawValue: UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1])),
                       readUInt32(bytes, at: at + 2))
    }
}

public struct PushPromiseFrame: Equatable, Sendable {
    public var streamID: UInt32
    public var endHeaders: Bool
    public var promisedStreamID: UInt32
    public var fieldBlockFragment: ByteSpan
    public var padLength: Int?
}

public struct PingFrame: Equatable, Sendable {
    public var ack: Bool
    /// The 8 opaque octets, big-endian.
    public var opaqueData: UInt64
}

public struct GoAwayFrame: Equatable, Sendable {
    public var lastStreamID: UInt32
    public var errorCode: HTTP2ErrorCode
    public var debugData: ByteSpan
}

public struct WindowUpdateFrame: Equatable, Sendable {
    /// 0: the connection window.
    public var streamID: UInt32
    public var increment: UInt32
}

public struct ContinuationFrame: Equatable, Sendable {
    public var streamID: UInt32
    public var endHeaders: Bool
    public var fieldBlockFragment: ByteSpan
}

/// A frame of a type this module does not know (§5.5: to be ignored, except
/// that one inside a field block is a PROTOCOL_ERROR — §6.10).
public struct UnknownFrame: Equatable, Sendable {
    public var header: FrameHeader
    public var payload: ByteSpan
}

public enum Frame: Equatable, Sendable {
    case data(DataFrame)
    case headers(HeadersFrame)
    case priority(PriorityFrame)
    case rstStream(RstStreamFrame)
    case settings(SettingsFrame)
    case pushPromise(PushPromiseFrame)
    case ping(PingFrame)
    case goAway(GoAwayFrame)
    case windowUpdate(WindowUpdateFrame)
    case continuation(ContinuationFrame)
    case unknown(UnknownFrame)

    /// The stream the frame belongs to (0 for connection frames).
    public var streamID: UInt32 {
        switch self {
        case .data(let f): f.streamID
        case .headers(let f): f.streamID
        case .priority(let f): f.streamID
        case .rstStream(let f): f.streamID
        case .settings: 0
        case .pushPromise(let f): f.streamID
        case .ping: 0
        case .goAway: 0
        case .windowUpdate(let f): f.streamID
        case .continuation(let f): f.streamID
        case .unknown(let f): f.header.streamID
        }
    }
}
