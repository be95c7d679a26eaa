// Connection IDs (RFC 9000 §5.1, §19.15, §19.16).

import XCTest
import Core
@testable import QUIC

final class ConnectionIDManagementTests: XCTestCase {
    private func established(limit: UInt64 = 4) -> (ConnectionHarness, QUICConnection, [ReceivedPacket]) {
        let client = TestClient()
        client.parameters.activeConnectionIDLimit = limit
        let h = ConnectionHarness(client: client)
        let answer = h.completeHandshake()
        _ = h.takeEvents()
        return (h, h.connection!, answer)
    }

    private func newIDs(_ packets: [ReceivedPacket]) -> [NewConnectionIDFrame] {
        packets.allFrames.compactMap { if case .newConnectionID(let f) = $0 { f } else { nil } }
    }

    /// §5.1.1: after the handshake we issue IDs up to the client's limit,
    /// each routed to the connection, each with its reset token.
    func testIssuesUpToActiveConnectionIDLimit() {
        let (h, c, answer) = established(limit: 3)
        let ids = newIDs(answer)
        XCTAssertEqual(ids.map(\.sequenceNumber), [1, 2])
        for f in ids {
            XCTAssertEqual(f.connectionID.count, 8)
            XCTAssertEqual(f.statelessResetToken, h.ids.resetToken(for: f.connectionID))
            XCTAssertTrue(h.endpoint.context.routes[f.connectionID] === c)
        }
        // A packet to one of the new IDs reaches the connection.
        h.deliver(h.client.packet(.application, Frames.stream(0, [1]), destination: ids[0].connectionID))
        XCTAssertEqual(h.takeEvents(), [.streamOpened(0), .streamReadable(0)])
    }

    /// Our configuration caps what we issue.
    func testConfigurationCapsIssuedIDs() {
        let (_, _, answer) = established(limit: 8)
        XCTAssertEqual(newIDs(answer).count, 3)  // default activeConnectionIDLimit 4
    }

    /// RETIRE_CONNECTION_ID: the ID stops routing and a new one replaces it.
    func testRetireConnectionID() {
        let (h, c, answer) = established()
        let ids = newIDs(answer)
        h.send1RTT(Frames.retireConnectionID(1))
        XCTAssertNil(h.endpoint.context.routes[ids[0].connectionID])
        let replacement = newIDs(h.exchange())
        XCTAssertEqual(replacement.map(\.sequenceNumber), [4])
        XCTAssertTrue(h.endpoint.context.routes[replacement[0].connectionID] === c)
    }

    /// §19.16: retiring a sequence number never issued, or the ID the frame's
    /// own packet was sent to, is a PROTOCOL_VIOLATION.
    func testRetireErrors() {
        var (h, _, _) = established()
        h.send1RTT(Frames.retireConnectionID(9))
        XCTAssertEqual(h.takeEvents(), [.closed(.local(errorCode: 0x0a, application: false))])
        (h, _, _) = established()
        h.send1RTT(Frames.retireConnectionID(0))  // packet sent to sequence 0
        XCTAssertEqual(h.takeEvents(), [.closed(.local(errorCode: 0x0a, application: false))])
    }

    /// The client's NEW_CONNECTION_ID: Retire Prior To makes us retire and
    /// switch; more than our limit is CONNECTION_ID_LIMIT_ERROR (§5.1.1).
    func testPeerConnectionIDs() {
        let (h, c, _) = established()
        let t = StatelessResetToken(high: 1, low: 2)
        h.send1RTT(Frames.newConnectionID(sequence: 1, retirePriorTo: 1, id: cid("d0d0d0d0"), token: t))
        XCTAssertEqual(c.peerIDs.current, cid("d0d0d0d0"))
        let answer = h.exchange()
        XCTAssertTrue(answer.contains { $0 == .retireConnectionID(sequenceNumber: 0) })
        // Packets now go to the new ID: the test client reads them by its own length.
        for i: UInt64 in 2...4 {
            h.send1RTT(Frames.newConnectionID(sequence: i, id: cid("d0d0d0d\(i)"), token: StatelessResetToken(high: i, low: i)))
        }
        XCTAssertEqual(h.takeEvents(), [])
        h.send1RTT(Frames.newConnectionID(sequence: 5, id: cid("d0d0d0d5"), token: StatelessResetToken(high: 5, low: 5)))
        XCTAssertEqual(h.takeEvents(), [.closed(.local(errorCode: 0x09, application: false))])
    }

    /// §19.15: the same sequence number with another ID.
    func testNewConnectionIDConflict() {
        let (h, _, _) = established()
        h.send1RTT(Frames.newConnectionID(sequence: 1, id: cid("d0d0d0d0"), token: StatelessResetToken(high: 1, low: 1)))
        h.send1RTT(Frames.newConnectionID(sequence: 1, id: cid("e0e0e0e0"), token: StatelessResetToken(high: 1, low: 1)))
        XCTAssertEqual(h.takeEvents(), [.closed(.local(errorCode: 0x0a, application: false))])
    }

    /// §8.2.2: PATH_CHALLENGE is answered with PATH_RESPONSE.
    func testPathChallengeAnswered() {
        let (h, _, _) = established()
        h.send1RTT(Frames.pathChallenge(0x1122_3344_5566_7788))
        XCTAssertTrue(h.exchange().contains { $0 == .pathResponse(0x1122_3344_5566_7788) })
    }
}
