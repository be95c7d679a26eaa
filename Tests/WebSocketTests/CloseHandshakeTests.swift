import XCTest

@testable import WebSocket

/// The closing handshake (RFC 6455 §5.5.1, §7.1), every (state, input) pair.
final class CloseHandshakeTests: XCTestCase {
    func testServerInitiatedCloseCompletesWhenThePeerAnswers() {
        var close = CloseHandshake()
        XCTAssertEqual(close.sendClose(.goingAway), .writeClose(.goingAway))
        XCTAssertFalse(close.maySendData)  // §5.5.1: no data frames after our close
        XCTAssertFalse(close.isClosed)
        XCTAssertEqual(close.receiveClose(.goingAway), .closeTransport)
        XCTAssertTrue(close.isClosed)
    }

    func testPeerInitiatedCloseIsEchoedWithItsCode() {
        var close = CloseHandshake()
        // §5.5.1: "the endpoint typically echos the status code it received".
        XCTAssertEqual(close.receiveClose(CloseCode(rawValue: 4001)), .replyWithClose(CloseCode(rawValue: 4001)))
        XCTAssertTrue(close.maySendData)  // may finish the message being sent
        XCTAssertEqual(close.sendClose(CloseCode(rawValue: 4001)), .writeCloseThenCloseTransport(CloseCode(rawValue: 4001)))
        XCTAssertTrue(close.isClosed)
    }

    func testEmptyCloseIsAnsweredWithAnEmptyClose() {
        var close = CloseHandshake()
        XCTAssertEqual(close.receiveClose(nil), .replyWithClose(nil))
    }

    func testSecondCloseInEitherDirectionDoesNothing() {
        var close = CloseHandshake()
        _ = close.sendClose(.normalClosure)
        XCTAssertEqual(close.sendClose(.protocolError), .nothing)
        _ = close.receiveClose(.normalClosure)
        XCTAssertEqual(close.receiveClose(.normalClosure), .nothing)
        XCTAssertEqual(close.sendClose(.normalClosure), .nothing)
    }

    func testEveryStateAndInputPair() {
        // Reach each state, apply each input, check the step and the flags.
        enum Input: CaseIterable { case send, receive }
        let paths: [[Input]] = [[], [.send], [.receive], [.send, .receive], [.receive, .send]]
        for path in paths {
            for input in Input.allCases {
                var close = CloseHandshake()
                for step in path { _ = step == .send ? close.sendClose(.normalClosure) : close.receiveClose(.normalClosure) }
                let wasClosed = close.isClosed
                let step = input == .send ? close.sendClose(.normalClosure) : close.receiveClose(.normalClosure)
                switch (path, input) {
                case ([], .send): XCTAssertEqual(step, .writeClose(.normalClosure))
                case ([], .receive): XCTAssertEqual(step, .replyWithClose(.normalClosure))
                case ([.send], .receive): XCTAssertEqual(step, .closeTransport)
                case ([.receive], .send): XCTAssertEqual(step, .writeCloseThenCloseTransport(.normalClosure))
                default: XCTAssertEqual(step, .nothing, "\(path) \(input)")
                }
                if wasClosed { XCTAssertTrue(close.isClosed) }
                XCTAssertEqual(close.maySendData, (path.isEmpty || path == [.receive]) && input == .receive, "\(path) \(input)")
            }
        }
    }
}
