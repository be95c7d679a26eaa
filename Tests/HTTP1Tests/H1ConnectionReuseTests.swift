import XCTest

@testable import HTTP1

final class H1ConnectionReuseTests: XCTestCase {
    /// Every combination of the four inputs (RFC 9112 §9.3, §9.6; RFC 9110 §10.1.1).
    func testClosingLingersOverAnUnreadBodyAndKeepAliveDiscardsItUnlessContinueIsPending() {
        typealias Row = (keepAlive: Bool, hardStopping: Bool, bodyComplete: Bool, continuePending: Bool, H1ConnectionReuse)
        let rows: [Row] = [
            // Closing after the response: drain unread body first (RFC 9112 §9.6).
            (false, false, true, false, .close), (false, false, true, true, .close),
            (false, false, false, false, .lingerThenClose), (false, false, false, true, .lingerThenClose),
            (false, true, true, false, .close), (false, true, false, false, .lingerThenClose),
            // A hard stop closes even a connection the response promised to keep.
            (true, true, true, false, .close), (true, true, true, true, .close),
            (true, true, false, false, .lingerThenClose), (true, true, false, true, .lingerThenClose),
            (false, true, true, true, .close), (false, true, false, true, .lingerThenClose),
            // Keep-alive: the next request follows the body.
            (true, false, true, false, .readNextRequest), (true, false, true, true, .readNextRequest),
            (true, false, false, false, .discardBodyThenReadNext),
            // The client may still wait for 100 before sending the body: where
            // the next request starts cannot be known.
            (true, false, false, true, .close),
        ]
        XCTAssertEqual(rows.count, 16)
        for r in rows {
            XCTAssertEqual(H1ConnectionReuse(keepAlive: r.keepAlive, hardStopping: r.hardStopping,
                                             requestBodyComplete: r.bodyComplete, continuePending: r.continuePending),
                           r.4, "\(r)")
        }
    }
}
