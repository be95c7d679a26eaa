// Receiving: a datagram's coalesced packets (RFC 9000 §12.2), each
// unprotected with its space's keys (RFC 9001 §5), checked for duplicates
// (§12.3), its frames processed (+Frames.swift) and its packet number
// recorded for acknowledgment (§13.2).
//
// Anything that only makes a packet unreadable drops it and nothing else:
// a header that does not parse, keys we do not have (yet, or any more),
// failed authentication, a duplicate, a 0-RTT packet (early data is not
// accepted). A connection error found in an authenticated packet closes the
// connection with CONNECTION_CLOSE (§11.1).

import Core

extension QUICConnection {
    func receive(_ datagram: UnsafeMutableRawBufferPointer, path: DatagramPath, ecn: ECNCodepoint = .notECT, now: Instant) {
        lastSeen = now
        receivingECN = ecn
        switch lifecycle {
        case .open:
            break
        case .closing:
            // §10.2.1: answer packets with CONNECTION_CLOSE, at a falling
            // rate: on the 1st, 2nd, 4th, 8th ... datagram.
            datagramsWhileClosing += 1
            if datagramsWhileClosing & (datagramsWhileClosing - 1) == 0 { closeFramePending = true }
            scheduleUpdate()
            return
        case .draining, .terminated:
            return
        }
        // Paths and migration: QUICConnection+Migration.swift.
        guard acceptDatagram(from: path, bytes: datagram.count, now: now) else { return }
        var packets = CoalescedPackets(UnsafeRawBufferPointer(datagram), shortHeaderIDLength: context.connectionIDs.length)
        do {
            while let item = packets.next() {
                guard case .packet(let header) = item else { continue }
                try receivePacket(header, in: datagram, now: now)
                guard isOpen else { break }
            }
        } catch {
            closeOnError(error, now: now)
        }
        scheduleUpdate()
    }

    /// Some packet of the peer's was authenticated and processed.
    var hasReceivedPacket: Bool { spaces.contains { $0.received.largest != nil } }

    private func receivePacket(_ header: PacketHeader, in datagram: UnsafeMutableRawBufferPointer, now: Instant) throws(QUICError) {
        switch header {
        case .long(let h):
            let space: PacketNumberSpace
            switch h.type {
            case .initial: space = .initial
            case .handshake: space = .handshake
            case .zeroRTT, .retry: return  // 0-RTT is never accepted (early data refused)
            }
            // RFC 9369 §4: after a switch, Initials of the original version
            // still open with its keys; anything else of another version is dropped.
            let readKeys = h.version == version ? spaces[space.rawValue].readKeys
                : space == .initial && h.version == originalVersion ? originalInitialReadKeys : nil
            guard let keys = readKeys else { return }
            let packet = UnsafeMutableRawBufferPointer(rebasing: datagram[h.packet.start..<h.packet.end])
            let opened: PacketProtection.Opened
            do {
                opened = try PacketProtection.open(packet, packetNumberOffset: h.packetNumberOffsetInPacket,
                                                   largestReceived: spaces[space.rawValue].received.largest, keys: keys)
            } catch {
                if case .connection(let e) = error { throw e }
                // RFC 9001 §6.6: failed authentication counts toward the integrity limit.
                if case .dropped(.decryptionFailed) = error { try countFailedDecryption(suite: keys.suite) }
                return
            }
            if space == .handshake {
                // §8.1: "... receives a Handshake packet ... the server
                // considers the client's address validated"; RFC 9001
                // §4.9.1: "a server MUST discard Initial keys when it first
                // successfully processes a Handshake packet".
                addressValidated = true
                discardSpace(.initial)
            }
            try process(opened, space: space, packet: UnsafeRawBufferPointer(packet), destination: h.destinationID, now: now)
        case .short(let h):
            // RFC 9001 §5.7: "a server MUST NOT process incoming 1-RTT
            // protected packets before the TLS handshake is complete"; the
            // client sends them again.
            guard isHandshakeComplete, spaces[2].readKeys != nil else { return }
            let packet = UnsafeMutableRawBufferPointer(rebasing: datagram[h.packet.start..<h.packet.end])
            guard let opened = try openShort(packet, header: h, now: now) else { return }
            try process(opened, space: .application, packet: UnsafeRawBufferPointer(packet), destination: h.destinationID, now: now)
        case .retry, .versionNegotiation, .unsupportedVersion:
            return  // a client never sends these to a server
        }
    }

    /// Removes 1-RTT protection, choosing keys by the key phase (RFC 9001
    /// §6.3) and taking the peer's key update when the next keys open it.
    private func openShort(_ packet: UnsafeMutableRawBufferPointer, header h: ShortHeader, now: Instant) throws(QUICError) -> PacketProtection.Opened? {
        let current = spaces[2].readKeys!
        let unprotected: PacketProtection.UnprotectedHeader
        // A stateless reset looks like a short packet that fails to open;
        // its last 16 bytes are the token (§10.3.1). Read them before
        // header protection removal or decryption touches the packet.
        let tailToken = packet.count >= 21
            ? StatelessResetToken(UnsafeRawBufferPointer(rebasing: packet[(packet.count - 16)...])) : nil
        do {
            unprotected = try PacketProtection.removeHeaderProtection(packet, packetNumberOffset: h.packetNumberOffsetInPacket,
                                                                     largestReceived: spaces[2].received.largest,
                                                                     key: current.headerProtection)
        } catch {
            checkStatelessReset(tailToken, now: now)
            return nil
        }
        var kp = keyPhase!
        // Before the phase bit is looked at (§9.5; KeyPhase): the next keys
        // derived and every candidate's context made, if an idle release
        // gave them back.
        let next = kp.next(after: current)
        current.prepareContexts()
        kp.previousRead?.prepareContexts()
        let aead: AEADKey
        var isUpdate = false
        if unprotected.keyPhase == kp.phase {
            aead = current.aead
        } else if let previous = kp.previousRead,
                  kp.firstPacketInPhase == nil || unprotected.packetNumber < kp.firstPacketInPhase! {
            // Sent before the peer's update — or, after an update of ours,
            // before the peer took it (none of its packets in the new phase yet).
            aead = previous.aead
        } else {
            aead = next.aead
            isUpdate = true
        }
        let payload: ByteSpan
        do {
            payload = try PacketProtection.decryptPayload(packet, header: unprotected, key: aead)
        } catch {
            checkStatelessReset(tailToken, now: now)
            // RFC 9001 §6.6: failed authentication counts toward the integrity limit.
            if case .decryptionFailed = error, isOpen { try countFailedDecryption(suite: current.suite) }
            return nil
        }
        guard unprotected.reservedBitsAreZero else { throw .reservedBitsSet }
        if spaces[2].received.isDuplicate(unprotected.packetNumber) { return nil }
        if isUpdate {
            // §6.2: a second update before one of our packets in the
            // current phase was acknowledged.
            guard kp.phaseAcknowledged else { throw .keyUpdateTooEarly }
            kp.previousRead = current
            kp.discardPreviousAt = Instant(nanoseconds: now.nanoseconds + recovery.probeTimeout(includingMaxAckDelay: true))
            spaces[2].readKeys = next
            kp.nextRead = next.nextGeneration()
            spaces[2].writeKeys = spaces[2].writeKeys!.nextGeneration()
            kp.phase.toggle()
            kp.firstPacketInPhase = unprotected.packetNumber
            kp.firstSentInPhase = nil
            kp.phaseAcknowledged = false
        } else if unprotected.keyPhase == kp.phase {
            if kp.firstPacketInPhase == nil, kp.previousRead != nil, kp.discardPreviousAt == nil {
                // The peer took our update (+KeyUpdate.swift): the previous
                // keys go three PTOs from now (§6.5).
                kp.discardPreviousAt = Instant(nanoseconds: now.nanoseconds + recovery.probeTimeout(includingMaxAckDelay: true))
            }
            kp.firstPacketInPhase = min(kp.firstPacketInPhase ?? unprotected.packetNumber, unprotected.packetNumber)
        }
        keyPhase = kp
        return PacketProtection.Opened(header: unprotected, payload: payload)
    }

    private func checkStatelessReset(_ token: StatelessResetToken?, now: Instant) {
        guard let token, peerIDs.isStatelessReset(token) else { return }
        // §10.3.1: "... the endpoint MUST enter the draining period and not
        // send any further packets on this connection."
        enterDraining(reason: .statelessReset, now: now)
    }

    /// One authenticated packet: duplicate check, frames, acknowledgment.
    private func process(_ opened: PacketProtection.Opened, space: PacketNumberSpace, packet: UnsafeRawBufferPointer,
                         destination: ConnectionID, now: Instant) throws(QUICError) {
        let pn = opened.header.packetNumber
        guard !spaces[space.rawValue].received.isDuplicate(pn) else { return }
        if let qlog { qlog.packetReceived(space, packetNumber: pn, length: packet.count, now: now) }
        var frames = try FrameDecoder(opened.payload, in: packet, kind: space.packetKind,
                                      options: FrameDecodingOptions(maxDatagramFrameSize: configuration.maxDatagramFrameSize,
                                                                    peerIsClient: true, minAckDelay: advertisedMinAckDelay,
                                                                    resetStreamAt: configuration.reliableStreamReset))
        var ackEliciting = false
        immediateAckRequested = false
        var probing = true
        let largestBefore = spaces[space.rawValue].received.largest
        while let frame = try frames.next() {
            if frame.isAckEliciting { ackEliciting = true }
            if !frame.isProbing { probing = false }
            try receiveFrame(frame, space: space, packet: packet, destination: destination, now: now)
            guard isOpen else { return }
        }
        // §9.2-9.3: a non-probing 1-RTT packet may move the connection.
        if space == .application && !probing { noteNonProbingPacket(pn, largestBefore: largestBefore, now: now) }
        // Keys may have been discarded by the frames (handshake completion).
        guard !spaces[space.rawValue].discardedOrKeyless else { return }
        // The 1-RTT space's ranges stay with the connection, the others'
        // go with the handshake (AllocationZone).
        let zone = (space == .application ? AllocationZone.connection : .handshake).enter()
        spaces[space.rawValue].received.record(pn, ackEliciting: ackEliciting, now: now,
                                                immediate: space != .application || immediateAckRequested,
                                                maxAckDelay: configuration.maxAckDelay,
                                                // §13.2.1: a CE mark is acknowledged at once, so the sender reacts in one RTT.
                                                congestionExperienced: receivingECN == .ce)
        AllocationZone.restore(zone)
        ecn.packetReceived(space: space, ecn: receivingECN)  // §13.4.1: per packet processed
        // §10.1: "restarted when a packet from its peer is received and processed successfully".
        ackElicitingSentSinceReceive = false
        restartIdleTimer(now: now)
    }
}

extension PacketSpaceState {
    var discardedOrKeyless: Bool { readKeys == nil }
}
