// A connection's keys keep their libcrypto contexts on CTLS's handshake
// heap (PacketKeys+Contexts.swift), so that the Initial and Handshake ones,
// discarded with their spaces (RFC 9001 §4.9.1, §4.9.2), and the 1-RTT
// ones an idle connection gives back leave no holes between the blocks a
// connection keeps in malloc's heap; given back, they are made again from
// the key bytes kept when next used.

import CTLS
import XCTest
import Core
@testable import QUIC

final class HandshakeKeysHeapTests: XCTestCase {
    private let secret = [UInt8](repeating: 0x42, count: 32)

    private func heapBlocks() -> Int {
        var s = ctls_handshake_heap_stats()
        ctls_handshake_heap_get_stats(&s)
        return s.live_blocks
    }

    override func setUp() {
        // The routing functions are installed when CTLS is loaded.
        XCTAssertEqual(ctls_handshake_heap_installed(), 1)
        // libcrypto's first use of a cipher creates what lives on (its
        // provider's method caches), on whichever heap is current then.
        for suite in [CipherSuite.aes128GCM, .aes256GCM, .chacha20Poly1305] {
            _ = PacketKeys(suite: suite, secret: [UInt8](repeating: 1, count: suite.hash.length), version: .v1)
        }
    }

    func testInitialKeysLiveOnTheHandshakeHeapUntilDropped() {
        let before = heapBlocks()
        var keys: (client: PacketKeys, server: PacketKeys)? =
            InitialKeys.derive(destinationID: cid("8394c8f03e515708"), version: .v1)
        // An AEAD and a header-protection context each way, at least.
        XCTAssertGreaterThanOrEqual(heapBlocks() - before, 4)
        XCTAssertNotNil(keys)
        keys = nil
        XCTAssertEqual(heapBlocks(), before)
    }

    func testEveryGenerationsContextsLiveOnTheHeapUntilReleased() {
        let before = heapBlocks()
        var keys: PacketKeys? = PacketKeys(suite: .aes128GCM, secret: secret, version: .v1)
        let one = heapBlocks() - before
        XCTAssertGreaterThanOrEqual(one, 2)
        // The next generation makes its own AEAD context and shares the
        // header protection key (§6.1).
        var next: PacketKeys? = keys!.nextGeneration()
        XCTAssertGreaterThan(heapBlocks() - before, one)
        XCTAssertTrue(next!.headerProtection === keys!.headerProtection)
        keys!.releaseContexts()
        next!.releaseContexts()
        XCTAssertEqual(heapBlocks(), before)
        XCTAssertFalse(keys!.holdsContexts)
        keys!.prepareContexts()
        XCTAssertTrue(keys!.holdsContexts)
        XCTAssertEqual(heapBlocks() - before, one)
        keys = nil
        next = nil
        XCTAssertEqual(heapBlocks(), before)
    }

    /// Keys that keep no bytes (the endpoint's token and Retry keys) keep
    /// their context: releasing does nothing.
    func testAKeyThatKeepsNoBytesKeepsItsContext() throws {
        let key = try XCTUnwrap(AEADKey(suite: .aes128GCM, key: [UInt8](repeating: 7, count: 16), iv: [UInt8](repeating: 0, count: 12)))
        key.releaseContext()
        XCTAssertTrue(key.hasContext)
    }

    /// A connection's Initial and Handshake keys are on the heap while its
    /// handshake runs and gone with their spaces once it completes; its
    /// 1-RTT keys' contexts are there too until an idle release gives them
    /// back, and made again by the next packet.
    func testAConnectionsKeysOnTheHeap() throws {
        let h = ConnectionHarness()  // the test client's keys stay
        let before = heapBlocks()
        let flight = h.sendClientHello()
        XCTAssertGreaterThanOrEqual(heapBlocks() - before, 4)
        h.ack1RTT(h.sendClientFinished(acking: flight))
        let c = try XCTUnwrap(h.connection)
        XCTAssertEqual(c.isHandshakeComplete, true)
        XCTAssertNil(c.spaces[0].readKeys)
        XCTAssertNil(c.spaces[1].readKeys)
        let complete = heapBlocks()
        XCTAssertTrue(c.spaces[2].readKeys!.holdsContexts)
        XCTAssertNil(h.endpoint.releaseIdleMemory(now: h.now, quietFor: 0))
        XCTAssertFalse(c.spaces[2].readKeys!.holdsContexts)
        XCTAssertFalse(c.spaces[2].writeKeys!.holdsContexts)
        XCTAssertNil(c.keyPhase!.nextRead)
        // Read and write AEAD (a wrapper, a cipher context, its provider's
        // state each) and header protection: at least six blocks.
        XCTAssertGreaterThanOrEqual(complete - heapBlocks(), 6)
        // The next packet each way makes them again (the ACK of the PING
        // leaves when its delay is up).
        h.send1RTT(Frames.ping)
        h.advance(toDeadline: ())
        XCTAssertFalse(h.exchange().isEmpty)
        XCTAssertTrue(c.spaces[2].readKeys!.holdsContexts)
        XCTAssertTrue(c.spaces[2].writeKeys!.holdsContexts)
        XCTAssertNotNil(c.keyPhase!.nextRead)
    }

    /// Contexts made again after a release protect as the first ones did:
    /// what keys seal, keys from the same secret whose contexts were given
    /// back (header protection and AEAD) open, and the other way round.
    func testReleasedContextsAreMadeAgainOnUse() throws {
        for suite in [CipherSuite.aes128GCM, .aes256GCM, .chacha20Poly1305] {
            let s = [UInt8](repeating: 0x17, count: suite.hash.length)
            let a = PacketKeys(suite: suite, secret: s, version: .v1)
            let b = PacketKeys(suite: suite, secret: s, version: .v1)
            for (sealer, opener) in [(a, b), (b, a)] {
                opener.releaseContexts()
                let payload = [UInt8](repeating: 0xab, count: 40)
                var packet = [UInt8](repeating: 0, count: 1 + 8 + 2 + payload.count + 16)
                packet.withUnsafeMutableBytes { out in
                    let h = PacketHeaderEncoder.encodeShort(destinationID: cid("0102030405060708"), keyPhase: false, packetNumber: 7,
                                                            packetNumberLength: 2, into: out)
                    out.baseAddress!.advanced(by: h).copyMemory(from: payload, byteCount: payload.count)
                    PacketProtection.seal(out, headerLength: h, payloadLength: payload.count, packetNumber: 7, keys: sealer)
                }
                let opened = try packet.withUnsafeMutableBytes { p in
                    try PacketProtection.open(p, packetNumberOffset: 9, largestReceived: nil, keys: opener)
                }
                XCTAssertEqual(opened.header.packetNumber, 7, "\(suite)")
                XCTAssertEqual(opened.payload.count, payload.count, "\(suite)")
                XCTAssertTrue(opener.holdsContexts)
                sealer.releaseContexts()
            }
        }
    }
}
