// The small parts: byte classes, windows, budgets, stream memory.

import XCTest
import Core
@testable import HTTP2

final class ConnectionPartsTests: XCTestCase {
    private func mask(_ chars: String) -> (UInt64, UInt64) {
        var low: UInt64 = 0, high: UInt64 = 0
        for c in chars.utf8 { if c < 64 { low |= 1 << UInt64(c) } else { high |= 1 << UInt64(c - 64) } }
        return (low, high)
    }

    func testMasksMatchTheirABNF() {
        let tcharSymbols = "!#$%&'*+-.^_`|~0123456789"
        let lower = "abcdefghijklmnopqrstuvwxyz", upper = lower.uppercased()
        XCTAssertTrue(mask(tcharSymbols + lower) == (FieldSyntax.lowerTokenLow, FieldSyntax.lowerTokenHigh))
        XCTAssertTrue(mask(tcharSymbols + lower + upper) == (FieldSyntax.tokenLow, FieldSyntax.tokenHigh))
        XCTAssertTrue(mask(lower + upper + "0123456789+-.") == (FieldSyntax.schemeLow, FieldSyntax.schemeHigh))
        XCTAssertTrue(mask(lower + upper + "0123456789-._~!$&'()*+,;=") == (FieldSyntax.regNameLow, FieldSyntax.regNameHigh))
    }

    func testAuthoritySyntax() {
        func ok(_ s: String, port: Bool = false) -> Bool { Array(s.utf8).withUnsafeBytes { FieldSyntax.isAuthority($0, requirePort: port) } }
        XCTAssertTrue(ok("example.com"))
        XCTAssertTrue(ok("example.com:443"))
        XCTAssertTrue(ok("[::1]:8080"))
        XCTAssertTrue(ok("a%20b"))
        XCTAssertFalse(ok("[::1"))
        XCTAssertFalse(ok("a b"))
        XCTAssertFalse(ok("u@h"))
        XCTAssertFalse(ok(":80"))
        XCTAssertFalse(ok("h:65536"))
        XCTAssertFalse(ok("h", port: true))
        XCTAssertFalse(ok("h:", port: true))
        XCTAssertTrue(ok("h:1", port: true))
    }

    func testReceiveWindowBatchesCredit() {
        var w = ReceiveWindow(100)
        XCTAssertTrue(w.receive(100))
        XCTAssertFalse(w.receive(1))
        XCTAssertNil(w.release(49))
        XCTAssertEqual(w.release(1), 50)
        XCTAssertEqual(w.available, 50)
        w.rebase(to: 10)
        XCTAssertEqual(w.available, -40)
        XCTAssertFalse(w.receive(1))
    }

    func testSendWindowRefusesOverflow() {
        var w = SendWindow(0x7fff_fff0)
        XCTAssertTrue(w.increase(by: 0xf))
        XCTAssertFalse(w.increase(by: 1))
        XCTAssertEqual(w.value, 0x7fff_ffff)
        XCTAssertTrue(w.increase(by: -0x7fff_ffff - 10))
        XCTAssertEqual(w.value, -10)
    }

    func testTokenBucket() {
        var b = TokenBucket(burst: 2, perSecond: 10)
        XCTAssertTrue(b.take(now: ms(0)))
        XCTAssertTrue(b.take(now: ms(0)))
        XCTAssertFalse(b.take(now: ms(50)))
        XCTAssertTrue(b.take(now: ms(100)))  // 1000 ms * 10/s: one token per 100 ms
        XCTAssertFalse(b.take(now: ms(100)))
        XCTAssertTrue(b.take(now: ms(10_000)))
        XCTAssertTrue(b.take(now: ms(10_000)))
        XCTAssertFalse(b.take(now: ms(10_000)))  // capped at the burst
        XCTAssertFalse(b.take(now: ms(5)))  // time going backwards refills nothing
    }

    // The clock has nanoseconds; refill counts whole milliseconds and keeps
    // the fraction, so takes closer together than a millisecond still refill.
    func testTokenBucketKeepsFractionsOfAMillisecond() {
        var b = TokenBucket(burst: 1, perSecond: 1000)  // one token per ms
        let start = ms(7)
        XCTAssertTrue(b.take(now: start))
        XCTAssertFalse(b.take(now: Instant(nanoseconds: start.nanoseconds + 400_000)))
        XCTAssertFalse(b.take(now: Instant(nanoseconds: start.nanoseconds + 800_000)))
        XCTAssertTrue(b.take(now: Instant(nanoseconds: start.nanoseconds + 1_200_000)))
        XCTAssertFalse(b.take(now: Instant(nanoseconds: start.nanoseconds + 1_900_000)))
        XCTAssertTrue(b.take(now: Instant(nanoseconds: start.nanoseconds + 2_000_000)))
    }

    func testControlQueueForgetsWrittenFrames() {
        var q = ControlQueue(limit: 2)
        XCTAssertTrue(q.add(endingAt: 10, flushed: 0))
        XCTAssertTrue(q.add(endingAt: 20, flushed: 0))
        XCTAssertFalse(q.add(endingAt: 30, flushed: 15))
        XCTAssertTrue(q.add(endingAt: 40, flushed: 30))
        XCTAssertEqual(q.count, 1)
    }

    func testClosedStreamsRing() {
        var c = ClosedStreams(capacity: 2)
        c.remember(1, .closed)
        c.remember(3, .resetByUs)
        XCTAssertEqual(c.lookup(1), .closed)
        XCTAssertEqual(c.lookup(3), .resetByUs)
        c.remember(5, .closed)
        XCTAssertNil(c.lookup(1))
        XCTAssertEqual(c.lookup(5), .closed)
        XCTAssertNil(c.lookup(7))
    }

    func testStreamStateTransitions() {
        XCTAssertEqual(StreamState.opened(endStream: true), .halfClosedRemote)
        XCTAssertEqual(StreamState.opened(endStream: false), .open)
        XCTAssertEqual(StreamState.open.receiveEndStream(), .halfClosedRemote)
        XCTAssertEqual(StreamState.open.sendEndStream(), .halfClosedLocal)
        XCTAssertNil(StreamState.halfClosedLocal.receiveEndStream())
        XCTAssertNil(StreamState.halfClosedRemote.sendEndStream())
        XCTAssertFalse(StreamState.halfClosedRemote.peerMaySend)
        XCTAssertFalse(StreamState.halfClosedLocal.mayWeSend)
    }

    func testLimitsAreClampedToTheRFC() {
        var l = H2Limits()
        l.maxFrameSize = 1
        l.initialStreamWindow = Int.max
        l.connectionWindow = 10
        let c = l.clamped
        XCTAssertEqual(c.maxFrameSize, 16384)
        XCTAssertEqual(c.initialStreamWindow, 0x7fff_ffff)
        XCTAssertEqual(c.connectionWindow, 65535)
    }
}
