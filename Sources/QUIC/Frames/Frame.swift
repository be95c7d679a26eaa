// Decoded QUIC frames (RFC 9000 §19; DATAGRAM: RFC 9221 §4).
//
// Each payload struct holds the fields of its type and `ByteSpan`s into the
// decrypted packet payload for variable data (STREAM and CRYPTO data, tokens,
// reason phrases, ACK ranges) — views, not copies (STYLE §2). Spans are
// relative to the buffer the decoder was given and valid until it changes.
// Everything that can be judged from the frame alone is validated by the
// decoder (Frame+Decode.swift); what needs connection state (stream
// direction, flow control, connection ID limits) is the connection's job.

import Core

/// ECN counts of an ACK frame of type 0x03 (§19.3.2).
public struct ECNCounts: Equatable, Sendable {
    public var ect0: UInt64
    public var ect1: UInt64
    public var ce: UInt64

    public init(ect0: UInt64, ect1: UInt64, ce: UInt64) {
        self.ect0 = ect0
        self.ect1 = ect1
        self.ce = ce
    }
}

/// ACK / ACK_ECN (§19.3). The ranges after the first are left encoded in
/// `additionalRanges` and read back with `ranges(in:)`; the decoder has
/// already checked that none goes below packet number 0.
public struct AckFrame: Equatable, Sendable {
    public var largestAcknowledged: UInt64
    /// The ACK Delay field as sent: microseconds divided by 2^ack_delay_exponent.
    public var ackDelay: UInt64
    public var firstRange: UInt64
    /// The ACK Range Count field: ranges after the first.
    public var rangeCount: UInt64
    public var additionalRanges: ByteSpan
    public var ecn: ECNCounts?

    /// The acknowledged packet numbers as ranges, largest first.
    public func ranges(in bytes: UnsafeRawBufferPointer) -> AckRanges { AckRanges(frame: self, bytes: bytes) }
}

/// The ranges of a decoded ACK frame, largest first (§19.3.1).
public struct AckRanges: Sequence, IteratorProtocol {
    let bytes: UnsafeRawBufferPointer
    var position: Int
    var left: UInt64
    var upcoming: ClosedRange<UInt64>?

    init(frame: AckFrame, bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        position = frame.additionalRanges.start
        left = frame.rangeCount
        upcoming = (frame.largestAcknowledged - frame.firstRange)...frame.largestAcknowledged
    }

    public mutating func next() -> ClosedRange<UInt64>? {
        guard let current = upcoming else { return nil }
        if left == 0 {
            upcoming = nil
        } else {
            // Validated when decoded: both varints are present and the
            // arithmetic stays at or above 0.
            let gap = VarInt.decode(bytes, at: position)!
            let length = VarInt.decode(bytes, at: position + gap.length)!
            position += gap.length + length.length
            let largest = current.lowerBound - gap.value - 2
            upcoming = (largest - length.value)...largest
            left -= 1
        }
        return current
    }
}

public struct ResetStreamFrame: Equatable, Sendable {
    public var streamID: UInt64
    /// An application protocol error code.
    public var errorCode: UInt64
    public var finalSize: UInt64
}

public struct StopSendingFrame: Equatable, Sendable {
    public var streamID: UInt64
    public var errorCode: UInt64
}

public struct CryptoFrame: Equatable, Sendable {
    public var offset: UInt64
    public var data: ByteSpan
}

public struct StreamFrame: Equatable, Sendable {
    public var streamID: UInt64
    public var offset: UInt64
    public var data: ByteSpan
    public var fin: Bool
    /// Whether the frame carried a Length field (LEN bit); without it the
    /// data runs to the end of the packet.
    public var hasLength: Bool
}

public struct MaxStreamDataFrame: Equatable, Sendable {
    public var streamID: UInt64
    public var maximum: UInt64
}

/// MAX_STREAMS (§19.11) and STREAMS_BLOCKED (§19.14).
public struct StreamLimitFrame: Equatable, Sendable {
    public var bidirectional: Bool
    public var limit: UInt64
}

public struct StreamDataBlockedFrame: Equatable, Sendable {
    public var streamID: UInt64
    public var limit: UInt64
}

/// A 16-byte stateless reset token (§10.3), inline.
public struct StatelessResetToken: Hashable, Sendable {
    public var high: UInt64
    public var low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    public init(_ bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count == 16)
        var h: UInt64 = 0, l: UInt64 = 0
        for i in 0..<8 { h = h << 8 | UInt64(bytes[i]) }
        for i in 8..<16 { l = l << 8 | UInt64(bytes[i]) }
        high = h
        low = l
    }
}

public struct NewConnectionIDFrame: Equatable, Sendable {
    public var sequenceNumber: UInt64
    public var retirePriorTo: UInt64
    public var connectionID: ConnectionID
    public var statelessResetToken: StatelessResetToken
}

public struct ConnectionCloseFrame: Equatable, Sendable {
    /// Type 0x1d: closed by the application (error code from its space).
    public var isApplicationClose: Bool
    public var errorCode: UInt64
    /// Type 0x1c only: the frame type that triggered the error (0 unknown).
    public var frameType: UInt64
    public var reasonPhrase: ByteSpan
}

public struct DatagramFrame: Equatable, Sendable {
    public var data: ByteSpan
    /// Type 0x31 (with Length) or 0x30 (to the end of the packet).
    public var hasLength: Bool
}

/// One frame of a packet payload.
public enum Frame: Equatable, Sendable {
    /// A run of PADDING frames (0x00), collapsed: `count` bytes.
    case padding(count: Int)
    case ping
    case ack(AckFrame)
    case resetStream(ResetStreamFrame)
    /// draft-ietf-quic-reliable-stream-reset §4 (ResetStreamAtFrame.swift).
    case resetStreamAt(ResetStreamAtFrame)
    case stopSending(StopSendingFrame)
    case crypto(CryptoFrame)
    case newToken(token: ByteSpan)
    case stream(StreamFrame)
    case maxData(UInt64)
    case maxStreamData(MaxStreamDataFrame)
    case maxStreams(StreamLimitFrame)
    case dataBlocked(UInt64)
    case streamDataBlocked(StreamDataBlockedFrame)
    case streamsBlocked(StreamLimitFrame)
    case newConnectionID(NewConnectionIDFrame)
    case retireConnectionID(sequenceNumber: UInt64)
    case pathChallenge(UInt64)
    case pathResponse(UInt64)
    case connectionClose(ConnectionCloseFrame)
    case handshakeDone
    case datagram(DatagramFrame)
    /// draft-ietf-quic-ack-frequency §4 (AckFrequencyFrame.swift).
    case ackFrequency(AckFrequencyFrame)
    /// draft-ietf-quic-ack-frequency §5.
    case immediateAck

    /// RFC 9002 §2: every frame but ACK, PADDING and CONNECTION_CLOSE makes
    /// its packet ack-eliciting.
    public var isAckEliciting: Bool {
        switch self {
        case .padding, .ack, .connectionClose: false
        default: true
        }
    }

    /// RFC 9000 §9.1: "PATH_CHALLENGE, PATH_RESPONSE, NEW_CONNECTION_ID, and
    /// PADDING frames are 'probing frames', and all other frames are
    /// 'non-probing frames'." A packet of probing frames only does not move
    /// the connection to its path.
    public var isProbing: Bool {
        switch self {
        case .padding, .pathChallenge, .pathResponse, .newConnectionID: true
        default: false
        }
    }
}
