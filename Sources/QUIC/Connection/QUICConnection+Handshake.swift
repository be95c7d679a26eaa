// Driving the TLS handshake (RFC 9001 §4): its output becomes CRYPTO data
// and keys per space, its completion confirms the handshake (a server's
// handshake is confirmed when it completes, §4.1.2), and the client's
// transport parameters are checked against what was seen on the wire
// (RFC 9000 §7.3) as soon as the handshake has read them.

import Core

extension QUICConnection {
    func driveHandshake(now: Instant) throws(QUICError) {
        if peerParameters == nil, let raw = handshake.peerTransportParameters {
            // What is kept of them stays with the connection (AllocationZone).
            let zone = AllocationZone.connection.enter()
            defer { AllocationZone.restore(zone) }
            try applyPeerTransportParameters(raw, now: now)
        }
        while let event = handshake.nextEvent() {
            switch event {
            case .send(let level, let bytes):
                guard let space = PacketNumberSpace(level), !spaces[space.rawValue].discarded else { continue }
                // The first flight waits in the Initial and Handshake spaces
                // until acknowledged, and goes with them (AllocationZone).
                let zone = AllocationZone.handshake.enter(if: space != .application)
                bytes.withUnsafeBytes { spaces[space.rawValue].cryptoSend.append($0) }
                AllocationZone.restore(zone)
            case .secret(let level, let direction, let suite, let secret):
                guard let space = PacketNumberSpace(level), space != .initial else { continue }  // 0-RTT: refused
                // Their contexts on the handshake heap (PacketKeys+Contexts.swift);
                // the Handshake keys die with the handshake, the 1-RTT keys
                // are the connection's (AllocationZone).
                let zone = (space == .application ? AllocationZone.connection : .handshake).enter()
                let keys = PacketKeys(suite: suite, secret: secret, version: version, updatable: space == .application)
                AllocationZone.restore(zone)
                switch direction {
                case .read:
                    spaces[space.rawValue].readKeys = keys
                    if space == .application {
                        // The next keys it makes ahead go at the first idle
                        // release (QUICConnection+IdleMemory): after a burst,
                        // with the handshake's blocks (AllocationZone).
                        let next = AllocationZone.handshake.enter()
                        keyPhase = KeyPhase(read: keys)
                        AllocationZone.restore(next)
                    }
                case .write:
                    spaces[space.rawValue].writeKeys = keys
                }
            case .complete:
                try completeHandshake(now: now)
            }
        }
        // A server's handshake is confirmed once complete (RFC 9001 §4.1.2)
        // and its session tickets are now CRYPTO data to send: TLS is done.
        // What the release keeps of TLS stays with the connection (AllocationZone).
        if isHandshakeComplete {
            let zone = AllocationZone.connection.enter()
            handshake.releaseAfterHandshake()
            AllocationZone.restore(zone)
        }
    }

    private func completeHandshake(now: Instant) throws(QUICError) {
        guard !isHandshakeComplete else { return }
        guard peerParameters != nil else { throw .missingTransportParameters }
        isHandshakeComplete = true
        // The version is settled (RFC 9368): our parameters are not encoded again.
        localParametersBox = nil
        // §19.20: the server sends HANDSHAKE_DONE once the handshake completes.
        handshakeDonePending = true
        // RFC 9001 §4.9.2: "An endpoint MUST discard its Handshake keys when
        // the TLS handshake is confirmed."
        discardSpace(.initial)
        discardSpace(.handshake)
        // The client's original Destination Connection ID keeps routing to
        // this connection until it ends (QUICConnection+Timers removes it),
        // though the client stops using it now (§7.2): a retransmitted
        // Initial still queued in the socket, or late on the network, must
        // reach us and be dropped (its keys are gone, RFC 9001 §4.9.1), not
        // start a second, half-open connection holding a whole TLS state
        // until it times out (a burst of 200 clients made 48-66 of those).
        context.halfOpenEnded(self)
        let zone = AllocationZone.connection.enter()
        issueConnectionIDs()
        AllocationZone.restore(zone)
        // §8.1.3: a token for the client's next connection, bound to its
        // address (no amplification limit then, and no Retry).
        if configuration.sendsNewToken {
            newToken = context.addressTokens.mintNewToken(address: path.peer, now: now)
            newTokenPending = true
        }
        post(.handshakeCompleted)
    }

    /// The client's transport parameters (§7.4, §18.2): decoded and checked
    /// (TRANSPORT_PARAMETER_ERROR), initial_source_connection_id against the
    /// Source Connection ID of its Initial (§7.3), then applied.
    private func applyPeerTransportParameters(_ raw: [UInt8], now: Instant) throws(QUICError) {
        let decoded: Result<TransportParameters, QUICError> = raw.withUnsafeBytes { b in
            do throws(QUICError) {
                return .success(try TransportParameters.decode(b, sentBy: .client))
            } catch {
                return .failure(error)
            }
        }
        let p = try decoded.get()
        guard p.initialSourceConnectionID == peerInitialSourceID else { throw .initialSourceConnectionIDMismatch }
        try validateVersionInformation(p.versionInformation)
        peerParameters = PeerTransportLimits(p)
        peerAckDelayExponent = p.ackDelayExponent
        peerMaxUDPPayloadSize = Int(min(p.maxUDPPayloadSize, 65527))
        sendLimit = p.initialMaxData
        streams.raiseLocalUniLimit(p.initialMaxStreamsUni)
        streams.raiseLocalBidiLimit(p.initialMaxStreamsBidi)
        // §10.1: the effective idle timeout is the smaller advertised one
        // (0 = none on that side).
        let peerIdle = Int64(min(p.maxIdleTimeout, UInt64(Int64.max / 1_000_000))) * 1_000_000
        if peerIdle > 0 && (idleTimeout == 0 || peerIdle < idleTimeout) { idleTimeout = peerIdle }
        // The peer's max_ack_delay is fixed in LossRecovery at creation; the
        // server learns it from the ClientHello, before sending anything.
        let peerMaxAckDelay = Int64(p.maxAckDelay) * 1_000_000
        if peerMaxAckDelay != recovery.maxAckDelay && recovery.largestSent(space: .initial) == nil {
            recovery = LossRecovery(controller: CongestionControl(configuration.congestionControl,
                                                                   maxDatagramSize: PathMTUDiscovery.base),
                                    maxAckDelay: peerMaxAckDelay, now: now)
        }
    }

    /// Key discard (RFC 9001 §4.9): the space's keys, packets in flight and
    /// CRYPTO data go.
    func discardSpace(_ space: PacketNumberSpace) {
        let s = space.rawValue
        guard !spaces[s].discarded else { return }
        if space == .initial { originalInitialReadKeys = nil }
        spaces[s].discard()
        spaces.dropDiscardedEarlySpaces()
        recovery.discard(space: space)
        if spaces[PacketNumberSpace.initial.rawValue].discarded && spaces[PacketNumberSpace.handshake.rawValue].discarded {
            ecn.dropEarlySpaces()
        }
    }
}
