import Glibc
import XCTest
@testable import Core

/// The errno → AcceptFailure mapping (accept(2), ERRORS and the Linux notes).
final class AcceptFailureTests: XCTestCase {
    func testEmptyQueueWaitsForThePoller() {
        XCTAssertEqual(AcceptFailure(errno: EAGAIN), .queueEmpty)
        XCTAssertEqual(AcceptFailure(errno: EWOULDBLOCK), .queueEmpty)
    }

    func testErrorsOfOneConnectionAreRetriedAtOnce() {
        // "Linux accept() passes already-pending network errors on the new
        // socket as an error code from accept() ... treat them like EAGAIN
        // by retrying."
        for err in [EINTR, ECONNABORTED, EPROTO, EPERM, ENETDOWN, ENOPROTOOPT, EHOSTDOWN, ENONET, EHOSTUNREACH,
                    EOPNOTSUPP, ENETUNREACH, ETIMEDOUT] {
            XCTAssertEqual(AcceptFailure(errno: err), .connectionLost, "errno \(err)")
            XCTAssertFalse(AcceptFailure(errno: err).pausesAccepting)
        }
    }

    func testShortagesPauseAccepting() {
        XCTAssertEqual(AcceptFailure(errno: EMFILE), .exhausted(.processDescriptors))
        XCTAssertEqual(AcceptFailure(errno: ENFILE), .exhausted(.systemDescriptors))
        XCTAssertEqual(AcceptFailure(errno: ENOMEM), .exhausted(.memory))
        XCTAssertEqual(AcceptFailure(errno: ENOBUFS), .exhausted(.socketBuffers))
        for err in [EMFILE, ENFILE, ENOMEM, ENOBUFS] { XCTAssertTrue(AcceptFailure(errno: err).pausesAccepting) }
    }

    func testShortagesNameTheirErrno() {
        XCTAssertTrue(AcceptShortage.processDescriptors.errnoName.sameText(as: "EMFILE"))
        XCTAssertTrue(AcceptShortage.systemDescriptors.errnoName.sameText(as: "ENFILE"))
        XCTAssertTrue(AcceptShortage.memory.errnoName.sameText(as: "ENOMEM"))
        XCTAssertTrue(AcceptShortage.socketBuffers.errnoName.sameText(as: "ENOBUFS"))
    }

    func testUnexpectedErrorsPauseRatherThanSpin() {
        // EBADF on a listener cannot clear by retrying at once.
        XCTAssertEqual(AcceptFailure(errno: EBADF), .unexpected(errno: EBADF))
        XCTAssertTrue(AcceptFailure(errno: EBADF).pausesAccepting)
    }

    func testAShutDownListenerEndsAcceptingWithoutAnEpisode() {
        // EINVAL: the supervisor shut the shared listener down (it is
        // stopping). No back-off, no shortage to log: accepting is over.
        XCTAssertEqual(AcceptFailure(errno: EINVAL), .listenerShutDown)
        var backoff = AcceptBackoff()
        XCTAssertEqual(backoff.failed(.listenerShutDown, now: Instant(nanoseconds: 0)), .stopAccepting)
        XCTAssertFalse(backoff.isPaused)
        XCTAssertEqual(backoff.failures, 0)
    }
}
