// The min_ack_delay transport parameter (draft-ietf-quic-ack-frequency §3).

import XCTest
import Core
@testable import QUIC

final class MinAckDelayTests: XCTestCase {
    private func decode(_ wire: [UInt8], from sender: EndpointRole) throws -> TransportParameters {
        let r: Result<TransportParameters, QUICError> = wire.withUnsafeBytes { b in
            do { return .success(try TransportParameters.decode(b, sentBy: sender)) } catch { return .failure(error as! QUICError) }
        }
        return try r.get()
    }

    private let scid = "0f 08 8394c8f03e515708"
    /// The id 0xff04de1b as an 8-byte varint.
    private let id = "c0000000ff04de1b"

    func testRoundTrip() throws {
        var p = TransportParameters()
        p.initialSourceConnectionID = ConnectionID(hex("8394c8f03e515708"))
        p.minAckDelay = 1000
        var wire = [UInt8](repeating: 0, count: p.encodedSize())
        wire.withUnsafeMutableBytes { _ = p.encode(into: $0) }
        XCTAssertNotNil(wire.firstRange(of: hex(id + " 02 43e8")), "id, length 2, 1000 as a 2-byte varint")
        XCTAssertEqual(try decode(wire, from: .client).minAckDelay, 1000)
        XCTAssertNil(try decode(hex(scid), from: .client).minAckDelay, "absent: the extension is not offered")
    }

    /// "Values of 2^24 or greater are invalid"; a value above max_ack_delay
    /// (25 ms by default) is a TRANSPORT_PARAMETER_ERROR; so is a repeat.
    func testLimits() throws {
        XCTAssertEqual(try decode(hex(scid + " " + id + " 04 80006000"), from: .client).minAckDelay, 24_576)
        XCTAssertEqual(try decode(hex(scid + " " + id + " 04 800061a8"), from: .client).minAckDelay, 25_000)
        XCTAssertThrowsQUIC(.parameterOutOfRange) { _ = try self.decode(hex(self.scid + " " + self.id + " 04 800061a9"), from: .client) }
        // With the largest max_ack_delay (16383 ms): 16,383,000 µs is fine,
        // one more is not, nor is 2^24 (refused on its own).
        XCTAssertEqual(try decode(hex("0b 02 7fff " + scid + " " + id + " 04 80f9fc18"), from: .client).minAckDelay, 16_383_000)
        XCTAssertThrowsQUIC(.parameterOutOfRange) {
            _ = try self.decode(hex("0b 02 7fff " + self.scid + " " + self.id + " 04 80f9fc19"), from: .client)
        }
        XCTAssertThrowsQUIC(.parameterOutOfRange) {
            _ = try self.decode(hex("0b 02 7fff " + self.scid + " " + self.id + " 04 81000000"), from: .client)
        }
        XCTAssertThrowsQUIC(.duplicateParameter) {
            _ = try self.decode(hex(self.scid + " " + self.id + " 02 43e8 " + self.id + " 02 43e8"), from: .client)
        }
    }

    /// The server offers the extension by default, at 1 ms (the worker's
    /// timer granularity), never above its max_ack_delay.
    func testServerAdvertisesMinAckDelay() {
        var c = QUICConfiguration()
        XCTAssertEqual(c.transportParameters.minAckDelay, 1000)
        c.maxAckDelay = 500_000
        // max_ack_delay goes in whole milliseconds (0 here), and the peer
        // checks min_ack_delay against what it received.
        XCTAssertEqual(c.transportParameters.maxAckDelay, 0)
        XCTAssertEqual(c.transportParameters.minAckDelay, 0)
        c.minAckDelay = nil
        XCTAssertNil(c.transportParameters.minAckDelay)
    }
}
