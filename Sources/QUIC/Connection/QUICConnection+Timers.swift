// Timers and the end of a connection (RFC 9000 §10; RFC 9002 §6).
//
// One deadline per connection is armed in the endpoint: the earliest of the
// idle timeout (§10.1), loss detection or PTO (RFC 9002 §6.2), the delayed
// ACK (§13.2.1), the discard of the previous 1-RTT read keys (RFC 9001
// §6.5), the pacer's release of held-back data (RFC 9002 §7.7), and in the closing or draining states their end (§10.2: "at
// least three times the current Probe Timeout").

import Core

extension QUICConnection {
    var nextDeadline: Instant? {
        switch lifecycle {
        case .closing(let until), .draining(let until):
            return until
        case .terminated:
            return nil
        case .open:
            // Plain comparisons and index loops: no captured variable and no
            // element copies, which allocate in unoptimised builds (this runs
            // after every packet built).
            var d = earlier(idleDeadline, recovery.lossDetectionDeadline(handshakeConfirmed: handshakeConfirmed,
                                                                         amplificationBlocked: pathAllowance <= 0))
            // A delayed ACK that cannot be sent (amplification limit) must
            // not keep a past deadline armed: it goes out with the next
            // datagram that arrives.
            if pathAllowance >= Self.minimumPacketRoom {
                for i in spaces.indices where spaces[i].readKeys != nil { d = earlier(d, spaces[i].received.ackDeadline) }
            }
            return earlier(earlier(earlier(d, keyPhase?.discardPreviousAt), pacedUntil), pathDeadline)
        }
    }

    /// Bytes we may still send before the address is validated (§8.1).
    var amplificationAllowance: Int { current.amplificationAllowance }

    /// What may be sent on the path in use now: the anti-amplification
    /// allowance, less, on a path being validated, the room to repeat the
    /// PATH_CHALLENGE if this one is lost (nothing else may use it up while
    /// the peer, with nothing of ours to acknowledge, may stay silent;
    /// §8.2.1, §9.3). Timers use it too: a deadline for something that
    /// cannot be sent would fire again at once.
    var pathAllowance: Int {
        let allowance = amplificationAllowance
        guard isOpen, current.isValidating, !current.validated else { return allowance }
        let reserved = allowance - challengeDatagramSize
        if reserved >= challengeDatagramSize { return reserved }
        return current.challengeDue ? allowance : 0
    }

    func restartIdleTimer(now: Instant) {
        guard idleTimeout > 0 else {
            idleDeadline = nil
            return
        }
        // §10.1: "... the idle timeout [is] no less than three times the
        // current PTO" so probes get their chance.
        let timeout = max(idleTimeout, recovery.probeTimeout(includingMaxAckDelay: true))
        idleDeadline = Instant(nanoseconds: now.nanoseconds + timeout)
    }

    func expire(now: Instant) {
        lastSeen = now
        switch lifecycle {
        case .closing(let until), .draining(let until):
            if now >= until { terminate() }
            return
        case .terminated:
            return
        case .open:
            break
        }
        if let idle = idleDeadline, now >= idle {
            // §10.1: "the connection is silently closed and its state is discarded".
            post(.closed(.idleTimeout))
            terminate()
            return
        }
        // The pacer's release: nothing to do but become ready to send
        // (scheduleUpdate below); writing recomputes it.
        if let at = pacedUntil, now >= at { pacedUntil = nil }
        if let at = keyPhase?.discardPreviousAt, now >= at {
            keyPhase!.previousRead = nil
            keyPhase!.discardPreviousAt = nil
        }
        expirePathTimers(now: now)
        guard isOpen else { return }
        if let loss = recovery.lossDetectionDeadline(handshakeConfirmed: handshakeConfirmed,
                                                     amplificationBlocked: pathAllowance <= 0), now >= loss {
            lostScratch.removeAll(keepingCapacity: true)
            let action = recovery.onLossDetectionTimeout(handshakeConfirmed: handshakeConfirmed, now: now) {
                lostScratch.append(($0, $1))
            }
            handleLost()
            if let qlog { qlog.recoveryUpdated(recovery, now: now) }
            if case .probe(let space, let count) = action { armProbe(space: space, count: count) }
        }
        scheduleUpdate()
    }

    /// PTO (RFC 9002 §6.2.4): `count` ack-eliciting packets in `space`. In
    /// the handshake spaces the unacknowledged CRYPTO data goes again in
    /// them (§6.2.4: "... SHOULD ... retransmit ... data"); in 1-RTT new data
    /// goes first, else a PING.
    private func armProbe(space: PacketNumberSpace, count: Int) {
        var target = space
        if spaces[target.rawValue].writeKeys == nil {
            // The space's keys are gone or not there yet: probe in the
            // highest space we can send in.
            guard let usable = PacketNumberSpace.allCases.last(where: { spaces[$0.rawValue].writeKeys != nil }) else { return }
            target = usable
        }
        spaces[target.rawValue].probesOwed = max(spaces[target.rawValue].probesOwed, count)
        if target != .application { spaces[target.rawValue].cryptoSend.markUnackedLost() }
        // Until the client has HANDSHAKE_DONE it keeps retransmitting its
        // Handshake flight, which we drop (the keys are gone, RFC 9001
        // §4.9.2), and its 1-RTT ACKs of our PINGs may be lost as well: a
        // bare PING probe then takes one more round trip each time, which
        // at 30 % loss each way outlasted the idle timeout. The probe
        // carries HANDSHAKE_DONE again instead (RFC 9002 §6.2.4: probes
        // "SHOULD" carry data; RFC 9000 §13.3: HANDSHAKE_DONE is repeated
        // until acknowledged).
        if target == .application && isHandshakeComplete && !handshakeDoneAcknowledged { handshakeDonePending = true }
    }

    // MARK: closing and draining (§10.2)

    /// A connection error we detected: CONNECTION_CLOSE with its code and
    /// frame type (§11.1), then the closing state.
    func closeOnError(_ error: QUICError, now: Instant) {
        guard isOpen else { return }
        enterClosing(CloseFrame(errorCode: error.code.rawValue, frameType: error.frameType, application: false, reason: []),
                     reason: .local(errorCode: error.code.rawValue, application: false), now: now)
    }

    func enterClosing(_ frame: CloseFrame, reason: QUICCloseReason, now: Instant?) {
        closeFrame = frame
        closeFramePending = true
        datagramsWhileClosing = 0
        let start = now ?? lastSeen
        lifecycle = .closing(until: Instant(nanoseconds: start.nanoseconds + recovery.probeTimeout(includingMaxAckDelay: true)))
        abandonStreams()
        post(.closed(reason))
    }

    func enterDraining(reason: QUICCloseReason, now: Instant) {
        guard isOpen else { return }
        lifecycle = .draining(until: Instant(nanoseconds: now.nanoseconds + recovery.probeTimeout(includingMaxAckDelay: true)))
        abandonStreams()
        post(.closed(reason))
    }

    private func abandonStreams() {
        sendQueue.removeAll()
        for s in streams.all { s.queuedForSend = false }
    }

    /// Leaves the endpoint: unrouted, no deadline, no output.
    func terminate() {
        lifecycle = .terminated
        for issued in localIDs.active where context.routes[issued.id] === self { context.routes[issued.id] = nil }
        if context.routes[initialDestinationID] === self { context.routes[initialDestinationID] = nil }
        context.connectionTerminated(self)
        context.deadlines.arm(self, at: nil)
        qlog?.close()
        qlog = nil
    }
}

extension SendBuffer {
    /// Everything sent and not acknowledged goes again (a PTO in the
    /// handshake spaces).
    mutating func markUnackedLost() {
        guard nextNew > base else { return }
        markLost(offset: base, length: Int(nextNew - base))
    }
}

/// The earlier of two optional deadlines (nil: none).
func earlier(_ a: Instant?, _ b: Instant?) -> Instant? {
    guard let a else { return b }
    guard let b else { return a }
    return b < a ? b : a
}
