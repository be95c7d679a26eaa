// Path MTU discovery on the connection (RFC 9000 §14.3, §14.4; RFC 8899):
// the glue between PathMTUDiscovery (the search) and the send and ACK
// paths. `writeDatagram` builds every datagram at most `pmtu.current`
// bytes and, when a probe is due, sends it first: one 1-RTT packet of
// exactly the probed size, a PING and PADDING, recorded with loss recovery
// as neither in flight nor ack-eliciting (no congestion signal when lost).
// The endpoint reads `sendingPMTUProbe` so the worker never puts a probe in
// a GSO run (a run's segment size above the device MTU makes the kernel
// refuse the whole send).

import Core

extension QUICConnection {
    /// The datagram size in force (path MTU discovery's confirmed size).
    public var maxDatagramSize: Int { min(pmtu.current, peerMaxUDPPayloadSize) }
    /// Path MTU discovery's state, for tests and statistics.
    public var pathMTU: PathMTUDiscovery { pmtu }

    /// Before a datagram is built: start the search once the handshake is
    /// confirmed (§14.3.1: the peer's max_udp_payload_size is known, and
    /// probes are 1-RTT packets), and fall back to BASE on a black hole.
    func pmtuBeforeSend() {
        if pmtu.phase == .idle && handshakeConfirmed { pmtu.start(peerMaximum: peerMaxUDPPayloadSize) }
        if pmtu.checkBlackHole(probeTimeouts: recovery.ptoCount) { context.pmtuBlackHoles += 1 }
    }

    /// A probe when one is due and may go: 1-RTT keys, no PTO probes owed
    /// (those go first) and none firing, the client's address validated
    /// (no amplification limit), room in the caller's buffer.
    func writePMTUProbe(_ buffer: UnsafeMutableRawBufferPointer, now: Instant) -> Int? {
        let s = PacketNumberSpace.application.rawValue
        guard handshakeConfirmed, addressValidated, spaces[s].writeKeys != nil, spaces[s].probesOwed == 0,
              recovery.ptoCount == 0, let size = pmtu.probeDue(now: now), size <= buffer.count else { return nil }
        let pn = spaces[s].nextPacketNumber
        let pnLength = PacketNumber.encodedLength(pn, largestAcknowledged: spaces[s].largestAcked)
        let destination = peerIDs.current
        let headerLength = 1 + destination.count + pnLength
        let payloadLength = size - headerLength - PacketProtection.tagLength
        let payload = UnsafeMutableRawBufferPointer(rebasing: buffer[headerLength..<(headerLength + payloadLength)])
        // §14.4: "PING and PADDING frames": the PING makes it ack-eliciting,
        // the padding (zero bytes) makes it the probed size.
        spaces[s].sent.begin(pn)
        let ping = FrameEncoder.encodePing(into: payload)
        spaces[s].sent.add(.ping)
        spaces[s].sent.commit()
        (payload.baseAddress! + ping).initializeMemory(as: UInt8.self, repeating: 0, count: payloadLength - ping)
        var draft = PacketDraft(space: .application, start: 0, headerLength: headerLength, payloadLength: payloadLength,
                                packetNumber: pn, isLong: false, ackEliciting: true, lengthFieldOffset: 0,
                                packetNumberLength: pnLength, isPMTUProbe: true)
        writeHeader(&draft, destination: destination, in: buffer)
        spaces[s].nextPacketNumber += 1
        if keyPhase != nil && keyPhase!.firstSentInPhase == nil { keyPhase!.firstSentInPhase = pn }
        seal(draft, in: buffer, now: now)
        pmtu.probeSent(packetNumber: pn)
        sendingPMTUProbe = true
        return size
    }

    /// After an ACK of the application space (newly acknowledged packets in
    /// `ackedScratch`): a probe acknowledged confirms its size.
    func pmtuAcknowledged(now: Instant) {
        guard let probe = pmtu.outstanding, ackedScratch.contains(probe) else { return }
        let before = pmtu.current
        pmtu.acknowledged(probe, now: now)
        if pmtu.current > before { context.pmtuRaises += 1 }
    }
}
