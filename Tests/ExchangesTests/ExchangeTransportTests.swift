import XCTest
import Core
@testable import Exchanges

/// The exchange written once for every transport (`ExchangeTransport`'s
/// `Exchange` and `AsyncExchange`), driven against a transport with no
/// socket and no Python: what is framed, what is dropped, what is cut off,
/// when the body fails and how (RFC 9110 §6.4.1, §8.6, §10.1.1, §15.5.9,
/// §15.5.14; RFC 9112 §6.3; --max-body, --request-timeout).
final class ExchangeTransportTests: XCTestCase {
    typealias Event = FakeTransport.Event

    // MARK: - Heads

    func testHeadIsPlannedWithDateAndContentLength() {
        let t = FakeTransport()
        XCTAssertTrue(t.withHead(200, length: 5) { t.sendHead($0) })
        XCTAssertEqual(t.events, [.head(status: 200, contentLength: 5, addsDate: true, bodyless: false, trailers: false)])
        XCTAssertTrue(t.headSent)
    }

    func testApplicationDateIsKept() {
        let t = FakeTransport()
        _ = t.withHead(200, fields: ["Date"]) { t.sendHead($0, trailers: false) }
        XCTAssertEqual(t.events, [.head(status: 200, contentLength: nil, addsDate: false, bodyless: false, trailers: false)])
    }

    /// RFC 9110 §15.2: 1xx is interim, never the final status.
    func testInterimStatusAsFinalBecomes500() {
        let t = FakeTransport()
        _ = t.withHead(103) { t.sendHead($0) }
        XCTAssertEqual(t.events, [.head(status: 500, contentLength: nil, addsDate: true, bodyless: false, trailers: false)])
    }

    /// RFC 9110 §15.2: an interim response after the final head has started
    /// is too late and is dropped.
    func testInformationalAfterTheHeadIsDropped() {
        let t = FakeTransport()
        XCTAssertEqual(t.sendInformational(status: 103, fields: UnsafeBufferPointer(start: nil, count: 0)), .done)
        _ = t.withHead(200) { t.sendHead($0, trailers: false) }
        XCTAssertEqual(t.sendInformational(status: 103, fields: UnsafeBufferPointer(start: nil, count: 0)), .done)
        XCTAssertEqual(t.events, [.informational(103), .push,
                                  .head(status: 200, contentLength: nil, addsDate: true, bodyless: false, trailers: false)])
    }

    // MARK: - Bodyless responses (RFC 9110 §6.4.1, RFC 9112 §6.3 rule 1)

    /// A HEAD response keeps its content-length (RFC 9110 §9.3.2) but no
    /// body bytes go out.
    func testHeadRequestResponseBodyIsDroppedAndEnded() {
        let t = FakeTransport(isHead: true)
        _ = t.withHead(200, length: 5) { t.sendHead($0, trailers: false) }
        t.send("hello", final: true)
        XCTAssertEqual(t.events, [.head(status: 200, contentLength: 5, addsDate: true, bodyless: true, trailers: false),
                                  .body("", end: true, blocking: false), .push])
        XCTAssertEqual(t.exchange.bytesOut, 0)
        XCTAssertTrue(t.exchange.responseComplete)
    }

    /// RFC 9110 §8.6: no content-length on 204 and 304; their bodies drop.
    func testNoContentStatusesDropBodyAndLength() {
        for status in [204, 304] {
            let t = FakeTransport()
            _ = t.withHead(status, length: 5) { t.sendHead($0) }
            XCTAssertTrue(t.send("hello"))
            XCTAssertTrue(t.finish())
            XCTAssertEqual(t.events, [.head(status: status, contentLength: nil, addsDate: true, bodyless: true, trailers: false),
                                      .body("", end: true, blocking: true), .flush(blocking: true)], "\(status)")
            XCTAssertEqual(t.exchange.bytesOut, 0)
        }
    }

    func testBodylessFileIsClosedNotQueued() {
        let t = FakeTransport(isHead: true)
        _ = t.withHead(200, length: 100) { t.sendHead($0, trailers: false) }
        XCTAssertEqual(t.sendFile(fd: -1, offset: 0, count: 100), .done)
        XCTAssertEqual(t.events.dropFirst(), [.body("", end: true, blocking: false), .push])
        // Blocking: the whole file counts as dealt with.
        let w = FakeTransport(isHead: true)
        _ = w.withHead(200, length: 100) { w.sendHead($0) }
        XCTAssertEqual(w.sendFile(fd: -1, offset: 0, count: 100), 100)
        XCTAssertEqual(w.events.count, 1)
    }

    // MARK: - Content-Length held both ways (RFC 9110 §8.6)

    func testBodyPastDeclaredLengthIsCutToIt() {
        let t = FakeTransport()
        _ = t.withHead(200, length: 5) { t.sendHead($0) }
        XCTAssertTrue(t.send("hel"))
        XCTAssertTrue(t.send("lo, world"))
        XCTAssertTrue(t.send("!"))
        XCTAssertTrue(t.finish())
        XCTAssertEqual(t.events.dropFirst(), [.body("hel", end: false, blocking: true), .body("lo", end: false, blocking: true),
                                              .body("", end: true, blocking: true), .flush(blocking: true)])
        XCTAssertEqual(t.exchange.bytesOut, 5)
    }

    func testBodyShortOfDeclaredLengthIsCutOffNotEnded() {
        let t = FakeTransport()
        _ = t.withHead(200, length: 10) { t.sendHead($0) }
        XCTAssertTrue(t.send("hello"))
        XCTAssertFalse(t.finish())
        XCTAssertEqual(t.events.dropFirst(), [.body("hello", end: false, blocking: true), .flush(blocking: true), .aborted])
    }

    func testAsyncBodyShortOfDeclaredLengthIsFramedThenCutOff() {
        let t = FakeTransport()
        _ = t.withHead(200, length: 10) { t.sendHead($0, trailers: false) }
        XCTAssertEqual(t.send("hello", final: true), .done)
        XCTAssertEqual(t.events.dropFirst(), [.body("hello", end: false, blocking: false), .flush(blocking: false), .aborted])
        XCTAssertFalse(t.exchange.responseComplete)
    }

    func testFilePastDeclaredLengthIsQueuedToIt() {
        let t = FakeTransport()
        _ = t.withHead(200, length: 50) { t.sendHead($0, trailers: false) }
        XCTAssertEqual(t.sendFile(fd: -1, offset: 0, count: 80), .done)
        XCTAssertEqual(t.events.dropFirst(), [.file(count: 50, end: true), .push])
        XCTAssertTrue(t.exchange.responseComplete)
    }

    func testFileShortOfDeclaredLengthIsCutOff() {
        let t = FakeTransport()
        _ = t.withHead(200, length: 50) { t.sendHead($0, trailers: false) }
        XCTAssertEqual(t.sendFile(fd: -1, offset: 0, count: 20), .done)
        XCTAssertEqual(t.events.dropFirst(), [.aborted])
    }

    /// A transport that cannot send files is asked before anything is
    /// admitted: the gateway sends the file as body, held to the length once.
    func testTransportWithoutFilesLeavesTheFileToTheGateway() {
        let t = FakeTransport()
        t.sendsFiles = false
        _ = t.withHead(200, length: 4) { t.sendHead($0) }
        XCTAssertNil(t.sendFile(fd: -1, offset: 0, count: 4))
        XCTAssertTrue(t.send("data"))
        XCTAssertEqual(t.events.dropFirst(), [.body("data", end: false, blocking: true)])
        let w = FakeTransport()
        _ = w.withHead(200, length: 4) { w.sendHead($0) }
        XCTAssertEqual(w.sendFile(fd: -1, offset: 0, count: 6), 6)
        XCTAssertEqual(w.events.dropFirst(), [.transmittedFile(count: 4)])
    }

    // MARK: - Trailers

    func testAnnouncedTrailersEndTheBodyInsteadOfTheLastBlock() {
        let t = FakeTransport()
        _ = t.withHead(200) { t.sendHead($0, trailers: true) }
        XCTAssertEqual(t.send("data", final: true), .done)
        XCTAssertFalse(t.exchange.responseComplete)
        let fields = [ResponseField(name: UnsafeRawBufferPointer(start: ("x-checksum" as StaticString).utf8Start, count: 10),
                                    value: UnsafeRawBufferPointer(start: nil, count: 0))]
        XCTAssertEqual(fields.withUnsafeBufferPointer { t.sendTrailers($0) }, .done)
        XCTAssertTrue(t.exchange.responseComplete)
        XCTAssertEqual(t.events, [.head(status: 200, contentLength: nil, addsDate: true, bodyless: false, trailers: true),
                                  .body("data", end: false, blocking: false), .push, .trailers(["x-checksum"]), .push])
    }

    /// Framing that cannot carry trailers (HTTP/1.0): the last block ends
    /// the body.
    func testTrailersTheFramingDropsDoNotHoldTheEnd() {
        let t = FakeTransport()
        t.carriesTrailers = false
        _ = t.withHead(200) { t.sendHead($0, trailers: true) }
        t.send("data", final: true)
        XCTAssertTrue(t.exchange.responseComplete)
        XCTAssertEqual(t.events.dropFirst(), [.body("data", end: true, blocking: false), .push])
    }

    // MARK: - Backpressure and failures

    func testTransportOutcomeReachesTheSender() {
        let t = FakeTransport()
        _ = t.withHead(200) { t.sendHead($0, trailers: false) }
        t.pushResult = .backpressure
        XCTAssertEqual(t.send("data", final: false), .backpressure)
        t.closed = true
        XCTAssertEqual(t.send("data", final: true), .closed)
        XCTAssertEqual(t.withHead(200) { t.sendHead($0, trailers: false) }, .closed)
        XCTAssertFalse(t.send("data"))
    }

    // MARK: - Request body (blocking)

    func testBodyIsReadAsItArrives() {
        let t = FakeTransport()
        t.buffered = Array("abc".utf8)
        t.arrivals = [Array("defgh".utf8)]
        t.endsWithLastArrival = true
        let (body, last) = t.readAll()
        XCTAssertEqual(body, "abcdefgh")
        guard case .end = last else { return XCTFail("\(last)") }
        XCTAssertEqual(t.events, [])
    }

    /// RFC 9110 §15.5.9: a body that stalls past --request-timeout fails
    /// with 408, counted from the last bytes that arrived.
    func testStalledBodyFailsWith408AfterTheTimeoutSinceLastProgress() {
        let t = FakeTransport()
        t.requestTimeoutMilliseconds = 1000
        t.arrivals = [Array("ab".utf8), nil, nil]
        let (body, last) = t.readAll()
        XCTAssertEqual(body, "ab")
        guard case .failed(_, let status) = last else { return XCTFail("\(last)") }
        XCTAssertEqual(status, 408)
        XCTAssertEqual(t.exchange.bodyFailure, 408)
        XCTAssertGreaterThanOrEqual(t.now.milliseconds(since: Instant(nanoseconds: 1_000_000_000)), 1000)
        // The failure sticks: later reads report it without waiting.
        var scratch = [UInt8](repeating: 0, count: 4)
        guard case .failed(_, 408) = scratch.withUnsafeMutableBytes({ t.readBody(into: $0) }) else { return XCTFail() }
    }

    func testClientGoneMidBodyFailsWithNoOneToAnswer() {
        let t = FakeTransport()
        t.goesAway = true
        let (_, last) = t.readAll()
        guard case .failed(_, 0) = last else { return XCTFail("\(last)") }
        XCTAssertEqual(t.exchange.bodyFailure, 0)
    }

    func testBodyGrowingPastMaxBodyFailsWith413() {
        let t = FakeTransport(maxBody: 4)
        t.arrivals = [Array("abc".utf8), Array("defg".utf8)]
        let (body, last) = t.readAll()
        XCTAssertEqual(body, "abc")
        guard case .tooLarge = last else { return XCTFail("\(last)") }
        XCTAssertEqual(t.exchange.bodyFailure, 413)
    }

    func testFramingErrorFailsTheBodyWithItsStatus() {
        let t = FakeTransport()
        t.framingError = (400, "invalid chunk size")
        let (_, last) = t.readAll()
        guard case .failed(let reason, 400) = last else { return XCTFail("\(last)") }
        XCTAssertEqual("\(reason)", "invalid chunk size")
        var scratch = [UInt8](repeating: 0, count: 4)
        guard case .failed(status: 400) = scratch.withUnsafeMutableBytes({ t.pollBody(into: $0) }) else { return XCTFail() }
    }

    // MARK: - 100-continue (RFC 9110 §10.1.1)

    func testContinueIsSentWhenTheBodyIsFirstAskedFor() {
        let t = FakeTransport(declared: 3, expectsContinue: true)
        t.arrivals = [Array("abc".utf8)]
        t.endsWithLastArrival = true
        _ = t.readAll()
        XCTAssertEqual(Array(t.events.prefix(2)), [.informational(100), .flush(blocking: true)])
        XCTAssertEqual(t.events.filter { $0 == .informational(100) }.count, 1)
    }

    func testNoContinueWhenTheBodyIsAlreadyHere() {
        let t = FakeTransport(declared: 3, expectsContinue: true)
        t.buffered = Array("abc".utf8)
        t.ended = true
        _ = t.readAll()
        XCTAssertEqual(t.events, [])
    }

    func testNoContinueAfterTheResponseStarted() {
        let t = FakeTransport(declared: 3, expectsContinue: true)
        _ = t.withHead(413) { t.sendHead($0, trailers: false) }
        t.wantBody()
        XCTAssertEqual(t.events.count, 1)
        XCTAssertTrue(t.watching)
    }

    func testAsyncContinueThenWatch() {
        let t = FakeTransport(declared: 3, expectsContinue: true)
        var scratch = [UInt8](repeating: 0, count: 4)
        guard case .wait = scratch.withUnsafeMutableBytes({ t.pollBody(into: $0) }) else { return XCTFail() }
        t.wantBody()
        XCTAssertEqual(t.events, [.informational(100), .flush(blocking: false)])
        XCTAssertTrue(t.watching)
    }
}
