// DPLPMTUD's search alone (RFC 8899 §5, RFC 9000 §14.3): probe sizes,
// confirmation, MAX_PROBES losses, the binary search's end, the raise
// timer and black hole detection, with a fake clock.

import XCTest
import Core
@testable import QUIC

final class PathMTUDiscoveryTests: XCTestCase {
    private let t0 = Instant(nanoseconds: 1_000_000_000)

    /// Runs a search against a path that carries datagrams up to `mtu`
    /// bytes: each probe is acknowledged if it fits, else lost. Returns the
    /// probe sizes in order.
    private func search(_ p: inout PathMTUDiscovery, mtu: Int, limit: Int = 100) -> [Int] {
        var sizes: [Int] = []
        var pn: UInt64 = 100
        while let size = p.probeDue(now: t0), sizes.count < limit {
            sizes.append(size)
            p.probeSent(packetNumber: pn)
            if size <= mtu { p.acknowledged(pn, now: t0) } else { p.lost(pn, now: t0) }
            pn += 1
        }
        return sizes
    }

    /// RFC 9000 §14: every connection starts at 1200 and nothing is probed
    /// before the search starts (handshake confirmed).
    func testStartsAtBaseAndIdle() {
        var p = PathMTUDiscovery(maximum: 1452)
        XCTAssertEqual(p.current, 1200)
        XCTAssertEqual(p.phase, .idle)
        XCTAssertNil(p.probeDue(now: t0))
    }

    /// The maximum first: on a path that carries it, one probe ends the search for good.
    func testOneProbeWhenTheMaximumFits() {
        var p = PathMTUDiscovery(maximum: 1452)
        p.start(peerMaximum: 65527)
        XCTAssertEqual(search(&p, mtu: 1500), [1452])
        XCTAssertEqual(p.current, 1452)
        XCTAssertEqual(p.phase, .complete(raiseAt: nil))
        XCTAssertEqual(p.raises, 1)
    }

    /// The peer's max_udp_payload_size caps the search (§18.2).
    func testThePeersLimitCaps() {
        var p = PathMTUDiscovery(maximum: 9000)
        p.start(peerMaximum: 1350)
        XCTAssertEqual(search(&p, mtu: 65536), [1350])
        XCTAssertEqual(p.current, 1350)
    }

    /// A maximum of 1200 (or a peer limit of 1200) means no search at all.
    func testNothingToSearch() {
        var p = PathMTUDiscovery(maximum: 1200)
        p.start(peerMaximum: 65527)
        XCTAssertNil(p.probeDue(now: t0))
        XCTAssertEqual(p.phase, .complete(raiseAt: nil))
        var q = PathMTUDiscovery(maximum: 1452)
        q.start(peerMaximum: 1200)
        XCTAssertNil(q.probeDue(now: t0))
    }

    /// RFC 8899 §5.1.2 MAX_PROBES: a size counts as too large after three
    /// lost probes, not one (a probe may be lost to congestion); then the
    /// binary search settles at most `searchGranularity` below the path MTU.
    func testBinarySearchSettlesBelowThePathMTU() {
        var p = PathMTUDiscovery(maximum: 1452)
        p.start(peerMaximum: 65527)
        let sizes = search(&p, mtu: 1300)
        XCTAssertEqual(Array(sizes.prefix(3)), [1452, 1452, 1452], "MAX_PROBES losses of the maximum")
        XCTAssertLessThanOrEqual(p.current, 1300)
        XCTAssertGreaterThan(p.current, 1300 - PathMTUDiscovery.searchGranularity)
        XCTAssertTrue(sizes.allSatisfy { $0 > 1200 && $0 <= 1452 })
        XCTAssertLessThan(sizes.count, 40)
        guard case .complete(let raiseAt) = p.phase else { return XCTFail("\(p.phase)") }
        XCTAssertEqual(raiseAt, Instant(nanoseconds: t0.nanoseconds + PathMTUDiscovery.raiseInterval))
    }

    /// One lost probe then an acknowledged one of the same size: confirmed.
    func testASingleLossIsRetried() {
        var p = PathMTUDiscovery(maximum: 1452)
        p.start(peerMaximum: 65527)
        XCTAssertEqual(p.probeDue(now: t0), 1452)
        p.probeSent(packetNumber: 1)
        XCTAssertNil(p.probeDue(now: t0), "one probe outstanding at a time")
        p.lost(1, now: t0)
        XCTAssertEqual(p.probeDue(now: t0), 1452)
        p.probeSent(packetNumber: 2)
        p.acknowledged(7, now: t0)  // another packet: nothing
        XCTAssertEqual(p.current, 1200)
        p.acknowledged(2, now: t0)
        XCTAssertEqual(p.current, 1452)
    }

    /// RFC 8899 §5.1.1 PMTU_RAISE_TIMER: a search that ended below the
    /// maximum starts again 600 s later, from the confirmed size up.
    func testRaiseTimerSearchesAgain() {
        var p = PathMTUDiscovery(maximum: 1452)
        p.start(peerMaximum: 65527)
        _ = search(&p, mtu: 1300)
        let settled = p.current
        XCTAssertNil(p.probeDue(now: Instant(nanoseconds: t0.nanoseconds + PathMTUDiscovery.raiseInterval - 1)))
        let later = Instant(nanoseconds: t0.nanoseconds + PathMTUDiscovery.raiseInterval)
        XCTAssertEqual(p.probeDue(now: later), 1452, "the maximum first again")
        p.probeSent(packetNumber: 500)
        p.acknowledged(500, now: later)  // the path grew
        XCTAssertEqual(p.current, 1452)
        XCTAssertGreaterThan(p.current, settled)
        XCTAssertEqual(p.phase, .complete(raiseAt: nil))
    }

    /// RFC 8899 §4.3: probe timeouts in a row above BASE are a black hole:
    /// back to 1200 and search again; at BASE they are just loss.
    func testBlackHoleFallsBackToBase() {
        var p = PathMTUDiscovery(maximum: 1452)
        p.start(peerMaximum: 65527)
        _ = search(&p, mtu: 1500)
        XCTAssertEqual(p.current, 1452)
        XCTAssertFalse(p.checkBlackHole(probeTimeouts: PathMTUDiscovery.blackHoleProbeTimeouts - 1))
        XCTAssertTrue(p.checkBlackHole(probeTimeouts: PathMTUDiscovery.blackHoleProbeTimeouts))
        XCTAssertEqual(p.current, 1200)
        XCTAssertEqual(p.blackHoles, 1)
        XCTAssertFalse(p.checkBlackHole(probeTimeouts: 10), "at BASE a PTO is no black hole")
        XCTAssertEqual(p.phase, .searching)
        XCTAssertEqual(search(&p, mtu: 1400).first, 1452, "a fresh search")
        XCTAssertLessThanOrEqual(p.current, 1400)
    }

    /// A probe's answer that comes after a black hole reset is ignored:
    /// it says nothing about the path as it is now.
    func testAProbeOutstandingAtABlackHoleIsForgotten() throws {
        var p = PathMTUDiscovery(maximum: 1452)
        p.start(peerMaximum: 65527)
        var pn: UInt64 = 0
        // Against a 1300-byte path until a size above BASE is confirmed and another probe is out.
        while !(p.current > 1200 && p.outstanding != nil), let size = p.probeDue(now: t0) {
            pn += 1
            p.probeSent(packetNumber: pn)
            if size > 1300 { p.lost(pn, now: t0) } else if p.current == 1200 { p.acknowledged(pn, now: t0) }
        }
        let probe = try XCTUnwrap(p.outstanding)
        XCTAssertTrue(p.checkBlackHole(probeTimeouts: 3))
        XCTAssertNil(p.outstanding)
        p.acknowledged(probe, now: t0)
        XCTAssertEqual(p.current, 1200)
    }
}
