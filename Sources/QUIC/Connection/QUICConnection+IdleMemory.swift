// What an idle connection gives back (issue 15: an idle HTTP/3 connection
// in at most 8 KiB beyond its TLS state). A busy connection keeps its
// buffers and lists at the size its busiest moment grew them to, so that
// sending, acknowledging and reading allocate nothing; once it has been
// quiet for a while (the glue decides how long, QUICEndpoint's
// `releaseIdleMemory`), that spare capacity is given back: the 1-RTT
// sent-packet log's arrays when nothing is outstanding, the 1-RTT CRYPTO
// stream's storage and each stream's send and receive storage when everything written was acknowledged and
// everything received read, the range lists at their size, the lists
// of pending announcements, the next 1-RTT read keys (derived ahead for
// the peer's key update, RFC 9001 §6.3; KeyPhase derives them again on the
// next packet) and the libcrypto contexts of the other 1-RTT keys (made
// again from their key bytes when next used). Nothing it holds changes
// meaning: the next packet or write grows them again.

import Core

extension QUICConnection {
    /// Gives back the spare capacity of this connection's buffers (above).
    func releaseIdleMemory() {
        guard isOpen else { return }
        let app = PacketNumberSpace.application.rawValue
        if recovery.bytesInFlight == 0 {
            // Nothing in flight: what the log still holds are packets that
            // carried only ACK frames (not ack-eliciting, RFC 9000 §13.2.1),
            // which the peer need never acknowledge. Forgetting them only
            // forgoes their ack-of-ack (§13.2.4: older ranges are reported
            // a little longer), and lets the log give back its arrays.
            spaces[app].sent.resolveAll { _ in }
        }
        spaces.dropDiscardedEarlySpaces()
        spaces[app].sent.releaseIdleCapacity()
        spaces[app].received.releaseIdleCapacity()
        // The 1-RTT CRYPTO stream carried our session tickets (RFC 8446
        // §4.6.1): their bytes, once acknowledged, need no storage.
        spaces[app].cryptoSend.releaseIdleCapacity()
        spaces[app].cryptoReceive.releaseIdleCapacity()
        for s in streams.all {
            s.receive?.releaseIdleCapacity()
            s.send?.releaseIdleCapacity()
        }
        streams.releaseIdleCapacity()
        if sendQueue.isEmpty { sendQueue = [] }
        if others.isEmpty { others = [] }
        if localIDs.pendingAnnouncements.isEmpty { localIDs.pendingAnnouncements = [] }
        if peerIDs.pendingRetirements.isEmpty { peerIDs.pendingRetirements = [] }
        // The 1-RTT keys' libcrypto contexts (PacketKeys+Contexts.swift):
        // the next read keys go whole (their header protection key is the
        // current one's), the others keep their key bytes and make their
        // contexts again when next used.
        if keyPhase != nil {
            keyPhase!.nextRead = nil
            keyPhase!.previousRead?.releaseContexts()
        }
        spaces[app].readKeys?.releaseContexts()
        spaces[app].writeKeys?.releaseContexts()
    }
}

extension QUICEndpoint {
    /// Gives back the spare buffer capacity of every open connection that
    /// has been quiet (nothing received, sent or timed out) for `quietFor`
    /// nanoseconds (see
    /// QUICConnection+IdleMemory.swift), calling `released` with each (the
    /// glue gives back its own state). For the glue's housekeeping, a few
    /// times a second at most: it walks every connection.
    /// A connection released and quiet since is not offered again: it has
    /// nothing more to give back, and `released` counts what did.
    /// - Returns: the earliest time a connection skipped as not yet quiet
    ///   will have been quiet as long, or nil when none was skipped.
    public func releaseIdleMemory(now: Instant, quietFor: Int64,
                                  released: (QUICConnection) -> Void = { _ in }) -> Instant? {
        let quietSince = Instant(nanoseconds: now.nanoseconds - quietFor)
        var later: Instant?
        for c in context.connections.values where c.isOpen {
            if c.lastSeen > quietSince {
                let at = Instant(nanoseconds: c.lastSeen.nanoseconds + quietFor)
                later = later.map { min($0, at) } ?? at
                continue
            }
            if c.idleReleasedAt == c.lastSeen { continue }
            c.releaseIdleMemory()
            c.idleReleasedAt = c.lastSeen
            released(c)
        }
        return later
    }
}
