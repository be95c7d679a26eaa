import XCTest
import Core
@testable import Exchanges

/// The per-request decisions every transport takes from `HTTPExchange`
/// (RFC 9110 §6.4.1, §6.6.1, §8.6, §15.2; --max-body).
final class HTTPExchangeTests: XCTestCase {
    let t0 = Instant(nanoseconds: 5_000_000_000)

    func exchange(isHead: Bool = false, declared: Int64? = nil, maxBody: Int64 = 100) -> HTTPExchange {
        HTTPExchange(isHead: isHead, declaredBodyLength: declared, maxBody: maxBody, start: t0)
    }

    /// Builds a head over `fields` (names only; values empty) and plans it.
    func plan(_ e: inout HTTPExchange, status: Int, length: Int64? = nil, fields: [StaticString] = []) -> HTTPExchange.ResponsePlan {
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        let list = fields.map { ResponseField(name: UnsafeRawBufferPointer(start: $0.utf8Start, count: $0.utf8CodeUnitCount), value: empty) }
        return list.withUnsafeBufferPointer { f in
            e.beginResponse(ResponseHead(status: status, reason: empty, fields: f, contentLength: length, close: false))
        }
    }

    // MARK: - --min-body-rate

    func at(_ ms: Int64) -> Instant { Instant(nanoseconds: t0.nanoseconds + ms * 1_000_000) }

    /// A byte every 900 ms against 100 B/s with a 1 s grace: the first wait
    /// is inside the grace, the second ends past it at 2 bytes in 1.8 s.
    func testADribbleFailsOnceTheWaitsPassTheGrace() {
        var e = HTTPExchange(isHead: false, declaredBodyLength: 100, maxBody: 100, start: t0, minBodyRate: 100)
        e.bodyWaitBegins(now: at(0))
        _ = e.receiveBody(count: 1)
        XCTAssertFalse(e.bodyWaitEnds(now: at(900), graceMilliseconds: 1000))
        XCTAssertNil(e.bodyFailure)
        e.bodyWaitBegins(now: at(900))
        _ = e.receiveBody(count: 1)
        XCTAssertTrue(e.bodyWaitEnds(now: at(1800), graceMilliseconds: 1000))
        XCTAssertEqual(e.bodyFailure, 408)
    }

    /// Only the application's waits count: an application that took 10 s
    /// between reads (holding the client back) does not make the client slow.
    func testTimeTheApplicationWasBusyDoesNotCount() {
        var e = HTTPExchange(isHead: false, declaredBodyLength: 10_000, maxBody: 10_000, start: t0, minBodyRate: 1000)
        for i: Int64 in 0..<20 {
            // The application reads at 10 s intervals; each of its waits lasts 100 ms and brings 200 bytes.
            e.bodyWaitBegins(now: at(i * 10_000))
            _ = e.receiveBody(count: 200)
            XCTAssertFalse(e.bodyWaitEnds(now: at(i * 10_000 + 100), graceMilliseconds: 1000), "read \(i)")
        }
        XCTAssertNil(e.bodyFailure)
        XCTAssertEqual(e.bodyWaitNanoseconds, 2_000_000_000)
    }

    func testZeroIsNoRuleAndBytesWithoutAWaitAreNoCheck() {
        var off = HTTPExchange(isHead: false, declaredBodyLength: 100, maxBody: 100, start: t0, minBodyRate: 0)
        off.bodyWaitBegins(now: at(0))
        _ = off.receiveBody(count: 1)
        XCTAssertFalse(off.bodyWaitEnds(now: at(60_000), graceMilliseconds: 1000))
        var e = HTTPExchange(isHead: false, declaredBodyLength: 100, maxBody: 100, start: t0, minBodyRate: 100)
        XCTAssertFalse(e.bodyWaitEnds(now: at(60_000), graceMilliseconds: 1000), "no wait began")
        XCTAssertNil(e.bodyFailure)
    }

    // MARK: - --max-body

    func testDeclaredBodyOverMaxBodyIsRefusedWith413BeforeReading() {
        XCTAssertEqual(exchange(declared: 101).refusal, 413)
        XCTAssertNil(exchange(declared: 100).refusal)
        XCTAssertNil(exchange(declared: 0).refusal)
        XCTAssertNil(exchange(declared: nil).refusal)
    }

    func testBodyWithoutDeclaredLengthIsHeldToMaxBodyAsItGrows() {
        var e = exchange(maxBody: 10)
        XCTAssertEqual(e.receiveBody(count: 6), .accepted)
        XCTAssertEqual(e.receiveBody(count: 4), .accepted)  // exactly the limit
        XCTAssertNil(e.bodyFailure)
        XCTAssertEqual(e.receiveBody(count: 1), .tooLarge)
        XCTAssertEqual(e.bodyFailure, 413)
        XCTAssertEqual(e.receiveBody(count: 1), .tooLarge)
        XCTAssertEqual(e.bodyReceived, 12)
    }

    func testFirstBodyFailureIsTheOneReported() {
        var e = exchange()
        e.failBody(status: 408)
        e.failBody(status: 0)
        XCTAssertEqual(e.bodyFailure, 408)
        var f = exchange(maxBody: 1)
        _ = f.receiveBody(count: 2)
        f.failBody(status: 400)
        XCTAssertEqual(f.bodyFailure, 413)
    }

    // MARK: - Response head

    func testFinalStatusOutsideTwoHundredToNineNineNineBecomes500() {
        for requested in [0, 100, 101, 103, 199, 1000, -1] {
            var e = exchange()
            let p = plan(&e, status: requested, length: 5)
            XCTAssertEqual(p.status, 500, "status \(requested)")
            XCTAssertFalse(p.bodyless)
            XCTAssertEqual(p.contentLength, 5)
            XCTAssertEqual(e.status, 500)
        }
        for requested in [200, 299, 404, 599, 999] {
            var e = exchange()
            XCTAssertEqual(plan(&e, status: requested).status, requested)
        }
    }

    func testNoContentAndNotModifiedAreBodylessWithoutContentLength() {
        for status in [204, 304] {
            var e = exchange()
            let p = plan(&e, status: status, length: 12)
            XCTAssertTrue(p.bodyless)
            XCTAssertNil(p.contentLength, "RFC 9110 §8.6: no content-length on \(status)")
            XCTAssertTrue(e.bodyless)
        }
    }

    func testHeadResponseIsBodylessButKeepsTheDeclaredLength() {
        var e = exchange(isHead: true)
        let p = plan(&e, status: 200, length: 42)
        XCTAssertTrue(p.bodyless)
        XCTAssertEqual(p.contentLength, 42)
        var unknown = exchange(isHead: true)
        XCTAssertNil(plan(&unknown, status: 200).contentLength)
    }

    func testOtherFinalResponsesHaveBodiesAndTheirLength() {
        var e = exchange()
        let p = plan(&e, status: 200, length: 0)
        XCTAssertFalse(p.bodyless)
        XCTAssertEqual(p.contentLength, 0)
        var streamed = exchange()
        XCTAssertNil(plan(&streamed, status: 200).contentLength)
    }

    func testDateIsAddedUnlessTheApplicationGaveOneInAnyCase() {
        for (fields, adds) in [([], true), (["content-type"], true), (["Date"], false), (["DATE"], false),
                               (["x-a", "date"], false), (["dates"], true), (["dat"], true)] as [([StaticString], Bool)] {
            var e = exchange()
            XCTAssertEqual(plan(&e, status: 200, fields: fields).addsDate, adds, "\(fields)")
        }
    }

    /// RFC 9114 §3.1.1: the server advertises HTTP/3 unless the application
    /// gave its own Alt-Svc, in any case; found in the same pass as Date.
    func testAnApplicationsOwnAltSvcIsNoticedInAnyCase() {
        for (fields, has, addsDate) in [([], false, true), (["alt-svc"], true, true), (["Alt-Svc", "date"], true, false),
                                         (["ALT-SVC"], true, true), (["alt-svcs"], false, true), (["alt-sv"], false, true),
                                         (["x-alt-svc"], false, true)] as [([StaticString], Bool, Bool)] {
            var e = exchange()
            let p = plan(&e, status: 200, fields: fields)
            XCTAssertEqual(p.hasAltSvc, has, "\(fields)")
            XCTAssertEqual(p.addsDate, addsDate, "\(fields)")
        }
    }

    func testHeadSentOnceAStatusIsChosen() {
        var e = exchange()
        XCTAssertFalse(e.headSent)
        _ = plan(&e, status: 200)
        XCTAssertTrue(e.headSent)
    }

    func testDirectResponsesRecordTheirStatus() {
        var e = exchange(declared: 1000)
        XCTAssertEqual(e.refusal, 413)
        e.respondDirectly(status: 413)
        XCTAssertEqual(e.status, 413)
        XCTAssertFalse(e.bodyless)
        var h = exchange(isHead: true)
        h.respondDirectly(status: 500)
        XCTAssertTrue(h.bodyless)
    }

    // MARK: - Accounting

    func testBytesOutAndDurationForTheAccessLog() {
        var e = exchange()
        e.countOut(5)
        e.countOut(7)
        XCTAssertEqual(e.bytesOut, 12)
        XCTAssertEqual(e.milliseconds(until: t0.adding(milliseconds: 250)), 250, accuracy: 0.001)
    }

    // MARK: - The response held to its declared length

    func testBodyPastTheDeclaredLengthIsCutToIt() {
        // RFC 9110 §8.6: the length is the content's size.
        var e = exchange()
        _ = plan(&e, status: 200, length: 10)
        XCTAssertEqual(e.responseLength, 10)
        XCTAssertEqual(e.admitBody(6), 6)
        XCTAssertEqual(e.admitBody(6), 4)
        XCTAssertEqual(e.admitBody(3), 0)
        XCTAssertEqual(e.bodyAdmitted, 10)
        XCTAssertFalse(e.bodyEndedShort())
    }

    func testBodyShortOfTheDeclaredLengthIsReportedOnce() {
        var e = exchange()
        _ = plan(&e, status: 200, length: 100)
        XCTAssertEqual(e.admitBody(10), 10)
        XCTAssertTrue(e.bodyEndedShort())
        XCTAssertFalse(e.bodyEndedShort(), "reported (and logged) once")
    }

    func testBodyWithoutDeclaredLengthIsNotHeldToOne() {
        var e = exchange()
        _ = plan(&e, status: 200)
        XCTAssertNil(e.responseLength)
        XCTAssertEqual(e.admitBody(1 << 40), 1 << 40)
        XCTAssertFalse(e.bodyEndedShort())
    }

    func testBodylessResponsesAreNotHeldToTheirLength() {
        // HEAD keeps the length it would have (it describes a GET), 204/304
        // carry none: none of them has a body to hold to it.
        for (isHead, status) in [(true, 200), (false, 204), (false, 304)] {
            var e = exchange(isHead: isHead)
            _ = plan(&e, status: status, length: 50)
            XCTAssertNil(e.responseLength)
            XCTAssertFalse(e.bodyEndedShort())
        }
    }

    // MARK: - 100-continue (RFC 9110 §10.1.1)

    func testContinueIsSentOnceWhenTheBodyIsFirstAskedFor() {
        var e = HTTPExchange(isHead: false, declaredBodyLength: 5, maxBody: 100, start: t0, expectsContinue: true)
        XCTAssertTrue(e.continuePending)
        XCTAssertTrue(e.continueNeeded(bodyArrived: false))
        XCTAssertFalse(e.continuePending)
        XCTAssertFalse(e.continueNeeded(bodyArrived: false), "decided once")
    }

    func testNoContinueOnceBodyArrivedOrTheResponseBegan() {
        var arrived = HTTPExchange(isHead: false, declaredBodyLength: 5, maxBody: 100, start: t0, expectsContinue: true)
        XCTAssertFalse(arrived.continueNeeded(bodyArrived: true))
        XCTAssertFalse(arrived.continuePending)
        var answered = HTTPExchange(isHead: false, declaredBodyLength: 5, maxBody: 100, start: t0, expectsContinue: true)
        _ = plan(&answered, status: 200)
        XCTAssertTrue(answered.continuePending, "the client may still wait: the connection cannot be reused")
        XCTAssertFalse(answered.continueNeeded(bodyArrived: false))
    }

    func testNoContinueWithoutTheExpectation() {
        var e = exchange(declared: 5)
        XCTAssertFalse(e.continuePending)
        XCTAssertFalse(e.continueNeeded(bodyArrived: false))
    }
}
