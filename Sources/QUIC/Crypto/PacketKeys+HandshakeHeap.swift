// Keys that live only as long as the handshake: the Initial and Handshake
// spaces' (RFC 9001 §4.9.1, §4.9.2: discarded once the handshake is
// confirmed, a server's when it completes).
//
// Their libcrypto contexts (an AEAD and a header-protection cipher context
// per direction, about 1.3 KB a direction) would be made in malloc's heap
// between the blocks the connection keeps, and freed a few round trips
// later, leaving holes that keep those pages resident after a burst of
// handshakes (TRANSPORT.md, "What an idle HTTP/3 connection holds"). Made
// with the thread marked as inside a handshake, they come from CTLS's
// handshake heap instead, whose chunks go back to the kernel once empty;
// freeing them routes by address, from anywhere. The 1-RTT keys, kept for
// the connection's life, stay malloc's (a live block would pin a chunk).

import CTLS

extension PacketKeys {
    /// Keys of the Initial or Handshake space (§5.1), their libcrypto
    /// contexts on the handshake heap.
    static func forHandshake(suite: CipherSuite, secret: [UInt8], version: QUICVersion) -> PacketKeys {
        ctls_handshake_heap_enter()
        defer { ctls_handshake_heap_leave() }
        return PacketKeys(suite: suite, secret: secret, version: version)
    }
}
