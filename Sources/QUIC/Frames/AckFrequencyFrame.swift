// The ACK frequency extension's frames (draft-ietf-quic-ack-frequency,
// §4 "ACK_FREQUENCY Frame", §5 "IMMEDIATE_ACK Frame").
//
//   ACK_FREQUENCY Frame {
//     Type (i) = 0xaf,
//     Sequence Number (i),
//     Ack-Eliciting Threshold (i),
//     Request Max Ack Delay (i),     // microseconds
//     Reordering Threshold (i),
//   }
//   IMMEDIATE_ACK Frame { Type (i) = 0x1f }
//
// A peer may send them only if we advertised min_ack_delay (§3): without
// it, or with a Request Max Ack Delay below it, the frame is a
// PROTOCOL_VIOLATION (§4). Both are ack-eliciting and, like every frame
// not listed otherwise, only allowed in 0-RTT and 1-RTT packets. We honour
// them (ReceivedPackets' `AckPolicy`); we never send them.

import Core

extension FrameType {
    public static let ackFrequency: UInt64 = 0xaf
    public static let immediateAck: UInt64 = 0x1f
}

public struct AckFrequencyFrame: Equatable, Sendable {
    /// Frames with a sequence number not above the largest seen are ignored (§4).
    public var sequenceNumber: UInt64
    /// Ack-eliciting packets that may arrive without an ACK; one more makes
    /// the ACK immediate (0: every ack-eliciting packet is acknowledged at once).
    public var ackElicitingThreshold: UInt64
    /// Our max_ack_delay from now on, in microseconds.
    public var requestMaxAckDelay: UInt64
    /// 0: reordering never makes an ACK immediate; 1: any does (RFC 9000
    /// §13.2.1); N: only a gap of N packets (§6.2).
    public var reorderingThreshold: UInt64

    public init(sequenceNumber: UInt64, ackElicitingThreshold: UInt64, requestMaxAckDelay: UInt64, reorderingThreshold: UInt64) {
        self.sequenceNumber = sequenceNumber
        self.ackElicitingThreshold = ackElicitingThreshold
        self.requestMaxAckDelay = requestMaxAckDelay
        self.reorderingThreshold = reorderingThreshold
    }
}

extension QUICError {
    // §3: "an endpoint MUST treat receipt of an ACK_FREQUENCY frame [or
    // IMMEDIATE_ACK] ... without having advertised min_ack_delay as a
    // connection error of type PROTOCOL_VIOLATION."
    public static let ackFrequencyNotNegotiated = QUICError(code: .protocolViolation,
                                                            reason: "ACK_FREQUENCY or IMMEDIATE_ACK without min_ack_delay")
    // §4: "Receipt of a value [of Request Max Ack Delay] less than the
    // advertised min_ack_delay MUST be treated as a connection error of type
    // PROTOCOL_VIOLATION."
    public static let requestMaxAckDelayTooSmall = QUICError(code: .protocolViolation,
                                                             reason: "ACK_FREQUENCY Request Max Ack Delay below min_ack_delay")
}

extension Frame {
    static func decodeAckFrequency(_ r: inout WireReader, _ options: FrameDecodingOptions) throws(QUICError) -> Frame {
        guard let minimum = options.minAckDelay else { throw .ackFrequencyNotNegotiated }
        let f = AckFrequencyFrame(sequenceNumber: try r.varint(), ackElicitingThreshold: try r.varint(),
                                  requestMaxAckDelay: try r.varint(), reorderingThreshold: try r.varint())
        guard f.requestMaxAckDelay >= minimum else { throw .requestMaxAckDelayTooSmall }
        return .ackFrequency(f)
    }

    static func decodeImmediateAck(_ options: FrameDecodingOptions) throws(QUICError) -> Frame {
        guard options.minAckDelay != nil else { throw .ackFrequencyNotNegotiated }
        return .immediateAck
    }
}

extension FrameEncoder {
    public static let immediateAckSize = 1

    public static func ackFrequencySize(_ f: AckFrequencyFrame) -> Int {
        v(FrameType.ackFrequency) + v(f.sequenceNumber) + v(f.ackElicitingThreshold) + v(f.requestMaxAckDelay)
            + v(f.reorderingThreshold)
    }

    /// For tests and a future sender: we do not send ACK_FREQUENCY ourselves.
    @discardableResult
    public static func encodeAckFrequency(_ f: AckFrequencyFrame, into out: UnsafeMutableRawBufferPointer) -> Int {
        var w = WireWriter(out, size: ackFrequencySize(f))
        w.varint(FrameType.ackFrequency)
        w.varint(f.sequenceNumber)
        w.varint(f.ackElicitingThreshold)
        w.varint(f.requestMaxAckDelay)
        w.varint(f.reorderingThreshold)
        return w.finish()
    }

    @discardableResult
    public static func encodeImmediateAck(into out: UnsafeMutableRawBufferPointer) -> Int {
        var w = WireWriter(out, size: immediateAckSize)
        w.uint8(UInt8(FrameType.immediateAck))
        return w.finish()
    }
}
