import XCTest

@testable import WebSocket

/// The closing handshake (RFC 6455 §5.5.1, §7.1), every (state, input) pair.
final class CloseHandshakeTests: XCTestCase {
    func testServerInitiatedCloseCompletesWhenThePeerAnswers() {
        var close = CloseHandshake()
        XCTAssertEqual(close.sendClose(.goingAway), .writeClose(.goingAway))
        XCTAssertFalse(close.maySendData)  // §5.5.1: no data frames after our close
        XCTAssertTrue(close.mayReceiveData)  // the peer's answer is read
        XCTAssertFalse(close.isClosed)
        XCTAssertEqual(close.receiveClose(.goingAway), .closeTransport)
        XCTAssertTrue(close.isClosed)
        XCTAssertFalse(close.mayReceiveData)
    }

    func testPeerInitiatedCloseIsEchoedWithItsCode() {
        var close = CloseHandshake()
        // §5.5.1: "the endpoint typically echos the status code it received".
        XCTAssertEqual(close.receiveClose(CloseCode(rawValue: 4001)), .replyWithClose(CloseCode(rawValue: 4001)))
        XCTAssertTrue(close.maySendData)  // may finish the message being sent
        XCTAssertFalse(close.mayReceiveData)  // §1.4: data after a close is discarded
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

    func testFailingAnOpenConnectionWritesTheErrorsCloseAndClosesWithoutWaiting() {
        // §7.1.7: send a close frame with the code, then close the TCP
        // connection without waiting for the peer's.
        var close = CloseHandshake()
        XCTAssertEqual(close.failConnection(.protocolError), .writeCloseThenCloseTransport(.protocolError))
        XCTAssertTrue(close.isClosed)
        XCTAssertFalse(close.maySendData)
        XCTAssertFalse(close.mayReceiveData)
    }

    func testFailingAfterOurCloseSendsNoSecondClose() {
        // §5.5.1: one close frame per endpoint; the TCP connection still closes at once.
        var close = CloseHandshake()
        _ = close.sendClose(.normalClosure)
        XCTAssertEqual(close.failConnection(.messageTooBig), .closeTransport)
        XCTAssertTrue(close.isClosed)
        XCTAssertFalse(close.mayReceiveData)
    }

    func testFailingBeforeAnsweringThePeersCloseSendsTheFailuresCodeInstead() {
        var close = CloseHandshake()
        _ = close.receiveClose(.goingAway)
        XCTAssertEqual(close.failConnection(.internalError), .writeCloseThenCloseTransport(.internalError))
        XCTAssertTrue(close.isClosed)
    }

    func testEveryStateAndInputPair() {
        // Reach each state by every path, apply each input, check the step
        // and where the machine ends up.
        enum Input: CaseIterable { case send, receive, fail }
        enum Reached { case open, closeSent, closeReceived, closed }
        func apply(_ input: Input, to close: inout CloseHandshake) -> CloseStep {
            switch input {
            case .send: return close.sendClose(.normalClosure)
            case .receive: return close.receiveClose(.goingAway)
            case .fail: return close.failConnection(.protocolError)
            }
        }
        func reached(_ close: CloseHandshake) -> Reached {
            switch (close.maySendData, close.mayReceiveData, close.isClosed) {
            case (true, true, false): return .open
            case (false, true, false): return .closeSent
            case (true, false, false): return .closeReceived
            case (false, false, true): return .closed
            default: XCTFail("inconsistent flags in \(close)"); return .closed
            }
        }
        let paths: [(path: [Input], state: Reached)] = [
            ([], .open),
            ([.send], .closeSent),
            ([.receive], .closeReceived),
            ([.send, .receive], .closed),
            ([.send, .fail], .closed),
            ([.receive, .send], .closed),
            ([.receive, .fail], .closed),
            ([.fail], .closed),
        ]
        for (path, state) in paths {
            var close = CloseHandshake()
            for input in path { _ = apply(input, to: &close) }
            XCTAssertEqual(reached(close), state, "\(path)")
            for input in Input.allCases {
                var next = close
                let step = apply(input, to: &next)
                let (expectedStep, expectedState): (CloseStep, Reached) = switch (state, input) {
                case (.open, .send): (.writeClose(.normalClosure), .closeSent)
                case (.open, .receive): (.replyWithClose(.goingAway), .closeReceived)
                case (.open, .fail): (.writeCloseThenCloseTransport(.protocolError), .closed)
                case (.closeSent, .send): (.nothing, .closeSent)
                case (.closeSent, .receive): (.closeTransport, .closed)
                case (.closeSent, .fail): (.closeTransport, .closed)
                case (.closeReceived, .send): (.writeCloseThenCloseTransport(.normalClosure), .closed)
                case (.closeReceived, .receive): (.nothing, .closeReceived)
                case (.closeReceived, .fail): (.writeCloseThenCloseTransport(.protocolError), .closed)
                case (.closed, _): (.nothing, .closed)
                }
                XCTAssertEqual(step, expectedStep, "\(path) then \(input)")
                XCTAssertEqual(reached(next), expectedState, "\(path) then \(input)")
                if expectedStep == .nothing { XCTAssertEqual(next, close, "\(path) then \(input) changed nothing") }
            }
        }
    }
}
