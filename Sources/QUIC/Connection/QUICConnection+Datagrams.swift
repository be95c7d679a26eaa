// Unreliable datagrams (RFC 9221), for WebTransport and HTTP Datagrams
// (RFC 9297) over HTTP/3.
//
// Negotiation (§3): we accept DATAGRAM frames only when our configuration
// advertises max_datagram_frame_size (the frame decoder refuses them
// otherwise, with PROTOCOL_VIOLATION), and we send them only when the
// peer's transport parameters advertise it, never larger than its limit.
// A received payload waits in a bounded queue for the application; sent
// ones wait in another until a 1-RTT packet has room. Both drop when full
// (datagrams may be lost anyway), and count what they dropped.
//
// Sent DATAGRAM frames are ack-eliciting and count against the congestion
// window like any other (§5.4), but a lost one is not retransmitted (§5):
// nothing of it is recorded in the SentPacketLog.

import Core

/// What became of a datagram handed to `sendDatagram`.
public enum DatagramSendOutcome: Equatable, Sendable {
    /// Queued; it leaves in the next 1-RTT packet with room.
    case queued
    /// The peer did not advertise max_datagram_frame_size (or the
    /// connection is closed): DATAGRAM frames may not be sent (§3).
    case unsupported
    /// Larger than `maxDatagramPayload`: it can never be sent.
    case tooLarge
    /// The send queue is full; the datagram was dropped.
    case dropped
}

extension QUICConnection {
    /// Whether both sides negotiated DATAGRAM frames (RFC 9221 §3).
    public var datagramsNegotiated: Bool {
        configuration.maxDatagramFrameSize != nil && peerParameters?.maxDatagramFrameSize.map { $0 > 0 } == true
    }

    /// The largest payload `sendDatagram` accepts: the peer's
    /// max_datagram_frame_size less the frame's own header, and what fits in
    /// one 1-RTT packet of the datagram size in force (a datagram cannot be
    /// split across packets, §5). 0 when not negotiated.
    public var maxDatagramPayload: Int {
        guard datagramsNegotiated, let peerLimit = peerParameters?.maxDatagramFrameSize else { return 0 }
        let udp = min(pmtu.current, peerMaxUDPPayloadSize)
        // A short header with the longest connection ID and packet number
        // (§17.3.1), and the AEAD tag.
        let packetRoom = udp - (1 + ConnectionID.maxLength + 4) - PacketProtection.tagLength
        let frameLimit = Int(min(peerLimit, UInt64(packetRoom)))
        // Type byte and Length varint (§4); the Length field of a payload
        // close to the limit takes two bytes.
        var payload = frameLimit - 1 - 2
        while payload > 0 && FrameEncoder.datagramSize(dataLength: payload) > frameLimit { payload -= 1 }
        return max(0, payload)
    }

    /// Queues an unreliable datagram for the peer.
    public func sendDatagram(_ payload: UnsafeRawBufferPointer) -> DatagramSendOutcome {
        guard isOpen, datagramsNegotiated else { return .unsupported }
        guard payload.count <= maxDatagramPayload else { return .tooLarge }
        guard outgoingDatagrams.push(Array(payload)) else { return .dropped }
        scheduleUpdate()
        return .queued
    }

    /// The oldest received datagram not yet read, or nil.
    public func receiveDatagram() -> [UInt8]? {
        incomingDatagrams.pop()
    }

    /// Datagrams dropped because a queue was full: received ones the
    /// application had not read in time, and sent ones that found no room.
    public var droppedDatagrams: (received: UInt64, sent: UInt64) {
        (incomingDatagrams.dropped, outgoingDatagrams.dropped)
    }

    /// A DATAGRAM frame from the peer (the decoder checked it against our
    /// max_datagram_frame_size). `.datagramReadable` is posted when the
    /// queue goes from empty to non-empty.
    func receiveDatagramFrame(_ frame: DatagramFrame, packet: UnsafeRawBufferPointer) {
        let wasEmpty = incomingDatagrams.isEmpty
        if incomingDatagrams.push(Array(packet.slice(frame.data))) && wasEmpty {
            post(.datagramReadable)
        }
    }

    /// Writes queued datagrams that fit into the packet (1-RTT only, §4:
    /// "DATAGRAM frames MUST only be sent in 0-RTT or 1-RTT packets").
    /// One that does not fit now waits for the next packet.
    func writeDatagrams(_ c: inout FrameCursor) {
        while let payload = outgoingDatagrams.first {
            let size = FrameEncoder.datagramSize(dataLength: payload.count)
            guard size <= c.room else { return }
            c.at += payload.withUnsafeBytes { FrameEncoder.encodeDatagram($0, explicitLength: true, into: c.rest) }
            c.ackEliciting = true
            _ = outgoingDatagrams.pop()
        }
    }

    var hasDatagramToSend: Bool { !outgoingDatagrams.isEmpty && isHandshakeComplete }
}
