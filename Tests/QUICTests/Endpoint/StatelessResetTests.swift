// Sending stateless resets (RFC 9000 §10.3): QUICEndpoint and
// Sources/QUIC/Endpoint/StatelessReset.swift.

import XCTest
import Core
@testable import QUIC

final class StatelessResetTests: XCTestCase {
    let unknown = cid("0badc0de0badc0de")

    /// A short-header datagram of `size` bytes for `id`.
    func shortDatagram(_ id: ConnectionID, size: Int) -> [UInt8] {
        var d = [UInt8](repeating: 0x33, count: size)
        d[0] = 0x41
        for (i, b) in id.bytes.enumerated() where 1 + i < size { d[1 + i] = b }
        return d
    }

    func tokenBytes(_ t: StatelessResetToken) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: t.high >> (56 - 8 * UInt64($0))) }
            + (0..<8).map { UInt8(truncatingIfNeeded: t.low >> (56 - 8 * UInt64($0))) }
    }

    /// §10.3: an unknown connection ID gets a reset: short-header form,
    /// the ID's token last, smaller than the trigger, to the sender.
    func testUnknownShortHeaderGetsStatelessReset() {
        let h = ConnectionHarness()
        h.deliver(shortDatagram(unknown, size: 100))
        let out = h.drain()
        XCTAssertEqual(out.count, 1)
        XCTAssertEqual(out[0].path, h.path)
        let reset = out[0].bytes
        XCTAssertEqual(reset.count, 43, "§10.3: a longer trigger gets a 43-byte reset")
        XCTAssertEqual(reset[0] & 0xc0, 0x40, "Header Form 0, Fixed Bit 1")
        XCTAssertEqual(Array(reset.suffix(16)), tokenBytes(h.ids.resetToken(for: unknown)))
        XCTAssertEqual(h.endpoint.connectionCount, 0)
    }

    /// §10.3 / §10.3.3: a reset is smaller than its trigger (one byte
    /// shorter up to 43 bytes), so two endpoints cannot loop; none at all
    /// for triggers of 21 bytes or less (a reset needs 21).
    func testResetIsSmallerThanTriggerAndNoneForTinyPackets() {
        for (trigger, expected) in [(44, 43), (43, 42), (30, 29), (22, 21), (21, nil), (15, nil), (10, nil)] as [(Int, Int?)] {
            let h = ConnectionHarness()
            h.deliver(shortDatagram(unknown, size: trigger))
            let out = h.drain()
            XCTAssertEqual(out.first?.bytes.count, expected, "trigger \(trigger)")
            XCTAssertLessThanOrEqual(out.count, 1)
        }
        XCTAssertNil(StatelessResetSender.size(answering: 21))
        XCTAssertEqual(StatelessResetSender.size(answering: 22), 21)
        XCTAssertEqual(StatelessResetSender.size(answering: 1500), 43)
    }

    /// A reset answering a reset: 43 → 42 → 41 … stops at 21 (§10.3.3).
    func testResetsCannotLoop() {
        let h = ConnectionHarness()
        var size = 1200
        var rounds = 0
        while true {
            h.deliver(shortDatagram(unknown, size: size))
            guard let reset = h.drain().first else { break }
            XCTAssertLessThan(reset.bytes.count, size)
            size = reset.bytes.count
            rounds += 1
            h.advance(nanoseconds: 1_000_000_000)
        }
        XCTAssertEqual(size, 21)
        XCTAssertEqual(rounds, 23)
    }

    /// §10.3: rate-limited: at most statelessResetsPerSecond, refilled over time.
    func testStatelessResetsAreRateLimited() {
        var c = QUICConfiguration()
        c.statelessResetsPerSecond = 5
        let h = ConnectionHarness(configuration: c)
        for _ in 0..<20 { h.deliver(shortDatagram(unknown, size: 60)) }
        XCTAssertEqual(h.drain().count, 5)
        h.advance(nanoseconds: 200_000_000)  // 1/5 s: one more
        for _ in 0..<20 { h.deliver(shortDatagram(unknown, size: 60)) }
        XCTAssertEqual(h.drain().count, 1)
        h.advance(nanoseconds: 10_000_000_000)  // never more than a second's worth
        for _ in 0..<20 { h.deliver(shortDatagram(unknown, size: 60)) }
        XCTAssertEqual(h.drain().count, 5)
    }

    /// A zero rate sends none.
    func testZeroRateSendsNoResets() {
        var c = QUICConfiguration()
        c.statelessResetsPerSecond = 0
        let h = ConnectionHarness(configuration: c)
        h.deliver(shortDatagram(unknown, size: 60))
        XCTAssertTrue(h.drain().isEmpty)
    }

    /// A packet for a live connection is the connection's, never reset.
    func testKnownConnectionIsNotReset() throws {
        let h = ConnectionHarness()
        h.completeHandshake()
        let id = try XCTUnwrap(h.client.serverSourceID)
        h.deliver(shortDatagram(id, size: 60))  // fails to decrypt: dropped by the connection
        XCTAssertTrue(h.drain().allSatisfy { $0.bytes.count != 43 || $0.bytes[0] & 0x80 != 0 })
        XCTAssertEqual(h.endpoint.connectionCount, 1)
    }

    /// The client recognises the reset (§10.3.1): our connection, fed its
    /// own ID's reset, drains — so what we send is what a peer checks.
    func testResetTokenMatchesIssuedTokens() throws {
        let h = ConnectionHarness()
        h.completeHandshake()
        let id = try XCTUnwrap(h.client.serverSourceID)
        let issued = try XCTUnwrap(h.endpoint.context.routes[id]).localIDs.active.first { $0.id == id }
        XCTAssertEqual(issued?.resetToken, h.ids.resetToken(for: id))
    }
}
