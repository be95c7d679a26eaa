// Connection migration (RFC 9000 §9) and path validation (§8.2), server side.
//
// Theory of operation. Every datagram routed to the connection arrives with
// its path (the 4-tuple). Before the handshake is confirmed only the path
// that opened the connection is served (§9: "... MUST NOT initiate
// connection migration before the handshake is confirmed"; a datagram from
// elsewhere is dropped, as a client cannot have moved yet). After it:
//
// - A datagram from another path is counted on that path's record (bytes
//   received: the anti-amplification limit, §9.3, §21.5) and its packets
//   are processed like any other: packets from an old path are still
//   accepted.
// - A PATH_CHALLENGE is answered on the path it came from (§8.2.2), padded
//   to 1200 bytes unless that path's anti-amplification limit forbids it
//   (§8.2.1 and §8.2.2 "MUST expand datagrams").
// - A packet that is not a probing packet (§9.1: only PATH_CHALLENGE,
//   PATH_RESPONSE, NEW_CONNECTION_ID, PADDING), from another path, with the
//   largest packet number received so far, moves the connection to that
//   path (§9.3: "... the endpoint MUST send future packets to the new peer
//   address"; an older, reordered packet moves nothing). Probing packets
//   never move it.
// - On moving: a path we never validated is validated (§9.3: "MUST perform
//   path validation ... unless it has previously validated that address"),
//   and until then the new path gets at most three times what it delivered;
//   the peer's next unused connection ID is used when it gave us spares
//   (§9.5); the congestion controller and RTT estimator are reset unless
//   only the port changed (§9.4: a NAT rebinding keeps them); a
//   `.peerAddressChanged` event tells the application. The path left gets
//   a PATH_CHALLENGE too (§9.3.3 "MUST validate the previously active
//   path": an attacker's copy of a packet may have caused the move, and the
//   peer's answer from the old path moves the connection back).
// - A new address validated gets a NEW_TOKEN token bound to it (§9.3
//   "SHOULD send new address validation tokens").
// - Validation sends PATH_CHALLENGE with 8 unpredictable bytes (OpenSSL's
//   DRBG through the endpoint context), again with new data every PTO,
//   and gives up after three times the larger of the current PTO and the
//   PTO at kInitialRtt (§8.2.4). A failure on the path in use sends the
//   connection back to the last validated path with its congestion state
//   (§9.3.2 "... the endpoint ... MUST revert to the previously validated
//   path"); with none left the connection is closed silently (§8.2.4
//   "MAY discard connection state").
//
// Challenges and responses owed on the path in use travel in ordinary
// packets (+SendFrames.swift); those owed elsewhere in a probe datagram of
// their own (QUICConnection+PathProbes.swift), which never carries data
// and is not counted in flight.

import Core

extension QUICConnection {
    /// Takes a datagram's path into account before its packets are read;
    /// false drops the datagram.
    func acceptDatagram(from path: DatagramPath, bytes: Int, now: Instant) -> Bool {
        receivingPath = path
        if path == current.path {
            current.bytesReceived += bytes
            return true
        }
        guard isHandshakeComplete else { return false }
        if let i = otherPathIndex(path) {
            others[i].bytesReceived += bytes
        } else {
            var record = PeerPath(path: path, validated: false)
            record.bytesReceived = bytes
            addOtherPath(record)
        }
        return true
    }

    /// After a packet's frames: moves to its path if it is the newest
    /// non-probing packet (§9.3). `largestBefore`: the largest 1-RTT packet
    /// number received before it.
    func noteNonProbingPacket(_ pn: UInt64, largestBefore: UInt64?, now: Instant) {
        guard receivingPath != current.path, largestBefore.map({ pn > $0 }) ?? true else { return }
        migrate(to: receivingPath, now: now)
    }

    // MARK: frames

    /// PATH_CHALLENGE (§19.17): echoed on the path it arrived on.
    func receivePathChallenge(_ data: UInt64) {
        if receivingPath == current.path {
            current.owe(response: data)
        } else if let i = otherPathIndex(receivingPath) {
            others[i].owe(response: data)
        }
    }

    /// PATH_RESPONSE (§19.18): validates the path whose challenge it
    /// echoes, on whatever path it arrived (§8.2.3). One matching nothing
    /// is ignored (§19.18 allows it; it may answer a challenge we replaced).
    func receivePathResponse(_ data: UInt64, now: Instant) {
        if current.receiveResponse(data) {
            fallbackRecovery = nil
            if configuration.sendsNewToken {
                newToken = context.addressTokens.mintNewToken(address: current.path.peer, now: now)
                newTokenPending = true
            }
            return
        }
        for i in others.indices where others[i].receiveResponse(data) { return }
    }

    // MARK: moving

    private func migrate(to path: DatagramPath, now: Instant) {
        let index = otherPathIndex(path)!  // acceptDatagram recorded it
        var next = others.remove(at: index)
        var previous = current
        let hostChanged = next.peerHostDiffers(from: previous.path)
        if previous.validated {
            fallback = previous.path
            fallbackRecovery = nil
        }
        // §9.5: a fresh connection ID toward the new address, when we have one.
        if let id = next.peerID ?? peerIDs.claimUnused() { peerIDs.use(id) }
        next.peerID = nil
        previous.peerID = nil
        // A path left before it was validated is not pursued (a late
        // PATH_RESPONSE to its outstanding challenges still validates it).
        previous.challengeDue = false
        previous.nextChallengeAt = nil
        previous.validationDeadline = nil
        previous.responses.removeAll()
        // §9.3.3: "In response to an apparent migration, endpoints MUST
        // validate the previously active path using a PATH_CHALLENGE frame."
        previous.challenges.removeAll()
        previous.challengeDue = true
        previous.validationDeadline = Instant(nanoseconds: now.nanoseconds + validationTimeout)
        addOtherPath(previous)
        current = next
        if hostChanged {
            // §9.4: a new address starts from initial values; the old
            // path's are kept while we may still return to it.
            if fallback == previous.path && fallbackRecovery == nil { fallbackRecovery = recovery.pathState }
            // The controller counts in BASE_PLPMTU datagrams, as at the start
            // (QUICConnection.init).
            recovery.resetForNewPath(controller: CongestionControl(configuration.congestionControl,
                                                                   maxDatagramSize: PathMTUDiscovery.base),
                                     now: now)
            // The path MTU is a property of the path (§14.3): the search
            // starts again from 1200. (ECN validation is kept per connection:
            // the peer's counts are cumulative per packet number space, so a
            // fresh validator would take them for too many and fail; a new
            // path whose routers bleach the marks fails validation anyway.)
            pmtu = PathMTUDiscovery(maximum: configuration.maxUDPPayloadSize)
        }
        // A path challenged while it was another (the previous one, §9.3.3)
        // starts afresh as the path in use.
        current.stopValidation()
        if !current.validated { current.startValidation(now: now, timeout: validationTimeout) }
        post(.peerAddressChanged)
    }

    /// §8.2.4: "three times the larger of the current PTO or the PTO for
    /// the new path (using kInitialRtt ...)".
    var validationTimeout: Int64 {
        let initialPTO = RTTEstimator().probeTimeout(maxAckDelay: recovery.maxAckDelay)
        return 3 * max(recovery.rtt.probeTimeout(maxAckDelay: recovery.maxAckDelay), initialPTO)
    }

    /// How long to wait for a PATH_RESPONSE before challenging again with
    /// new data (§8.2.1: no more often than an Initial would be probed).
    var challengeInterval: Int64 { recovery.rtt.probeTimeout(maxAckDelay: recovery.maxAckDelay) }

    /// The smallest datagram carrying a PATH_CHALLENGE alone on the path in
    /// use: what an unvalidated path keeps in reserve of its allowance.
    var challengeDatagramSize: Int {
        1 + peerIDs.current.count + 4 + FrameEncoder.pathFrameSize + PacketProtection.tagLength
    }

    // MARK: timers

    /// The earliest path timer: a challenge to repeat or a validation to abandon.
    var pathDeadline: Instant? {
        var d = earlier(current.nextChallengeAt, current.validationDeadline)
        for i in others.indices {
            d = earlier(d, earlier(others[i].nextChallengeAt, others[i].validationDeadline))
        }
        return d
    }

    func expirePathTimers(now: Instant) {
        if let at = current.validationDeadline, now >= at {
            validationFailedOnCurrentPath(now: now)
            return
        }
        if let at = current.nextChallengeAt, now >= at {
            current.nextChallengeAt = nil
            current.challengeDue = true
        }
        var i = 0
        while i < others.count {
            if let at = others[i].validationDeadline, now >= at {
                if others[i].validated {
                    // The previous path (§9.3.3): no more challenges; it
                    // stays the one to return to.
                    others[i].stopValidation()
                } else {
                    others.remove(at: i)
                    continue
                }
            }
            if let at = others[i].nextChallengeAt, now >= at {
                others[i].nextChallengeAt = nil
                others[i].challengeDue = true
            }
            i += 1
        }
    }

    /// §9.3.2: back to the last validated path, or nowhere to go.
    private func validationFailedOnCurrentPath(now: Instant) {
        guard let back = fallback, let i = otherPathIndex(back) else {
            // §8.2.4: "When an endpoint has no validated path on which to
            // send packets, it MAY discard connection state."
            post(.closed(.pathValidationFailed))
            terminate()
            return
        }
        var previous = others.remove(at: i)
        previous.stopValidation()
        if let id = previous.peerID ?? peerIDs.claimUnused() { peerIDs.use(id) }
        previous.peerID = nil
        current = previous
        fallback = nil
        if let state = fallbackRecovery {
            recovery.restore(state)
            fallbackRecovery = nil
        }
        post(.peerAddressChanged)
    }

    // MARK: records

    func otherPathIndex(_ path: DatagramPath) -> Int? {
        for i in others.indices where others[i].path == path { return i }
        return nil
    }

    /// Keeps `record` among the other paths; at the bound the oldest goes,
    /// but never the fallback while another can go instead.
    private func addOtherPath(_ record: PeerPath) {
        if let i = otherPathIndex(record.path) { others.remove(at: i) }
        if others.count >= Self.maxOtherPaths {
            let victim = others.firstIndex { $0.path != fallback } ?? 0
            others.remove(at: victim)
        }
        others.append(record)
    }
}
