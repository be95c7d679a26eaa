import XCTest

@testable import HTTP1

final class H1ResponseFramingTests: XCTestCase {
    private func framing(_ version: H1Version = .http11, head: Bool = false, requestKeepAlive: Bool = true,
                         status: Int = 200, length: Int64? = nil, trailers: Bool = false,
                         applicationClose: Bool = false, stopping: Bool = false) -> H1ResponseFraming {
        H1ResponseFraming(version: version, isHead: head, requestKeepAlive: requestKeepAlive, status: status,
                          contentLength: length, trailers: trailers, applicationClose: applicationClose,
                          stopping: stopping)
    }

    // MARK: Body framing (RFC 9112 §6.3)

    /// RFC 9112 §6.3 rule 1: a response to HEAD has no body; its
    /// Content-Length describes the GET response (RFC 9110 §8.6, §9.3.2).
    func testHeadResponseHasNoBodyButKeepsItsContentLength() {
        let f = framing(head: true, length: 5)
        XCTAssertEqual(f.body, .none)
        XCTAssertEqual(f.contentLengthField, 5)
        XCTAssertTrue(f.keepAlive)
        XCTAssertEqual(f.connectionField, .none)
    }

    /// Without a body there is nothing to delimit: an unknown length to
    /// HTTP/1.0 does not close a HEAD response's connection.
    func testHeadResponseWithoutLengthKeepsAnHTTP10KeepAliveConnection() {
        let f = framing(.http10, head: true)
        XCTAssertEqual(f.body, .none)
        XCTAssertNil(f.contentLengthField)
        XCTAssertTrue(f.keepAlive)
        XCTAssertEqual(f.connectionField, .keepAlive)
    }

    /// RFC 9112 §6.3 rule 1 and RFC 9110 §8.6: 1xx, 204 and 304 have no body
    /// and no Content-Length, whatever length the application declared.
    func testInformationalNoContentAndNotModifiedHaveNoBodyAndNoContentLength() {
        for status in [100, 101, 103, 204, 304] {
            for length: Int64? in [nil, 0, 5] {
                let f = framing(status: status, length: length)
                XCTAssertEqual(f.body, .none, "\(status) \(String(describing: length))")
                XCTAssertNil(f.contentLengthField, "\(status) \(String(describing: length))")
                XCTAssertTrue(f.keepAlive, "\(status)")
            }
        }
    }

    func testDeclaredLengthFramesTheBody() {
        XCTAssertEqual(framing(length: 5).body, .contentLength(5))
        XCTAssertEqual(framing(length: 5).contentLengthField, 5)
        XCTAssertEqual(framing(length: 0).body, .contentLength(0))
        XCTAssertEqual(framing(length: 0).contentLengthField, 0)
        XCTAssertEqual(framing(.http10, length: 5).body, .contentLength(5))
        XCTAssertEqual(framing(status: 404, length: 9).body, .contentLength(9))
    }

    /// RFC 9112 §7.1: an unknown length to an HTTP/1.1 client is chunked.
    func testUnknownLengthIsChunkedForHTTP11() {
        let f = framing(status: 500)
        XCTAssertEqual(f.body, .chunked)
        XCTAssertTrue(f.isChunked)
        XCTAssertNil(f.contentLengthField)
        XCTAssertTrue(f.keepAlive)
    }

    /// RFC 9112 §6.1 (no Transfer-Encoding to a 1.0 client) and §6.3 rule 8:
    /// the body ends with the connection, so it cannot persist.
    func testUnknownLengthToHTTP10IsDelimitedByClosing() {
        let f = framing(.http10)
        XCTAssertEqual(f.body, .closeDelimited)
        XCTAssertFalse(f.keepAlive)
        XCTAssertEqual(f.connectionField, .close)
    }

    func testContentLengthBodyIsCompleteExactlyAtItsLength() {
        let f = framing(length: 5)
        XCTAssertFalse(f.isComplete(afterSending: 4))
        XCTAssertTrue(f.isComplete(afterSending: 5))
        XCTAssertFalse(f.isComplete(afterSending: 6))
        XCTAssertFalse(framing().isComplete(afterSending: 0), "a chunked body has no length to reach")
        XCTAssertFalse(framing(head: true, length: 0).isComplete(afterSending: 0), "a bodyless response sends none")
    }

    // MARK: Trailers (RFC 9112 §7.1.2)

    func testAnnouncedTrailersForceChunkedEvenWithALength() {
        let f = framing(length: 5, trailers: true)
        XCTAssertEqual(f.body, .chunked)
        XCTAssertTrue(f.trailers)
        XCTAssertNil(f.contentLengthField)
    }

    /// A 1.0 client cannot take chunked framing (RFC 9112 §6.1): the body goes
    /// as it would without trailers, and they are dropped.
    func testTrailersAreDroppedForHTTP10() {
        let known = framing(.http10, length: 5, trailers: true)
        XCTAssertFalse(known.trailers)
        XCTAssertEqual(known.body, .contentLength(5))
        XCTAssertEqual(known.contentLengthField, 5)
        let unknown = framing(.http10, trailers: true)
        XCTAssertFalse(unknown.trailers)
        XCTAssertEqual(unknown.body, .closeDelimited)
    }

    /// RFC 9112 §6.3 rule 1: a bodyless response "cannot contain a message
    /// body or trailer section".
    func testTrailersAreDroppedWhenTheResponseIsBodyless() {
        let head = framing(head: true, length: 5, trailers: true)
        XCTAssertFalse(head.trailers)
        XCTAssertEqual(head.body, .none)
        XCTAssertEqual(head.contentLengthField, 5)
        for status in [100, 101, 103, 204, 304] {
            XCTAssertFalse(framing(status: status, trailers: true).trailers, "\(status)")
        }
    }

    // MARK: Persistence (RFC 9112 §9.3, §9.6)

    /// RFC 9112 §9.3: HTTP/1.0 persists only when told "keep-alive".
    func testHTTP10KeepAliveIsConfirmedInTheResponse() {
        let f = framing(.http10, length: 2)
        XCTAssertTrue(f.keepAlive)
        XCTAssertEqual(f.connectionField, .keepAlive)
    }

    /// HTTP/1.1 persists by default: no connection field is needed.
    func testHTTP11KeepAliveNeedsNoConnectionField() {
        XCTAssertEqual(framing(length: 2).connectionField, .none)
    }

    /// RFC 9112 §9.6: the request's "close", the application's, and a
    /// stopping server each end the connection, and the response says so.
    func testEachReasonToCloseSaysClose() {
        for version in [H1Version.http10, .http11] {
            for f in [framing(version, requestKeepAlive: false, length: 2), framing(version, length: 2, applicationClose: true),
                      framing(version, length: 2, stopping: true)] {
                XCTAssertFalse(f.keepAlive, "\(version)")
                XCTAssertEqual(f.connectionField, .close, "\(version)")
            }
        }
    }

    /// RFC 9110 §15.2: "A server MUST NOT send a 1xx response to an HTTP/1.0 client."
    func testInformationalResponsesOnlyToHTTP11() {
        XCTAssertFalse(H1ResponseFraming.allowsInformational(to: .http10))
        XCTAssertTrue(H1ResponseFraming.allowsInformational(to: .http11))
    }

    // MARK: Every combination

    /// The whole input space (version × HEAD/GET × status × declared length ×
    /// trailers × application close × stopping × request keep-alive), against
    /// the rules stated independently of the implementation.
    func testEveryCombinationFollowsTheRules() {
        let noContentStatuses: Set<Int> = [100, 101, 103, 204, 304]
        for version in [H1Version.http10, .http11] {
            for head in [false, true] {
                for status in [100, 101, 103, 200, 204, 304, 404, 500] {
                    for length: Int64? in [nil, 0, 7] {
                        for trailers in [false, true] {
                            for applicationClose in [false, true] {
                                for stopping in [false, true] {
                                    for requestKeepAlive in [false, true] {
                                        let f = framing(version, head: head, requestKeepAlive: requestKeepAlive, status: status,
                                                        length: length, trailers: trailers, applicationClose: applicationClose,
                                                        stopping: stopping)
                                        let what = "\(version) head=\(head) \(status) length=\(String(describing: length)) "
                                            + "trailers=\(trailers) close=\(applicationClose) stopping=\(stopping) "
                                            + "keepAlive=\(requestKeepAlive)"
                                        // RFC 9112 §6.3 rule 1.
                                        let bodyless = head || noContentStatuses.contains(status)
                                        // RFC 9112 §7.1.2, §6.1.
                                        let expectTrailers = trailers && !bodyless && version == .http11
                                        let expectBody: H1ResponseBody
                                        if bodyless {
                                            expectBody = .none
                                        } else if expectTrailers {
                                            expectBody = .chunked
                                        } else if let length {
                                            expectBody = .contentLength(length)
                                        } else {
                                            expectBody = version == .http11 ? .chunked : .closeDelimited
                                        }
                                        // RFC 9110 §8.6.
                                        let expectLengthField = noContentStatuses.contains(status) || expectTrailers ? nil : length
                                        // RFC 9112 §9.3, §9.6, §6.3 rule 8.
                                        let expectKeepAlive = requestKeepAlive && !applicationClose && !stopping
                                            && expectBody != .closeDelimited
                                        let expectConnection: H1ConnectionField =
                                            !expectKeepAlive ? .close : version == .http10 ? .keepAlive : .none
                                        XCTAssertEqual(f.body, expectBody, what)
                                        XCTAssertEqual(f.trailers, expectTrailers, what)
                                        XCTAssertEqual(f.contentLengthField, expectLengthField, what)
                                        XCTAssertEqual(f.keepAlive, expectKeepAlive, what)
                                        XCTAssertEqual(f.connectionField, expectConnection, what)
                                        XCTAssertEqual(f.isBodyless, bodyless, what)
                                        XCTAssertEqual(f.isChunked, expectBody == .chunked, what)
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Small enough to keep in the connection without boxing (STYLE §6).
    func testFramingIsSmall() {
        XCTAssertLessThanOrEqual(MemoryLayout<H1ResponseFraming>.size, 32)
    }
}
