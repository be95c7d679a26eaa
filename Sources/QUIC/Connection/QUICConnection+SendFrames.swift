// The frames of one outgoing packet, in priority order (see +Send.swift),
// each recorded in the space's SentPacketLog so an acknowledgment or a loss
// can act on it. Limits (MAX_DATA, MAX_STREAM_DATA, MAX_STREAMS) are written
// with their current value, whatever made them due (§13.3: "... sends the
// most recent value").

import Core

extension QUICConnection {
    /// A cursor over a packet's payload.
    struct FrameCursor {
        let out: UnsafeMutableRawBufferPointer
        var at = 0
        var ackEliciting = false
        var room: Int { out.count - at }
        var rest: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(rebasing: out[at...]) }
    }

    func writeFrames(_ space: PacketNumberSpace, into out: UnsafeMutableRawBufferPointer, mode: SendMode,
                     now: Instant) -> (length: Int, ackEliciting: Bool) {
        let s = space.rawValue
        var c = FrameCursor(out: out)
        let ack = writeAck(space, &c, now: now)
        // Validation on the path in use (+Migration.swift), in any mode
        // (wantsToSend). Neither frame is logged: a lost PATH_RESPONSE is
        // not sent again (§13.3), a lost PATH_CHALLENGE is replaced by one
        // with new data when its timer fires.
        if space == .application {
            while let data = current.responses.first, c.room >= FrameEncoder.pathFrameSize {
                c.at += FrameEncoder.encodePathResponse(data, into: c.rest)
                c.ackEliciting = true
                carriesPathFrame = true
                current.responses.removeFirst()
            }
            if current.challengeDue && c.room >= FrameEncoder.pathFrameSize {
                let data = context.pathChallengeData()
                c.at += FrameEncoder.encodePathChallenge(data, into: c.rest)
                c.ackEliciting = true
                carriesPathFrame = true
                current.challengeSent(data, now: now, interval: challengeInterval)
            }
        }
        guard mode == .full else {
            if ack.written { spaces[s].received.ackSent() }
            return (c.at, c.ackEliciting)
        }
        if space == .application {
            if handshakeDonePending && c.room >= FrameEncoder.handshakeDoneSize {
                c.at += FrameEncoder.encodeHandshakeDone(into: c.rest)
                log(space, .handshakeDone, &c)
                handshakeDonePending = false
            }
        }
        writeCrypto(space, &c)
        if space == .application {
            writeConnectionControl(&c)
            // Datagrams before stream data: they are the latency-sensitive
            // kind, and a stream's bytes can always wait a packet.
            writeDatagrams(&c)
            writeStreams(&c)
        }
        if spaces[s].probesOwed > 0 && !c.ackEliciting && c.room >= FrameEncoder.pingSize {
            c.at += FrameEncoder.encodePing(into: c.rest)
            log(space, .ping, &c)
        }
        // §13.2.1: an ACK frame nobody is owed (only non-ack-eliciting
        // packets arrived since the last one) rides along with other frames
        // but is no reason for a packet of its own — "an endpoint MUST NOT
        // send a non-ack-eliciting packet in response to a non-ack-eliciting
        // packet". The packet is dropped unsent (`buildPacket` discards an
        // empty one) and the ranges wait for the next.
        if ack.written && !ack.due && !c.ackEliciting { return (0, false) }
        if ack.written { spaces[s].received.ackSent() }
        return (c.at, c.ackEliciting)
    }

    private func log(_ space: PacketNumberSpace, _ frame: SentFrame, _ c: inout FrameCursor) {
        spaces[space.rawValue].sent.add(frame)
        if case .ack = frame { return }
        c.ackEliciting = true
    }

    // MARK: ACK (§13.2, §19.3)

    /// Writes an ACK frame if one is due or new ranges can ride along;
    /// the caller marks it sent (`ackSent`) once the packet is kept.
    private func writeAck(_ space: PacketNumberSpace, _ c: inout FrameCursor, now: Instant) -> (written: Bool, due: Bool) {
        let s = space.rawValue
        let received = spaces[s].received
        let due = received.ackDue(now: now)
        guard let largest = received.largest, received.hasNewRanges || due else { return (false, due) }
        // §13.2.5: the delay since the largest was received, in units of
        // 2^ack_delay_exponent microseconds (0 in Initial and Handshake).
        let delay: UInt64 = space == .application
            ? UInt64(max(0, now.nanoseconds - received.largestReceivedTime.nanoseconds) / 1000) >> UInt64(configuration.ackDelayExponent)
            : 0
        let all = received.ranges.ranges
        let counts = ecn.countsToReport(space: space)  // §13.4.1, §19.3.2: ACK_ECN once something was marked
        var count = all.count
        while count > 0 && FrameEncoder.ackSize(ranges: AckRangeView(all, count: count), ackDelay: delay, ecn: counts) > c.room {
            count -= 1
        }
        guard count > 0 else { return (false, due) }
        c.at += FrameEncoder.encodeAck(ranges: AckRangeView(all, count: count), ackDelay: delay, ecn: counts, into: c.rest)
        log(space, .ack(largest: largest), &c)
        return (true, due)
    }

    // MARK: CRYPTO (§19.6)

    private func writeCrypto(_ space: PacketNumberSpace, _ c: inout FrameCursor) {
        let s = space.rawValue
        while true {
            // Type, an offset of up to 4 bytes and a 2-byte length.
            let overhead = 1 + 4 + 2
            guard c.room > overhead,
                  let chunk = spaces[s].cryptoSend.nextChunk(maxLength: c.room - overhead, newLimit: .max) else { return }
            let header = FrameEncoder.encodeCryptoHeader(offset: chunk.offset, dataLength: chunk.length, into: c.rest)
            spaces[s].cryptoSend.withBytes(offset: chunk.offset, length: chunk.length) {
                (c.out.baseAddress! + c.at + header).copyMemory(from: $0.baseAddress!, byteCount: chunk.length)
            }
            c.at += header + chunk.length
            spaces[s].cryptoSend.markSent(offset: chunk.offset, length: chunk.length)
            log(space, .crypto(offset: chunk.offset, length: chunk.length), &c)
        }
    }

    // MARK: connection-level control frames (§19.9-§19.16)

    private func writeConnectionControl(_ c: inout FrameCursor) {
        let space = PacketNumberSpace.application
        if maxDataPending {
            let value = connectionLimitUpdate ?? receiveLimit
            guard c.room >= FrameEncoder.connectionLimitSize(value) else { return }
            c.at += FrameEncoder.encodeMaxData(value, into: c.rest)
            receiveLimit = max(receiveLimit, value)
            maxDataPending = false
            log(space, .maxData(value), &c)
        }
        for type in 0..<2 where streams.maxStreamsPending[type] {
            let value = streams.currentPeerLimitTarget(type)
            guard c.room >= FrameEncoder.streamCountSize(value) else { return }
            c.at += FrameEncoder.encodeMaxStreams(bidirectional: type == 0, limit: value, into: c.rest)
            streams.advertisePeerLimit(type, value)
            streams.maxStreamsPending[type] = false
            log(space, .maxStreams(bidirectional: type == 0, value), &c)
        }
        if let value = dataBlockedPending {
            guard c.room >= FrameEncoder.connectionLimitSize(value) else { return }
            c.at += FrameEncoder.encodeDataBlocked(value, into: c.rest)
            dataBlockedPending = nil
            log(space, .dataBlocked(value), &c)
        }
        if let value = streams.streamsBlockedPending {
            guard c.room >= FrameEncoder.streamCountSize(value) else { return }
            c.at += FrameEncoder.encodeStreamsBlocked(bidirectional: false, limit: value, into: c.rest)
            streams.streamsBlockedPending = nil
            log(space, .streamsBlocked(bidirectional: false, value), &c)
        }
        if let value = streams.streamsBlockedBidiPending {
            guard c.room >= FrameEncoder.streamCountSize(value) else { return }
            c.at += FrameEncoder.encodeStreamsBlocked(bidirectional: true, limit: value, into: c.rest)
            streams.streamsBlockedBidiPending = nil
            log(space, .streamsBlocked(bidirectional: true, value), &c)
        }
        if newTokenPending, let token = newToken {
            guard c.room >= FrameEncoder.newTokenSize(tokenLength: token.count) else { return }
            c.at += token.withUnsafeBytes { FrameEncoder.encodeNewToken($0, into: c.rest) }
            newTokenPending = false
            log(space, .newToken, &c)
        }
        while let sequence = localIDs.pendingAnnouncements.first {
            guard let issued = localIDs.issued(sequence: sequence) else {
                localIDs.pendingAnnouncements.removeFirst()
                continue
            }
            let size = FrameEncoder.newConnectionIDSize(sequenceNumber: sequence, retirePriorTo: 0, connectionID: issued.id)
            guard c.room >= size else { return }
            c.at += FrameEncoder.encodeNewConnectionID(sequenceNumber: sequence, retirePriorTo: 0, connectionID: issued.id,
                                                       statelessResetToken: issued.resetToken, into: c.rest)
            localIDs.pendingAnnouncements.removeFirst()
            log(space, .newConnectionID(sequence: sequence), &c)
        }
        while let sequence = peerIDs.pendingRetirements.first {
            guard c.room >= FrameEncoder.retireConnectionIDSize(sequenceNumber: sequence) else { return }
            c.at += FrameEncoder.encodeRetireConnectionID(sequenceNumber: sequence, into: c.rest)
            peerIDs.pendingRetirements.removeFirst()
            log(space, .retireConnectionID(sequence: sequence), &c)
        }
    }

    // MARK: streams (§19.4, §19.5, §19.8, §19.10, §19.13)

    private func writeStreams(_ c: inout FrameCursor) {
        // One pass over the streams queued now, round robin per packet: a
        // stream that still has something to send goes to the back of the
        // queue, also when it filled the packet, so the next packet begins
        // with the stream after it. (It used to keep its turn at the front
        // while it had data, so one bulk response starved every stream
        // queued behind it — lost bytes of the HTTP/3 control stream
        // (RFC 9000 §13.3: retransmitted "in new STREAM frames"), another
        // response, a MAX_STREAM_DATA an upload waits for — until it ended.)
        let queued = sendQueue.count
        var served = 0
        while served < queued && c.room >= Self.minimumPacketRoom {
            let s = sendQueue[served]
            served += 1
            guard streams[s.id] === s else {
                s.queuedForSend = false
                continue
            }
            writeStreamFrames(s, &c)
            // Done for now, or waiting for credit (queued again when
            // MAX_DATA / MAX_STREAM_DATA arrives), or back in line.
            s.queuedForSend = false
            if s.hasSomethingToSend(connectionCredit: sendLimit - sentTotal) {
                s.queuedForSend = true
                sendQueue.append(s)
            }
        }
        if served > 0 { sendQueue.removeFirst(served) }
    }

    private func writeStreamFrames(_ s: QUICStream, _ c: inout FrameCursor) {
        let space = PacketNumberSpace.application
        let id = s.id
        if s.maxStreamDataPending, let recv = s.receive {
            if recv.finalSize == nil && !recv.abandoned {
                let value = recv.limitUpdate ?? recv.maxData
                guard c.room >= FrameEncoder.streamLimitSize(streamID: id, value) else { return }
                c.at += FrameEncoder.encodeMaxStreamData(streamID: id, maximum: value, into: c.rest)
                s.receive!.advertise(value)
                log(space, .maxStreamData(id: id, value), &c)
            }
            s.maxStreamDataPending = false
        }
        if let code = s.stopSendingPending {
            guard c.room >= FrameEncoder.stopSendingSize(streamID: id, errorCode: code) else { return }
            c.at += FrameEncoder.encodeStopSending(streamID: id, errorCode: code, into: c.rest)
            s.stopSendingPending = nil
            log(space, .stopSending(id: id), &c)
        }
        guard s.send != nil else { return }
        if s.send!.resetPending, let reset = s.send!.reset {
            if let reliableSize = reset.reliableSize {
                // draft-ietf-quic-reliable-stream-reset §4; the bytes below
                // the Reliable Size go on below, as STREAM frames.
                let f = ResetStreamAtFrame(streamID: id, errorCode: reset.errorCode, finalSize: reset.finalSize,
                                           reliableSize: reliableSize)
                guard c.room >= FrameEncoder.resetStreamAtSize(f) else { return }
                c.at += FrameEncoder.encodeResetStreamAt(f, into: c.rest)
            } else {
                let size = FrameEncoder.resetStreamSize(streamID: id, errorCode: reset.errorCode, finalSize: reset.finalSize)
                guard c.room >= size else { return }
                c.at += FrameEncoder.encodeResetStream(streamID: id, errorCode: reset.errorCode, finalSize: reset.finalSize,
                                                       into: c.rest)
            }
            s.send!.resetStreamSent()
            log(space, .resetStream(id: id), &c)
            if reset.reliableSize == nil { return }
        }
        if let limit = s.send!.blockedPending {
            guard c.room >= FrameEncoder.streamLimitSize(streamID: id, limit) else { return }
            c.at += FrameEncoder.encodeStreamDataBlocked(streamID: id, limit: limit, into: c.rest)
            s.send!.blockedPending = nil
            log(space, .streamDataBlocked(id: id, limit), &c)
        }
        while true {
            // Type, stream ID, an 8-byte offset at most and a 2-byte length.
            let overhead = 1 + VarInt.encodedLength(id) + 8 + 2
            guard c.room > overhead else { return }
            let credit = sendLimit - sentTotal
            var offset: UInt64
            var length: Int
            var isNew = false
            if let chunk = s.send!.nextChunk(maxLength: c.room - overhead, connectionCredit: credit) {
                (offset, length, isNew) = chunk
            } else if let finOffset = s.send!.bareFinOffset {
                (offset, length) = (finOffset, 0)
            } else {
                break
            }
            let fin = s.send!.finGoesWith(end: offset + UInt64(length))
            let header = FrameEncoder.encodeStreamHeader(streamID: id, offset: offset, dataLength: length, fin: fin, into: c.rest)
            if length > 0 {
                s.send!.buffer.withBytes(offset: offset, length: length) {
                    (c.out.baseAddress! + c.at + header).copyMemory(from: $0.baseAddress!, byteCount: length)
                }
            }
            c.at += header + length
            s.send!.markSent(offset: offset, length: length, fin: fin)
            // New bytes after a reliable reset were counted when it was made.
            if isNew && s.send!.reset == nil { sentTotal += UInt64(length) }
            log(space, .stream(id: id, offset: offset, length: length, fin: fin), &c)
            if length == 0 { break }
        }
        // Blocked with data waiting: say so once per limit (§4.1).
        s.send!.noteBlockedIfNeeded()
        if s.send!.buffer.hasNewData && sentTotal >= sendLimit && dataBlockedSentAt != sendLimit {
            dataBlockedSentAt = sendLimit
            dataBlockedPending = sendLimit
        }
    }
}
