// The Initial and Handshake keys' libcrypto contexts come from CTLS's
// handshake heap (PacketKeys+HandshakeHeap.swift), so that, discarded with
// their spaces (RFC 9001 §4.9.1, §4.9.2), they leave no holes between the
// blocks a connection keeps in malloc's heap; the 1-RTT keys, kept for the
// connection's life, stay malloc's.

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
            _ = PacketKeys.forHandshake(suite: suite, secret: [UInt8](repeating: 1, count: suite.hash.length), version: .v1)
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

    func testHandshakeKeysDoAndApplicationKeysDoNot() {
        let before = heapBlocks()
        var handshake: PacketKeys? = PacketKeys.forHandshake(suite: .aes128GCM, secret: secret, version: .v1)
        XCTAssertGreaterThanOrEqual(heapBlocks() - before, 2)
        handshake = nil
        XCTAssertEqual(heapBlocks(), before)
        let application = PacketKeys(suite: .aes128GCM, secret: secret, version: .v1)
        let next = application.nextGeneration()
        XCTAssertEqual(heapBlocks(), before)
        XCTAssertEqual(next.suite, .aes128GCM)
    }

    /// A connection's Initial and Handshake keys are on the heap while its
    /// handshake runs and gone from it once the handshake completes.
    func testAConnectionsHandshakeKeysLeaveTheHeapAtCompletion() {
        let h = ConnectionHarness()  // the test client's Initial keys stay
        let before = heapBlocks()
        let flight = h.sendClientHello()
        XCTAssertGreaterThanOrEqual(heapBlocks() - before, 4)
        _ = h.sendClientFinished(acking: flight)
        XCTAssertEqual(h.connection?.isHandshakeComplete, true)
        XCTAssertEqual(heapBlocks(), before)
    }

    /// Keys made on the handshake heap protect like any others: what one
    /// seals, keys from the same secret made in malloc's heap open.
    func testKeysFromEitherHeapInteroperate() throws {
        for suite in [CipherSuite.aes128GCM, .aes256GCM, .chacha20Poly1305] {
            let s = [UInt8](repeating: 0x17, count: suite.hash.length)
            let sealer = PacketKeys.forHandshake(suite: suite, secret: s, version: .v1)
            let opener = PacketKeys(suite: suite, secret: s, version: .v1)
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
        }
    }
}
