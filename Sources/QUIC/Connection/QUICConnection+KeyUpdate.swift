// Key updates the server starts, and the AEAD limits (RFC 9001 §6.1, §6.6).
//
// Every 1-RTT packet we seal counts against the current write key. Before a
// datagram is built, a key that reached the update threshold — the
// configured interval, never more than half the suite's confidentiality
// limit — is replaced when §6.1 allows it: the handshake is confirmed, a
// packet of the current phase was acknowledged ("MUST NOT initiate a
// subsequent key update unless it has received an acknowledgment for a
// packet that was sent protected with keys from the current key phase"),
// and the previous read keys are gone (§6.5: an update waits about three
// PTOs after the last one, or the peer's late packets would be lost). A key
// that cannot be replaced in time is not used past the limit: at fifteen
// sixteenths of it the connection closes with AEAD_LIMIT_REACHED (§6.6,
// "RECOMMENDED ... before reaching a state where key updates are not
// possible"), the rest being room for the CONNECTION_CLOSE packets.
//
// Received packets that fail authentication count across all keys; past the
// integrity limit the connection closes with AEAD_LIMIT_REACHED and
// processes nothing more (§6.6).

import Core

extension QUICConnection {
    /// The limits in force for `suite` (a test may shrink them).
    func aeadLimits(_ suite: CipherSuite) -> AEADLimits {
        configuration.aeadLimitsOverride ?? suite.aeadLimits
    }

    /// Packets after which the current write key is replaced.
    var keyUpdateThreshold: UInt64? {
        guard let suite = spaces[2].writeKeys?.suite else { return nil }
        let interval = configuration.keyUpdateInterval
        guard let limit = aeadLimits(suite).confidentiality else { return interval > 0 ? interval : nil }
        return interval > 0 ? min(interval, limit / 2) : limit / 2
    }

    /// Whether §6.1 and §6.5 allow us to start a key update now.
    var canInitiateKeyUpdate: Bool {
        guard let kp = keyPhase, handshakeConfirmed, spaces[2].writeKeys != nil else { return false }
        return kp.phaseAcknowledged && kp.previousRead == nil
    }

    /// Before a datagram is built: replaces a worn write key, or closes the
    /// connection when it is about to exceed the confidentiality limit.
    func manageKeyLifetime(now: Instant) {
        guard isOpen, let kp = keyPhase, let threshold = keyUpdateThreshold, kp.packetsSentInPhase >= threshold else { return }
        if canInitiateKeyUpdate {
            initiateKeyUpdate()
            return
        }
        guard let suite = spaces[2].writeKeys?.suite, let limit = aeadLimits(suite).confidentiality else { return }
        if kp.packetsSentInPhase >= limit - limit / 16 { closeOnError(.confidentialityLimitReached, now: now) }
    }

    /// RFC 9001 §6.1: next write keys and the flipped phase for every packet
    /// from now on; the next read keys become current, since the peer answers
    /// in the new phase, and the current ones stay for its packets still
    /// in the old phase until three PTOs after the first one in the new phase.
    func initiateKeyUpdate() {
        var kp = keyPhase!
        let next = kp.next(after: spaces[2].readKeys!)
        kp.previousRead = spaces[2].readKeys
        kp.discardPreviousAt = nil
        spaces[2].readKeys = next
        kp.nextRead = next.nextGeneration()
        spaces[2].writeKeys = spaces[2].writeKeys!.nextGeneration()
        kp.phase.toggle()
        kp.firstPacketInPhase = nil
        kp.firstSentInPhase = nil
        kp.phaseAcknowledged = false
        kp.packetsSentInPhase = 0
        kp.updatesInitiated += 1
        keyPhase = kp
    }

    /// Counts a received packet that failed authentication (§6.6); throws
    /// AEAD_LIMIT_REACHED past the integrity limit of `suite`.
    func countFailedDecryption(suite: CipherSuite) throws(QUICError) {
        failedDecryptions += 1
        if failedDecryptions > aeadLimits(suite).integrity { throw .integrityLimitReached }
    }
}

extension QUICError {
    // RFC 9001 §6.6.
    public static let confidentialityLimitReached = QUICError(code: .aeadLimitReached,
                                                              reason: "AEAD confidentiality limit reached and no key update possible")
    public static let integrityLimitReached = QUICError(code: .aeadLimitReached, reason: "AEAD integrity limit reached")
}
