// Where a connection's keys keep their libcrypto contexts, and when they
// give them back.
//
// The contexts (an AEAD and a header-protection cipher context per
// direction, about 1.2 KB and 0.6 KB) come from CTLS's handshake heap,
// whose chunks go back to the kernel once empty, not from malloc's heap
// between the blocks the connection keeps:
// - the Initial and Handshake keys live a few round trips (RFC 9001
//   §4.9.1, §4.9.2: discarded once the handshake is confirmed, a server's
//   when it completes); in malloc's heap they would leave holes that keep
//   those pages resident after a burst of handshakes;
// - the 1-RTT keys live as long as the connection, but an idle connection
//   gives their contexts back (QUICConnection+IdleMemory.swift) and makes
//   them again, from the key bytes kept, when a packet comes or goes. With
//   every idle connection's contexts gone, their chunks empty and leave
//   the resident set (TRANSPORT.md, "What an idle HTTP/3 connection
//   holds").
// Freeing routes by address, so a context made on the heap may be freed
// anywhere.

extension PacketKeys {
    /// Gives back the AEAD and header-protection contexts; the next seal,
    /// open or mask makes them again.
    func releaseContexts() {
        aead.releaseContext()
        headerProtection.releaseContext()
    }

    /// Makes the contexts again now if they were released: before a
    /// received packet's key phase decides which keys open it, so that the
    /// time it takes does not depend on that bit (§9.5).
    func prepareContexts() {
        _ = aead.handle
        _ = headerProtection.handle
    }

    /// Whether both contexts are there.
    var holdsContexts: Bool { aead.hasContext && headerProtection.hasContext }
}
