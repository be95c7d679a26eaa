import Glibc
import XCTest
@testable import Core

/// The back-off after a shortage at accept (Sources/Core/AcceptBackoff.swift).
/// EMFILE is also tested for real, end to end (tests/e2e/test_accept_errors.py);
/// ENFILE, ENOMEM and ENOBUFS cannot be caused on demand on a shared machine,
/// so their errnos are injected: here, through the same classification, and
/// end to end at the worker's accept4 call (tests/e2e/accept_inject.c).
final class AcceptBackoffTests: XCTestCase {
    private let t0 = Instant(nanoseconds: 1_000_000_000)

    private func at(_ ms: Int) -> Instant { t0.adding(milliseconds: ms) }

    func testEveryShortageErrnoPausesForTenMillisecondsAndBeginsAnEpisode() {
        for err in [EMFILE, ENFILE, ENOMEM, ENOBUFS] {
            var b = AcceptBackoff()
            XCTAssertEqual(b.failed(AcceptFailure(errno: err), now: t0), .pause(until: at(10), episodeBegan: true))
            XCTAssertTrue(b.isPaused)
            XCTAssertEqual(b.failures, 1)
            XCTAssertEqual(b.millisecondsUntilRetry(now: t0), 10)
        }
    }

    func testTheDelayDoublesUpToOneSecondAndOnlyTheFirstFailureIsLogged() {
        for err in [EMFILE, ENFILE, ENOMEM, ENOBUFS] {
            var b = AcceptBackoff()
            var now = t0
            var delays: [Int] = []
            var logged = 0
            for _ in 0..<10 {
                guard case .pause(let until, let began) = b.failed(AcceptFailure(errno: err), now: now) else {
                    return XCTFail("errno \(err) did not pause")
                }
                if began { logged += 1 }
                delays.append(until.milliseconds(since: now))
                XCTAssertFalse(b.retryDue(now: until.adding(milliseconds: -1)))
                XCTAssertTrue(b.retryDue(now: until))
                XCTAssertFalse(b.retryDue(now: until), "a pause ends once")
                now = until
            }
            XCTAssertEqual(delays, [10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000])
            XCTAssertEqual(logged, 1, "one log line per episode, not per failure")
            XCTAssertEqual(b.succeeded(), 10, "the accept that ends the episode reports its failures")
        }
    }

    func testASuccessEndsTheEpisodeAndResetsTheDelay() {
        var b = AcceptBackoff()
        XCTAssertNil(b.succeeded(), "no episode: nothing to report")
        _ = b.failed(AcceptFailure(errno: ENOBUFS), now: t0)
        _ = b.retryDue(now: at(10))
        _ = b.failed(AcceptFailure(errno: ENOBUFS), now: at(10))
        XCTAssertEqual(b.succeeded(), 2)
        XCTAssertFalse(b.isPaused)
        XCTAssertEqual(b.failures, 0)
        // A new episode: logged again, from the first delay again.
        XCTAssertEqual(b.failed(AcceptFailure(errno: ENOMEM), now: at(100)), .pause(until: at(110), episodeBegan: true))
    }

    func testAClosingConnectionMakesTheRetryDueAtOnceButDoesNotEndTheEpisode() {
        var b = AcceptBackoff()
        XCTAssertFalse(b.descriptorFreed(now: t0), "not paused: nothing to retry")
        _ = b.failed(AcceptFailure(errno: EMFILE), now: t0)
        XCTAssertTrue(b.descriptorFreed(now: at(1)))
        XCTAssertTrue(b.isPaused, "the listener stays out until the retry is made")
        XCTAssertEqual(b.millisecondsUntilRetry(now: at(1)), 0)
        XCTAssertTrue(b.retryDue(now: at(1)))
        XCTAssertFalse(b.isPaused)
        XCTAssertEqual(b.failures, 1, "the episode ends with the retry's answer, not before")
        // Still short (another process took the descriptor): the episode goes on, unlogged, the delay doubled.
        XCTAssertEqual(b.failed(AcceptFailure(errno: EMFILE), now: at(1)), .pause(until: at(21), episodeBegan: false))
        // A close never postpones a retry already due earlier.
        XCTAssertTrue(b.descriptorFreed(now: at(50)))
        XCTAssertEqual(b.retryAt, at(21))
    }

    func testAnEmptyQueueEndsAnEpisodeSinceTheDescriptorWasThere() {
        // Linux reserves the descriptor and the socket before it looks at the
        // queue: EAGAIN means neither ran short.
        var b = AcceptBackoff()
        XCTAssertEqual(b.failed(AcceptFailure(errno: EAGAIN), now: t0), .waitForReadiness(endedEpisode: nil))
        for err in [EMFILE, ENFILE, ENOMEM, ENOBUFS] {
            _ = b.failed(AcceptFailure(errno: err), now: t0)
            XCTAssertTrue(b.retryDue(now: at(10)))
            _ = b.failed(AcceptFailure(errno: err), now: at(10))
            XCTAssertTrue(b.retryDue(now: at(30)))
            XCTAssertEqual(b.failed(AcceptFailure(errno: EAGAIN), now: at(30)), .waitForReadiness(endedEpisode: 2))
            XCTAssertEqual(b.failures, 0)
            XCTAssertFalse(b.isPaused)
            XCTAssertEqual(b.failed(AcceptFailure(errno: err), now: at(40)), .pause(until: at(50), episodeBegan: true))
            _ = b.succeeded()
        }
    }

    func testALostConnectionTriesTheNextAndLeavesAnEpisodeAlone() {
        var b = AcceptBackoff()
        XCTAssertEqual(b.failed(AcceptFailure(errno: ECONNABORTED), now: t0), .acceptNext)
        XCTAssertFalse(b.isPaused)
        XCTAssertEqual(b.failures, 0)
        _ = b.failed(AcceptFailure(errno: ENFILE), now: t0)
        XCTAssertEqual(b.failed(AcceptFailure(errno: EINTR), now: at(1)), .acceptNext)
        XCTAssertEqual(b.failures, 1)
        XCTAssertEqual(b.retryAt, at(10))
    }

    func testAnUnexpectedErrnoPausesToo() {
        var b = AcceptBackoff()
        XCTAssertEqual(b.failed(AcceptFailure(errno: EBADF), now: t0), .pause(until: at(10), episodeBegan: true))
    }

    func testTheRetryWaitRoundsUp() {
        var b = AcceptBackoff()
        _ = b.failed(AcceptFailure(errno: EMFILE), now: t0)
        XCTAssertEqual(b.millisecondsUntilRetry(now: Instant(nanoseconds: t0.nanoseconds + 9_500_000)), 1)
        XCTAssertEqual(b.millisecondsUntilRetry(now: at(10)), 0)
        XCTAssertEqual(b.millisecondsUntilRetry(now: at(50)), 0)
    }
}
