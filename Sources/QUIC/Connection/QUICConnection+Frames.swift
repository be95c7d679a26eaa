// What each received frame does (RFC 9000 §19). The frame decoder has
// already checked the frame alone and whether its packet type may carry it
// (§12.4); here it meets connection and stream state.

import Core

extension QUICConnection {
    func receiveFrame(_ frame: Frame, space: PacketNumberSpace, packet: UnsafeRawBufferPointer,
                      destination: ConnectionID, now: Instant) throws(QUICError) {
        switch frame {
        case .padding, .ping:
            break
        case .ack(let f):
            try receiveAck(f, space: space, packet: packet, now: now)
        case .crypto(let f):
            try receiveCrypto(f, space: space, packet: packet, now: now)
        case .stream(let f):
            try receiveStream(f, packet: packet)
        case .resetStream(let f):
            try receiveReset(f.streamID, errorCode: f.errorCode, finalSize: f.finalSize, reliableSize: 0,
                             frameType: FrameType.resetStream)
        case .resetStreamAt(let f):
            // The decoder refused it unless we sent reset_stream_at, and
            // checked Reliable Size ≤ Final Size (ResetStreamAtFrame.swift).
            try receiveReset(f.streamID, errorCode: f.errorCode, finalSize: f.finalSize, reliableSize: f.reliableSize,
                             frameType: FrameType.resetStreamAt)
        case .stopSending(let f):
            try receiveStopSending(f)
        case .maxData(let limit):
            if limit > sendLimit {
                sendLimit = limit
                for s in streams.all where s.send?.hasFrameToSend(connectionCredit: 1) ?? false { queueForSend(s) }
            }
        case .maxStreamData(let f):
            guard let s = try stream(f.streamID, needsSend: true, frameType: FrameType.maxStreamData) else { return }
            if s.send!.raiseLimit(f.maximum) { queueForSend(s) }
        case .maxStreams(let f):
            if f.bidirectional { streams.raiseLocalBidiLimit(f.limit) } else { streams.raiseLocalUniLimit(f.limit) }
        case .dataBlocked, .streamsBlocked:
            // The peer wants more credit; ours moves as the application
            // reads (DESIGN principle 6), so nothing to do now.
            break
        case .streamDataBlocked(let f):
            // §19.13: for a send-only stream (ours) it is a STREAM_STATE_ERROR.
            _ = try stream(f.streamID, needsReceive: true, frameType: FrameType.streamDataBlocked)
        case .newConnectionID(let f):
            // The peer's connection IDs stay with the connection (AllocationZone).
            let zone = AllocationZone.connection.enter()
            defer { AllocationZone.restore(zone) }
            do {
                try peerIDs.receive(f, limit: max(2, configuration.activeConnectionIDLimit))
            } catch {
                throw error.inFrame(FrameType.newConnectionID)
            }
        case .retireConnectionID(let sequence):
            try receiveRetireConnectionID(sequence, destination: destination)
        case .pathChallenge(let data):
            receivePathChallenge(data)  // +Migration.swift
        case .pathResponse(let data):
            receivePathResponse(data, now: now)
        case .connectionClose(let f):
            let reason = Array(packet.slice(f.reasonPhrase))
            enterDraining(reason: .peer(errorCode: f.errorCode, application: f.isApplicationClose, reason: reason), now: now)
        case .datagram(let f):
            // The decoder refused it unless we advertised
            // max_datagram_frame_size (RFC 9221 §3).
            receiveDatagramFrame(f, packet: packet)
        case .handshakeDone, .newToken:
            // The decoder refuses these from a client (§19.7, §19.20).
            break
        case .ackFrequency(let f):
            // The decoder refused it unless we advertised min_ack_delay
            // (draft-ietf-quic-ack-frequency §3, §4).
            _ = spaces[space.rawValue].received.policy.apply(f)
        case .immediateAck:
            // §5: acknowledge the packet that carries it at once.
            immediateAckRequested = true
        }
    }

    // MARK: ACK (§19.3, §13.1)

    private func receiveAck(_ f: AckFrame, space: PacketNumberSpace, packet: UnsafeRawBufferPointer, now: Instant) throws(QUICError) {
        guard let largestSent = recovery.largestSent(space: space), f.largestAcknowledged <= largestSent else {
            throw QUICError.ackOfUnsentPacket.inFrame(FrameType.ack)
        }
        // §19.3: ACK Delay × 2^ack_delay_exponent microseconds; ignored in
        // Initial and Handshake (RFC 9002 §5.3). Clamp absurd values.
        let micros = f.ackDelay < (1 << 40) >> peerAckDelayExponent ? f.ackDelay << peerAckDelayExponent : 1 << 40
        let ackDelay = space == .application ? Int64(micros) * 1000 : 0
        ackedScratch.removeAll(keepingCapacity: true)
        lostScratch.removeAll(keepingCapacity: true)
        let previousLargest = spaces[space.rawValue].largestAcked
        recovery.onAckReceived(space: space, ranges: f.ranges(in: packet), ackDelay: ackDelay,
                               handshakeConfirmed: handshakeConfirmed, now: now,
                               acked: { ackedScratch.append($0) }, lost: { lostScratch.append((space, $0)) },
                               congestionExperienced: { ecnAckReceived(f, space: space, previousLargest: previousLargest) })
        if space == .application { pmtuAcknowledged(now: now) }
        let s = space.rawValue
        spaces[s].largestAcked = max(spaces[s].largestAcked ?? 0, f.largestAcknowledged)
        frameScratch.removeAll(keepingCapacity: true)
        for pn in ackedScratch {
            if space == .application, let first = keyPhase?.firstSentInPhase, pn >= first { keyPhase!.phaseAcknowledged = true }
            spaces[s].sent.resolve(pn, into: &frameScratch)
        }
        for frame in frameScratch { frameAcked(frame, space: space) }
        frameScratch.removeAll(keepingCapacity: true)
        handleLost()
        if let qlog { qlog.recoveryUpdated(recovery, now: now) }
    }

    /// Re-queues what the packets in `lostScratch` carried (§13.3).
    func handleLost() {
        for (space, pn) in lostScratch {
            ecn.packetLost(space: space, packetNumber: pn)
            if space == .application { pmtu.lost(pn, now: lastSeen) }
            if let qlog { qlog.packetLost(space, packetNumber: pn, now: lastSeen) }
            frameScratch.removeAll(keepingCapacity: true)
            spaces[space.rawValue].sent.resolve(pn, into: &frameScratch)
            for frame in frameScratch { frameLost(frame, space: space) }
        }
        frameScratch.removeAll(keepingCapacity: true)
        lostScratch.removeAll(keepingCapacity: true)
    }

    private func frameAcked(_ frame: SentFrame, space: PacketNumberSpace) {
        switch frame {
        case .ack(let largest):
            spaces[space.rawValue].received.ackOfAckReceived(largest)
        case .crypto(let offset, let length):
            spaces[space.rawValue].cryptoSend.markAcked(offset: offset, length: length)
        case .stream(let id, let offset, let length, let fin):
            guard let s = streams[id], s.send != nil else { return }
            s.send!.acked(offset: offset, length: length, fin: fin)
            if s.send!.wantsWritable && s.send!.space(limit: configuration.maxSendBufferPerStream) > 0 {
                s.send!.wantsWritable = false
                post(.streamWritable(id))
            }
            closeIfDone(s)
        case .resetStream(let id):
            guard let s = streams[id], s.send != nil else { return }
            s.send!.resetStreamAcked()
            closeIfDone(s)
        case .newToken:
            newToken = nil
            newTokenPending = false
        case .handshakeDone:
            handshakeDoneAcknowledged = true
        default:
            break
        }
    }

    private func frameLost(_ frame: SentFrame, space: PacketNumberSpace) {
        switch frame {
        case .ack, .ping:
            break
        case .crypto(let offset, let length):
            spaces[space.rawValue].cryptoSend.markLost(offset: offset, length: length)
        case .stream(let id, let offset, let length, let fin):
            guard let s = streams[id], s.send != nil else { return }
            s.send!.lost(offset: offset, length: length, fin: fin)
            queueForSend(s)
        case .resetStream(let id):
            guard let s = streams[id], s.send != nil else { return }
            s.send!.resetStreamLost()
            queueForSend(s)
        case .stopSending(let id):
            guard let s = streams[id], let recv = s.receive, !recv.isTerminal, let code = s.stopSendingCode else { return }
            s.stopSendingPending = code
            queueForSend(s)
        // Limits: resend only if the lost value is still the one in force
        // (a newer one was sent or is owed otherwise) — never a stale value.
        case .maxData(let v):
            if v == receiveLimit { maxDataPending = true }
        case .maxStreamData(let id, let v):
            guard let s = streams[id], let recv = s.receive, recv.maxData == v, recv.finalSize == nil else { return }
            s.maxStreamDataPending = true
            queueForSend(s)
        case .maxStreams(let bidirectional, let v):
            let type = bidirectional ? 0 : 1
            if v == streams.peerLimit[type] { streams.maxStreamsPending[type] = true }
        case .dataBlocked(let v):
            if v == sendLimit && sentTotal >= sendLimit { dataBlockedPending = v }
        case .streamDataBlocked(let id, let v):
            guard let s = streams[id], s.send != nil, s.send!.peerMaxData == v else { return }
            s.send!.blockedPending = v
            queueForSend(s)
        case .streamsBlocked(let bidi, let v):
            if bidi {
                if v == streams.localBidiLimit && streams.localBidiOpened >= v { streams.streamsBlockedBidiPending = v }
            } else if v == streams.localUniLimit && streams.localUniOpened >= v {
                streams.streamsBlockedPending = v
            }
        case .newConnectionID(let sequence):
            if localIDs.issued(sequence: sequence) != nil { localIDs.pendingAnnouncements.append(sequence) }
        case .retireConnectionID(let sequence):
            peerIDs.pendingRetirements.append(sequence)
        case .handshakeDone:
            handshakeDonePending = true
        case .newToken:
            if newToken != nil { newTokenPending = true }
        }
    }

    // MARK: CRYPTO (§19.6, §7.5)

    private func receiveCrypto(_ f: CryptoFrame, space: PacketNumberSpace, packet: UnsafeRawBufferPointer, now: Instant) throws(QUICError) {
        let s = space.rawValue
        let end = f.offset + UInt64(f.data.count)
        guard end <= spaces[s].cryptoReceive.readOffset + PacketSpaceState.cryptoReceiveLimit else {
            throw QUICError.cryptoBufferExceeded.inFrame(FrameType.crypto)
        }
        spaces[s].cryptoReceive.write(offset: f.offset, packet.slice(f.data))
        guard spaces[s].cryptoReceive.contiguousCount > 0 else { return }
        // RFC 9368 §2.2: the version is settled on the whole ClientHello,
        // before TLS answers it (+VersionNegotiation.swift).
        if space == .initial && !versionDecided {
            // (Read, then act: the negotiation changes `spaces`.)
            let hello = spaces[s].cryptoReceive.withContiguousBytes { clientVersionInformation(in: $0) }
            guard case .whole(let information) = hello else { return }
            negotiateVersion(information)
        }
        let failure: HandshakeFailure? = spaces[s].cryptoReceive.withContiguousBytes { (bytes) -> HandshakeFailure? in
            do throws(HandshakeFailure) {
                try handshake.receive(bytes, at: space.encryptionLevel)
                return nil
            } catch {
                return error
            }
        }
        spaces[s].cryptoReceive.consume(spaces[s].cryptoReceive.contiguousCount)
        if let failure {
            // RFC 9001 §4.8: CRYPTO_ERROR 0x100 + alert.
            throw QUICError(code: TransportErrorCode(rawValue: failure.transportErrorCode), frameType: FrameType.crypto,
                            reason: "TLS handshake failed")
        }
        try driveHandshake(now: now)
    }

    // MARK: streams (§19.4, §19.5, §19.8)

    /// The stream a frame is about (opening peer streams), checking that it
    /// has the part the frame needs. nil: closed and forgotten.
    func stream(_ id: UInt64, needsReceive: Bool = false, needsSend: Bool = false,
                frameType: UInt64) throws(QUICError) -> QUICStream? {
        let s: QUICStream?
        do {
            s = try streams.streamForFrame(id, make: makePeerStream, opened: { post(.streamOpened($0.id)) })
        } catch {
            throw error.inFrame(frameType)
        }
        // Direction is known from the ID even for a forgotten stream.
        let ours = !StreamID.isClientInitiated(id)
        let uni = !StreamID.isBidirectional(id)
        if needsReceive && ours && uni { throw QUICError.streamWrongDirection.inFrame(frameType) }
        if needsSend && !ours && uni { throw QUICError.streamWrongDirection.inFrame(frameType) }
        return s
    }

    private func makePeerStream(_ id: UInt64) -> QUICStream {
        let bidi = StreamID.isBidirectional(id)
        let window = bidi ? configuration.initialMaxStreamDataBidiRemote : configuration.initialMaxStreamDataUni
        // The client's own bidi streams are "local" to it (§18.2).
        let send = bidi ? StreamSendSide(peerMaxData: peerParameters?.initialMaxStreamDataBidiLocal ?? 0) : nil
        return QUICStream(id: id, receive: StreamReceiveSide(window: window), send: send)
    }

    private func receiveStream(_ f: StreamFrame, packet: UnsafeRawBufferPointer) throws(QUICError) {
        let type = FrameType.stream
        guard let s = try stream(f.streamID, needsReceive: true, frameType: type), s.receive != nil else { return }
        let result: (growth: UInt64, readable: Bool)
        do {
            result = try s.receive!.receive(offset: f.offset, packet.slice(f.data), fin: f.fin)
        } catch {
            throw error.inFrame(type)
        }
        try countReceived(result.growth, frameType: type)
        if s.receive!.abandoned || s.readingParked { returnCredit(stream: s) }
        if result.readable { post(.streamReadable(s.id)) }
        closeIfDone(s)
    }

    /// §4.1: the sum of the highest offsets of all streams against our limit.
    private func countReceived(_ growth: UInt64, frameType: UInt64) throws(QUICError) {
        receivedTotal += growth
        guard receivedTotal <= receiveLimit else { throw QUICError.connectionFlowControl.inFrame(frameType) }
    }

    /// RESET_STREAM (§19.4), or RESET_STREAM_AT (draft-ietf-quic-reliable-
    /// stream-reset §4; same stream-state and final-size rules): the
    /// application hears of it now, or once it has read the reliable bytes
    /// (`withReadableBytes`).
    private func receiveReset(_ id: UInt64, errorCode: UInt64, finalSize: UInt64, reliableSize: UInt64,
                              frameType type: UInt64) throws(QUICError) {
        guard let s = try stream(id, needsReceive: true, frameType: type), s.receive != nil else { return }
        let result: (growth: UInt64, notify: UInt64?)
        do {
            result = try s.receive!.receiveReset(finalSize: finalSize, reliableSize: reliableSize, errorCode: errorCode)
        } catch {
            throw error.inFrame(type)
        }
        try countReceived(result.growth, frameType: type)
        // The bytes that will never be read: credit back.
        returnCredit(stream: s)
        if let code = result.notify {
            post(.streamReset(s.id, errorCode: code))
            s.receive!.resetRead()
        }
        closeIfDone(s)
    }

    private func receiveStopSending(_ f: StopSendingFrame) throws(QUICError) {
        guard let s = try stream(f.streamID, needsSend: true, frameType: FrameType.stopSending), s.send != nil else { return }
        // §3.5: "An endpoint that receives a STOP_SENDING frame MUST send a
        // RESET_STREAM frame if the stream is in the Ready or Send state" —
        // with the same error code (§3.5 SHOULD).
        // A stream with a reliable reset size answers with RESET_STREAM_AT
        // (draft-ietf-quic-reliable-stream-reset), when the peer accepts it.
        if resetSendSide(s, errorCode: f.errorCode, reliableSize: 0) {
            queueForSend(s)
            post(.stopSending(s.id, errorCode: f.errorCode))
        }
    }

    // MARK: connection IDs (§19.16)

    private func receiveRetireConnectionID(_ sequence: UInt64, destination: ConnectionID) throws(QUICError) {
        let retired: ConnectionID?
        do {
            retired = try localIDs.retire(sequence: sequence, packetDestination: destination)
        } catch {
            throw error.inFrame(FrameType.retireConnectionID)
        }
        guard let retired else { return }
        context.routes[retired] = nil
        issueConnectionIDs()
    }

    /// Issues NEW_CONNECTION_IDs until the peer holds as many of ours as it
    /// allows (§5.1.1), capped by our configuration.
    func issueConnectionIDs() {
        guard let peer = peerParameters else { return }
        let target = Int(min(peer.activeConnectionIDLimit, max(2, configuration.activeConnectionIDLimit)))
        while localIDs.active.count < target {
            let id = context.connectionIDs.newConnectionID()
            guard context.routes[id] == nil else { return }  // a collision: try again at the next retirement
            localIDs.issue(id, token: context.connectionIDs.resetToken(for: id), announce: true)
            context.routes[id] = self
        }
    }
}
