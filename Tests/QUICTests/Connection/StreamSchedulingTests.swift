// Which stream's frames go in the next packet (QUICConnection+SendFrames,
// `writeStreams`): round robin per packet, so a stream with a bulk
// response cannot starve the others (RFC 9000 §2.2, §13.3).

import XCTest
import Core
@testable import QUIC

final class StreamSchedulingTests: XCTestCase {
    /// A connection with the client's bidirectional streams 0 and 4 open
    /// and their requests read.
    private func twoStreams() throws -> (ConnectionHarness, QUICConnection) {
        let h = ConnectionHarness()
        let answer = h.completeHandshake()
        h.ack1RTT(answer)
        let c = try XCTUnwrap(h.connection)
        h.send1RTT(Frames.stream(0, [1], fin: true) + Frames.stream(4, [2], fin: true))
        for id: UInt64 in [0, 4] { _ = c.withReadableBytes(stream: id) { b, _ in (b.count, ()) } }
        _ = h.takeEvents()
        _ = h.exchange()
        return (h, c)
    }

    private let bulk = [UInt8](repeating: 0xb0, count: 200_000)

    /// Regression (lossy HTTP/3 downloads): a stream queued behind one with a
    /// bulk response waited until all of that response had been sent.
    func testSecondStreamIsServedWhileFirstSendsInBulk() throws {
        let (h, c) = try twoStreams()
        XCTAssertEqual(bulk.withUnsafeBytes { c.write(stream: 0, $0, fin: false) }, bulk.count)
        XCTAssertEqual([UInt8]([9, 9, 9]).withUnsafeBytes { c.write(stream: 4, $0, fin: true) }, 3)
        let flight = h.exchange()
        XCTAssertGreaterThan(flight.count, 2, "the initial window holds several packets")
        XCTAssertEqual(flight.streamFrames(4).map(\.data), [[9, 9, 9]], "stream 4 goes in the first flight")
        XCTAssertFalse(flight.streamFrames(0).isEmpty)
        XCTAssertTrue(c.streams[0]!.send!.buffer.hasNewData, "stream 0 is far from done")
    }

    /// Regression (the HTTP/3 control stream's lost SETTINGS were never
    /// resent during a 10 MiB download at 25 % loss): lost bytes of one
    /// stream go again while another still sends new data (§13.3).
    func testLostDataIsResentWhileAnotherStreamSendsInBulk() throws {
        let (h, c) = try twoStreams()
        XCTAssertEqual([UInt8]([7, 7, 7, 7]).withUnsafeBytes { c.write(stream: 4, $0, fin: false) }, 4)
        let lost = h.exchange()
        XCTAssertEqual(lost.streamFrames(4).count, 1)  // dropped: the client never sees it
        XCTAssertEqual(bulk.withUnsafeBytes { c.write(stream: 0, $0, fin: true) }, bulk.count)
        var resent = false
        for _ in 0..<200 {
            let flight = h.exchange()
            if flight.streamFrames(4).contains(where: { $0.offset == 0 && $0.data == [7, 7, 7, 7] }) {
                resent = true
                XCTAssertTrue(c.streams[0]!.send!.buffer.hasNewData, "resent before the bulk stream ran out of new data")
                break
            }
            if flight.isEmpty {
                h.advance(toDeadline: ())
            } else {
                // Everything but the lost packet is acknowledged: packet
                // threshold loss (RFC 9002 §6.1.1).
                h.ack1RTT(flight)
            }
        }
        XCTAssertTrue(resent)
    }
}
