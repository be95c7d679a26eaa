// Every (stream state, frame type) pair of RFC 9113 §5.1, swept (STYLE §7):
// each either reaches a valid state or fails with the code the RFC names.

import XCTest
import Core
@testable import HTTP2

final class StreamStateSweepTests: XCTestCase {
    enum State: CaseIterable {
        case idle, open, halfClosedRemote, halfClosedLocal, closed, closedByPeerReset, closedByOurReset
    }

    enum Input: CaseIterable {
        case data, headers, priority, rstStream, windowUpdate, continuation, pushPromise, unknown
    }

    enum Verdict: Equatable {
        case event, ignored, stream(HTTP2ErrorCode), connection(HTTP2ErrorCode)
    }

    private func setUp(_ state: State) -> H2Harness {
        let h = H2Harness()
        switch state {
        case .idle: break
        case .open: h.feed(h.headers(1, h.post(), endStream: false))
        case .halfClosedRemote: h.feed(h.headers(1, h.get()))
        case .halfClosedLocal:
            h.feed(h.headers(1, h.post(), endStream: false))
            h.respond(1, status: 200, endStream: true)
        case .closed:
            h.feed(h.headers(1, h.get()))
            h.respond(1, status: 200, endStream: true)
        case .closedByPeerReset:
            h.feed(h.headers(1, h.post(), endStream: false) + h.rst(1, .cancel))
        case .closedByOurReset:
            h.feed(h.headers(1, h.post(), endStream: false))
            h.conn.resetStream(streamID: 1, code: .cancel)
        }
        _ = h.drain()
        return h
    }

    private func frame(_ input: Input, _ h: H2Harness) -> [UInt8] {
        switch input {
        case .data: h.data(1, [1])
        case .headers: h.headers(1, [("x", "y")], endStream: true)
        case .priority: h.priority(1, dependsOn: 0)
        case .rstStream: h.rst(1, .cancel)
        case .windowUpdate: h.windowUpdate(1, 1)
        case .continuation: h.continuation(1, block: [0x82], endHeaders: true)
        case .pushPromise: rawFrame(.pushPromise, flags: .endHeaders, stream: 1, [0, 0, 0, 2, 0x82])
        case .unknown: rawFrame(FrameType(rawValue: 0xfa), stream: 1, [1])
        }
    }

    private func expected(_ state: State, _ input: Input) -> Verdict {
        // Whatever the state: CONTINUATION outside a field block and any
        // PUSH_PROMISE end the connection; PRIORITY and unknown types are
        // ignored.
        switch input {
        case .continuation, .pushPromise: return .connection(.protocolError)
        case .priority, .unknown: return .ignored
        default: break
        }
        switch (state, input) {
        case (.idle, .headers): return .stream(.protocolError)  // opens it; malformed request
        case (.idle, _): return .connection(.protocolError)
        case (.open, .windowUpdate), (.halfClosedRemote, .windowUpdate), (.halfClosedLocal, .windowUpdate):
            return .ignored  // nothing to send yet / any more
        case (.open, _), (.halfClosedLocal, _): return .event
        case (.halfClosedRemote, .rstStream): return .event
        case (.halfClosedRemote, _): return .stream(.streamClosed)
        case (.closed, .data), (.closed, .headers), (.closedByPeerReset, .data), (.closedByPeerReset, .headers):
            return .connection(.streamClosed)
        case (.closed, _), (.closedByPeerReset, _), (.closedByOurReset, _): return .ignored
        }
    }

    func testEveryStateAndFrameType() {
        for state in State.allCases {
            for input in Input.allCases {
                let h = setUp(state)
                let events = h.feed(frame(input, h))
                let out = h.drain()
                let verdict: Verdict
                if let code = events.connectionError {
                    verdict = .connection(code)
                    XCTAssertEqual(out.goAwayCode, code)
                } else if case .rst(1, let code)? = out.first(where: { if case .rst = $0 { return true } else { return false } }) {
                    verdict = .stream(code)
                } else {
                    verdict = events.isEmpty ? .ignored : .event
                }
                XCTAssertEqual(verdict, expected(state, input), "\(state) + \(input): \(events) \(out)")
                // The connection is usable after anything short of a connection error.
                if case .connection = verdict { XCTAssertTrue(h.conn.isFinished) } else {
                    XCTAssertEqual(h.feed(h.headers(3, h.get())), [.request(3, getHead(), endStream: true)], "\(state) + \(input)")
                }
            }
        }
    }
}
