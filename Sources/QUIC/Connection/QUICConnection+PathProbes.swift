// Path validation frames owed on a path other than the one in use (RFC 9000
// §8.2, §9.1): a PATH_RESPONSE to a peer probing a new path, or a
// PATH_CHALLENGE we repeat on a path not (or no longer) in use. They go in a
// 1-RTT datagram of their own, sent to that path:
//
// - padded to 1200 bytes unless the path's anti-amplification limit (three
//   times what it delivered, §8.1) allows less (§8.2.1, §8.2.2);
// - to a connection ID of the peer's not used elsewhere when it gave us a
//   spare (§9.5), else the current one;
// - outside congestion control (RFC 9002 §9.4 lets probes on another path
//   be independent of the path in use): the packet is logged as sent so its
//   acknowledgment is legal (§13.1) but is not in flight, carries no data,
//   and gives no RTT sample.

import Core

extension QUICConnection {
    /// Space for a short header with the longest connection ID and a
    /// 4-byte packet number, two PATH_* frames and the AEAD tag.
    static let minimumProbeDatagram = 1 + ConnectionID.maxLength + 4 + 2 * FrameEncoder.pathFrameSize + PacketProtection.tagLength

    func writePathProbe(into buffer: UnsafeMutableRawBufferPointer, now: Instant) -> (length: Int, path: DatagramPath)? {
        guard isHandshakeComplete, spaces[2].writeKeys != nil else { return nil }
        for i in others.indices where others[i].hasPathFrames {
            let limit = min(buffer.count, configuration.maxUDPPayloadSize, peerMaxUDPPayloadSize,
                            others[i].amplificationAllowance)
            // Not enough allowance yet: it goes when the path delivers more.
            guard limit >= Self.minimumProbeDatagram else { continue }
            if others[i].peerID == nil { others[i].peerID = peerIDs.claimUnused() }
            let destination = others[i].peerID ?? peerIDs.current
            let s = PacketNumberSpace.application.rawValue
            let pn = spaces[s].nextPacketNumber
            let pnLength = PacketNumber.encodedLength(pn, largestAcknowledged: spaces[s].largestAcked)
            let headerLength = 1 + destination.count + pnLength
            let payload = UnsafeMutableRawBufferPointer(rebasing: buffer[headerLength..<(limit - PacketProtection.tagLength)])
            var at = 0
            while let data = others[i].responses.first, payload.count - at >= FrameEncoder.pathFrameSize {
                at += FrameEncoder.encodePathResponse(data, into: UnsafeMutableRawBufferPointer(rebasing: payload[at...]))
                others[i].responses.removeFirst()
            }
            if others[i].challengeDue && payload.count - at >= FrameEncoder.pathFrameSize {
                let data = context.pathChallengeData()
                at += FrameEncoder.encodePathChallenge(data, into: UnsafeMutableRawBufferPointer(rebasing: payload[at...]))
                others[i].challengeSent(data, now: now, interval: challengeInterval)
            }
            var draft = PacketDraft(space: .application, start: 0, headerLength: headerLength, payloadLength: at,
                                    packetNumber: pn, isLong: false, ackEliciting: true, lengthFieldOffset: 0,
                                    packetNumberLength: pnLength)
            let total = headerLength + at + PacketProtection.tagLength
            let padded = min(Self.minimumInitialDatagram, limit)
            if padded > total { pad(&draft, by: padded - total, in: buffer) }
            writeHeader(&draft, destination: destination, in: buffer)
            spaces[s].nextPacketNumber += 1
            if keyPhase != nil && keyPhase!.firstSentInPhase == nil { keyPhase!.firstSentInPhase = pn }
            sealWithoutRecovery(draft, in: buffer)
            let length = headerLength + draft.payloadLength + PacketProtection.tagLength
            recovery.onPacketSent(space: .application, packetNumber: pn, bytes: length, ackEliciting: false,
                                  inFlight: false, now: now)
            others[i].bytesSent += length
            return (length, others[i].path)
        }
        return nil
    }
}
