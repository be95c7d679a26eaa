// Sending: one datagram at a time, written in place into the caller's
// buffer (RFC 9000 §12.2, §13, §14).
//
// A datagram holds up to one packet per space, Initial first, then
// Handshake, then 1-RTT (the only order a receiver can use, §12.2). Packets
// are built in two passes: first each header (with a two-byte Length, so
// padding never moves anything) and its frames in plaintext, then, once the
// datagram's contents are known, the last packet is padded when the
// datagram carries an Initial (§14.1: at least 1200 bytes) and every packet
// is sealed (RFC 9001 §5). Nothing is allocated per packet; a later
// sendmmsg/GSO batch is several calls into consecutive buffers.
//
// What may be sent is bounded by the datagram size, the anti-amplification
// limit before the client's address is validated (§8.1: three times what
// was received), and the congestion window (RFC 9002 §7) — except PTO
// probes, which ignore it (§6.2.4), and ACK-only packets, which are not in
// flight. In-flight packets are also paced (RFC 9002 §7.7, Pacer.swift):
// before the pacer's release time only ACK-only packets leave, and the
// release time becomes the connection's deadline. Frames go in this order: ACK, HANDSHAKE_DONE, PATH_RESPONSE,
// CRYPTO, connection-level control frames, DATAGRAM frames, then stream
// frames round-robin over the streams with something to send, and a PING
// when a probe found nothing else to carry.

import Core

extension QUICConnection {
    enum SendMode { case ackOnly, full }

    struct PacketDraft {
        var space: PacketNumberSpace
        var start: Int
        var headerLength: Int
        var payloadLength: Int
        var packetNumber: UInt64
        var isLong: Bool
        var ackEliciting: Bool
        var lengthFieldOffset: Int
        var packetNumberLength: Int
        /// A path MTU probe (+PMTU.swift): kept out of congestion control.
        var isPMTUProbe = false
    }

    /// The smallest datagram carrying an Initial (§14.1).
    static let minimumInitialDatagram = 1200
    /// §12.2: the order packets of a datagram go in (a constant, so sending
    /// does not build an array).
    static let sendOrder: [PacketNumberSpace] = [.initial, .handshake, .application]
    /// Below this much room a packet is not started.
    static let minimumPacketRoom = 32

    /// Writes the next datagram into `buffer` and says where it goes; nil
    /// when nothing may or needs to be sent now. Validation owed on a path
    /// other than the one in use goes first (+PathProbes.swift).
    func writeDatagram(into buffer: UnsafeMutableRawBufferPointer, now: Instant) -> (length: Int, path: DatagramPath)? {
        lastSeen = now
        sendingPMTUProbe = false
        if isOpen {
            sendingECN = .notECT  // a probe on another path is not part of ECN validation
            if let probe = writePathProbe(into: buffer, now: now) { return probe }
        }
        pmtuBeforeSend()
        var limit = min(buffer.count, pmtu.current, peerMaxUDPPayloadSize)
        limit = min(limit, pathAllowance)
        guard limit >= min(Self.minimumPacketRoom, challengeDatagramSize) else { return nil }
        if keyPhase != nil { manageKeyLifetime(now: now) }  // RFC 9001 §6.6 (+KeyUpdate.swift)
        let n: Int?
        carriesPathFrame = false
        switch lifecycle {
        case .open:
            sendingECN = ecn.marking
            n = writePMTUProbe(buffer, now: now) ?? writeOpen(buffer, limit: limit, now: now)
            if n != nil { ecn.datagramSent() }
        case .closing:
            sendingECN = .notECT  // closing packets are not tracked, so not validated either
            n = closeFramePending ? writeClose(buffer, limit: limit, now: now) : nil
        case .draining, .terminated:
            n = nil
        }
        guard let n else { return nil }
        current.bytesSent += n
        return (n, current.path)
    }

    private func writeOpen(_ buffer: UnsafeMutableRawBufferPointer, limit: Int, now: Instant) -> Int? {
        // Index loops, here and in the other per-packet paths: a closure or
        // a `for x in` over these large structs copies each element, which
        // allocates in unoptimised builds (PacketBuildAllocationTests).
        var probing = false
        for i in spaces.indices where spaces[i].probesOwed > 0 && spaces[i].writeKeys != nil { probing = true }
        var mode = SendMode.full
        var limit = limit
        pacedUntil = nil
        if !probing {
            let window = recovery.sendAllowance
            if window < Self.minimumPacketRoom {
                mode = .ackOnly
            } else if let release = recovery.pacingReleaseTime(now: now) {
                // RFC 9002 §7.7: not yet; ACKs still go (they are not paced),
                // and the deadline wakes the connection when the pacer allows,
                // if it has anything the pacer holds back.
                mode = .ackOnly
                if Self.sendOrder.contains(where: { wantsToSend($0, mode: .full, now: now) }) { pacedUntil = release }
            } else {
                limit = min(limit, window)
            }
        }
        var drafts: (PacketDraft?, PacketDraft?, PacketDraft?) = (nil, nil, nil)
        var offset = 0
        for i in Self.sendOrder.indices {  // not `for space in`: a generic iterator allocates unoptimised
            let space = Self.sendOrder[i]
            guard wantsToSend(space, mode: mode, now: now) else { continue }
            // An Initial needs a 1200-byte datagram; skip it when that does not fit.
            // (Nested ifs, not `&&`, here and below: an autoclosure capturing
            // a `var` boxes it on the heap in unoptimised builds.)
            if space == .initial, limit < Self.minimumInitialDatagram { continue }
            guard let d = buildPacket(space, in: buffer, at: offset, end: limit, mode: mode, now: now) else { continue }
            offset = d.start + d.headerLength + d.payloadLength + PacketProtection.tagLength
            switch space {
            case .initial: drafts.0 = d
            case .handshake: drafts.1 = d
            case .application: drafts.2 = d
            }
        }
        guard offset > 0 else { return nil }
        // §14.1: pad the datagram that carries an Initial to 1200 bytes,
        // with PADDING frames at the end of its last packet.
        if drafts.0 != nil, offset < Self.minimumInitialDatagram {
            let extra = Self.minimumInitialDatagram - offset
            if var last = drafts.2 {
                pad(&last, by: extra, in: buffer)
                drafts.2 = last
            } else if var last = drafts.1 {
                pad(&last, by: extra, in: buffer)
                drafts.1 = last
            } else if var last = drafts.0 {
                pad(&last, by: extra, in: buffer)
                drafts.0 = last
            }
            offset += extra
        } else if carriesPathFrame, offset < Self.minimumInitialDatagram, var last = drafts.2 {
            // §8.2.1, §8.2.2: "An endpoint MUST expand datagrams that contain
            // a PATH_CHALLENGE [PATH_RESPONSE] frame to at least the smallest
            // allowed maximum datagram size of 1200 bytes, unless the
            // anti-amplification limit for the path does not permit".
            let extra = min(Self.minimumInitialDatagram, limit) - offset
            if extra > 0 {
                pad(&last, by: extra, in: buffer)
                drafts.2 = last
                offset += extra
            }
        }
        if let d = drafts.0 { seal(d, in: buffer, now: now) }
        if let d = drafts.1 { seal(d, in: buffer, now: now) }
        if let d = drafts.2 { seal(d, in: buffer, now: now) }
        return offset
    }

    func pad(_ d: inout PacketDraft, by extra: Int, in buffer: UnsafeMutableRawBufferPointer) {
        let at = d.start + d.headerLength + d.payloadLength
        (buffer.baseAddress! + at).initializeMemory(as: UInt8.self, repeating: 0, count: extra)
        d.payloadLength += extra
    }

    /// Whether `space` has something to send in `mode`.
    func wantsToSend(_ space: PacketNumberSpace, mode: SendMode, now: Instant) -> Bool {
        let i = space.rawValue  // indexed, not copied out (see writeOpen)
        guard spaces[i].writeKeys != nil else { return false }
        if spaces[i].received.ackDue(now: now) { return true }
        // Path validation is not held back by the congestion window or the
        // pacer: on a NAT rebinding the window may still be full of packets
        // sent to the old address, and until the new path is validated the
        // anti-amplification limit can leave both ends waiting (+Migration).
        if space == .application && current.hasPathFrames { return true }
        guard mode == .full else { return false }
        if spaces[i].probesOwed > 0 || spaces[i].cryptoSend.hasLostData || spaces[i].cryptoSend.hasNewData { return true }
        guard space == .application else { return false }
        return handshakeDonePending || newTokenPending || current.hasPathFrames || maxDataPending || dataBlockedPending != nil
            || streams.maxStreamsPending[0] || streams.maxStreamsPending[1] || streams.streamsBlockedPending != nil
            || streams.streamsBlockedBidiPending != nil
            || !localIDs.pendingAnnouncements.isEmpty || !peerIDs.pendingRetirements.isEmpty || hasDatagramToSend
            || sendQueueHasSomethingToSend
    }

    private var sendQueueHasSomethingToSend: Bool {
        let credit = sendLimit - sentTotal
        for i in sendQueue.indices where sendQueue[i].hasSomethingToSend(connectionCredit: credit) { return true }
        return false
    }

    // MARK: one packet

    private func buildPacket(_ space: PacketNumberSpace, in buffer: UnsafeMutableRawBufferPointer, at start: Int, end: Int,
                             mode: SendMode, now: Instant) -> PacketDraft? {
        let s = space.rawValue
        let pn = spaces[s].nextPacketNumber
        let pnLength = PacketNumber.encodedLength(pn, largestAcknowledged: spaces[s].largestAcked)
        let destination = peerIDs.current
        let isLong = space != .application
        // An Initial or Handshake packet's record in its space's log dies
        // with the space (AllocationZone).
        let zone = AllocationZone.handshake.enter(if: isLong)
        defer { AllocationZone.restore(zone) }
        let headerLength = isLong
            ? 1 + 4 + 1 + destination.count + 1 + localID.count + (space == .initial ? 1 : 0) + 2 + pnLength
            : 1 + destination.count + pnLength
        let room = end - start - headerLength - PacketProtection.tagLength
        // A packet for path validation alone may be smaller (see writeDatagram).
        let needed = space == .application && current.hasPathFrames ? FrameEncoder.pathFrameSize : Self.minimumPacketRoom
        guard room >= needed else { return nil }
        let payload = UnsafeMutableRawBufferPointer(rebasing: buffer[(start + headerLength)..<(start + headerLength + room)])
        spaces[s].sent.begin(pn)
        var (length, ackEliciting) = writeFrames(space, into: payload, mode: mode, now: now)
        guard length > 0 else {
            spaces[s].sent.commit(keep: false)
            return nil
        }
        // RFC 9001 §5.4.2: enough bytes after the packet number to sample.
        let minimum = PacketProtection.minimumPayloadLength(packetNumberLength: pnLength)
        if length < minimum {
            (payload.baseAddress! + length).initializeMemory(as: UInt8.self, repeating: 0, count: minimum - length)
            length = minimum
        }
        var draft = PacketDraft(space: space, start: start, headerLength: headerLength, payloadLength: length, packetNumber: pn,
                                isLong: isLong, ackEliciting: ackEliciting, lengthFieldOffset: 0, packetNumberLength: pnLength)
        writeHeader(&draft, destination: destination, in: buffer)
        spaces[s].nextPacketNumber += 1
        spaces[s].sent.commit()
        if ackEliciting && spaces[s].probesOwed > 0 { spaces[s].probesOwed -= 1 }
        if space == .application && keyPhase != nil && keyPhase!.firstSentInPhase == nil { keyPhase!.firstSentInPhase = pn }
        if ackEliciting && !ackElicitingSentSinceReceive {
            // §10.1: also restarted "when sending an ack-eliciting packet if
            // no other ack-eliciting packets have been sent since last
            // receiving and processing a packet".
            ackElicitingSentSinceReceive = true
            restartIdleTimer(now: now)
        }
        return draft
    }

    func seal(_ d: PacketDraft, in buffer: UnsafeMutableRawBufferPointer, now: Instant) {
        if d.isLong {
            let length = UInt64(d.packetNumberLength + d.payloadLength + PacketProtection.tagLength)
            VarInt.encode(length, to: buffer.baseAddress! + d.lengthFieldOffset, length: 2)
        }
        let total = d.headerLength + d.payloadLength + PacketProtection.tagLength
        let packet = UnsafeMutableRawBufferPointer(rebasing: buffer[d.start..<(d.start + total)])
        PacketProtection.seal(packet, headerLength: d.headerLength, payloadLength: d.payloadLength,
                              packetNumber: d.packetNumber, keys: spaces[d.space.rawValue].writeKeys!)
        if d.space == .application { keyPhase?.packetsSentInPhase += 1 }
        // RFC 9002 §2: in flight = ack-eliciting or padded; ACK-only packets
        // are not. Nor, here, is a PMTU probe (PathMTUDiscovery.swift: its
        // loss must not be a congestion signal, RFC 9000 §14.4).
        let tracked = d.ackEliciting && !d.isPMTUProbe
        // The Initial and Handshake spaces' ledgers and ECN counts go with
        // the spaces (DroppablePerSpace, AllocationZone).
        let zone = AllocationZone.handshake.enter(if: d.isLong)
        recovery.onPacketSent(space: d.space, packetNumber: d.packetNumber, bytes: total, ackEliciting: tracked,
                              inFlight: tracked, now: now)
        ecn.packetSent(space: d.space, packetNumber: d.packetNumber, ecn: sendingECN)
        AllocationZone.restore(zone)
        if let qlog { qlog.packetSent(d.space, packetNumber: d.packetNumber, length: total, now: now) }
    }

    // MARK: closing (§10.2.1, §10.2.3)

    /// CONNECTION_CLOSE in every space the client can read: before the
    /// handshake completes that is Initial and Handshake, where an
    /// application close becomes APPLICATION_ERROR without its reason
    /// (§10.2.3); after, 1-RTT only.
    private func writeClose(_ buffer: UnsafeMutableRawBufferPointer, limit: Int, now: Instant) -> Int? {
        guard let frame = closeFrame else { return nil }
        closeFramePending = false
        var offset = 0
        var carriesInitial = false
        let candidates: [PacketNumberSpace] = isHandshakeComplete ? [.application] : [.initial, .handshake]
        for space in candidates where spaces[space.rawValue].writeKeys != nil {
            let s = space.rawValue
            let pn = spaces[s].nextPacketNumber
            let pnLength = PacketNumber.encodedLength(pn, largestAcknowledged: spaces[s].largestAcked)
            let destination = peerIDs.current
            let isLong = space != .application
            let headerLength = isLong
                ? 1 + 4 + 1 + destination.count + 1 + localID.count + (space == .initial ? 1 : 0) + 2 + pnLength
                : 1 + destination.count + pnLength
            let inHandshakeSpace = space != .application
            let code = frame.application && inHandshakeSpace ? TransportErrorCode.applicationError.rawValue : frame.errorCode
            let frameType: UInt64? = frame.application && !inHandshakeSpace ? nil : (frame.application ? 0 : frame.frameType)
            let reasonLength = inHandshakeSpace && frame.application ? 0 : min(frame.reason.count, 256)
            var size = FrameEncoder.connectionCloseSize(errorCode: code, frameType: frameType, reasonLength: reasonLength)
            size = max(size, PacketProtection.minimumPayloadLength(packetNumberLength: pnLength))
            guard offset + headerLength + size + PacketProtection.tagLength <= limit else { break }
            let payloadStart = offset + headerLength
            let payload = UnsafeMutableRawBufferPointer(rebasing: buffer[payloadStart..<(payloadStart + size)])
            payload.initializeMemory(as: UInt8.self, repeating: 0)
            frame.reason.withUnsafeBytes { reason in
                _ = FrameEncoder.encodeConnectionClose(errorCode: code, frameType: frameType,
                                                       reason: UnsafeRawBufferPointer(rebasing: reason[0..<reasonLength]),
                                                       into: payload)
            }
            var d = PacketDraft(space: space, start: offset, headerLength: headerLength, payloadLength: size, packetNumber: pn,
                                isLong: isLong, ackEliciting: false, lengthFieldOffset: 0, packetNumberLength: pnLength)
            writeHeader(&d, destination: destination, in: buffer)
            spaces[s].nextPacketNumber += 1
            let isLast = space == candidates.last || spaces[candidates.last!.rawValue].writeKeys == nil
            if space == .initial { carriesInitial = true }
            if carriesInitial && isLast {
                let end = d.start + d.headerLength + d.payloadLength + PacketProtection.tagLength
                let extra = min(Self.minimumInitialDatagram, limit) - end
                if extra > 0 { pad(&d, by: extra, in: buffer) }
            }
            sealWithoutRecovery(d, in: buffer)
            offset = d.start + d.headerLength + d.payloadLength + PacketProtection.tagLength
        }
        return offset > 0 ? offset : nil
    }

    func writeHeader(_ d: inout PacketDraft, destination: ConnectionID, in buffer: UnsafeMutableRawBufferPointer) {
        let header = UnsafeMutableRawBufferPointer(rebasing: buffer[d.start..<(d.start + d.headerLength)])
        if d.isLong {
            var w = WireWriter(header, size: d.headerLength)
            let type: LongPacketType = d.space == .initial ? .initial : .handshake
            w.uint8(0xc0 | version.typeBits(type) << 4 | UInt8(d.packetNumberLength - 1))
            w.uint32(version.rawValue)
            w.connectionID(destination)
            w.connectionID(localID)
            if d.space == .initial { w.varint(0) }
            d.lengthFieldOffset = d.start + w.at
            w.varint(0, length: 2)
            w.packetNumber(d.packetNumber, length: d.packetNumberLength)
            _ = w.finish()
        } else {
            PacketHeaderEncoder.encodeShort(destinationID: destination, keyPhase: keyPhase?.phase ?? false,
                                            packetNumber: d.packetNumber, packetNumberLength: d.packetNumberLength, into: header)
        }
    }

    /// Closing packets are not tracked by loss recovery (§10.2.1: the
    /// CONNECTION_CLOSE is resent on demand, never retransmitted).
    func sealWithoutRecovery(_ d: PacketDraft, in buffer: UnsafeMutableRawBufferPointer) {
        if d.isLong {
            let length = UInt64(d.packetNumberLength + d.payloadLength + PacketProtection.tagLength)
            VarInt.encode(length, to: buffer.baseAddress! + d.lengthFieldOffset, length: 2)
        }
        let total = d.headerLength + d.payloadLength + PacketProtection.tagLength
        PacketProtection.seal(UnsafeMutableRawBufferPointer(rebasing: buffer[d.start..<(d.start + total)]),
                              headerLength: d.headerLength, payloadLength: d.payloadLength,
                              packetNumber: d.packetNumber, keys: spaces[d.space.rawValue].writeKeys!)
        if d.space == .application { keyPhase?.packetsSentInPhase += 1 }
        if let qlog { qlog.packetSent(d.space, packetNumber: d.packetNumber, length: total, now: lastSeen) }
    }
}
