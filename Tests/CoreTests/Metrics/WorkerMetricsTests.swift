import XCTest

@testable import Core

/// A worker's block (WorkerMetrics) written through a real shared region
/// (MetricsRegion), read back as the supervisor reads it.
final class WorkerMetricsTests: XCTestCase {
    private func region(blocks: Int = 2) throws -> MetricsRegion {
        try XCTUnwrap(MetricsRegion.create(blocks: blocks))
    }

    func testARequestLandsInItsClassBucketAndSum() throws {
        let r = try region()
        let m = WorkerMetrics(block: r.block(1))
        m.requestBegun(.h2)
        m.requestEnded(.h2, status: 204, microseconds: 1_200)
        m.requestBegun(.h2)
        m.requestEnded(.h2, status: 0, microseconds: 30)
        let p = MetricsProtocol.h2.rawValue
        XCTAssertEqual(r.load(1, MetricsLayout.requestsBegun + p), 2)
        XCTAssertEqual(r.load(1, MetricsLayout.requests + p * StatusClass.count + StatusClass.success.rawValue), 1)
        XCTAssertEqual(r.load(1, MetricsLayout.requests + p * StatusClass.count + StatusClass.none.rawValue), 1)
        XCTAssertEqual(r.load(1, MetricsLayout.durationBuckets + p * DurationBuckets.count + 2), 1)  // ≤ 2.5 ms
        XCTAssertEqual(r.load(1, MetricsLayout.durationBuckets + p * DurationBuckets.count + 0), 1)  // ≤ 0.5 ms
        XCTAssertEqual(r.load(1, MetricsLayout.durationMicroseconds + p), 1_230)
        for w in 0..<MetricsLayout.blockWords { XCTAssertEqual(r.load(0, w), 0, "block 0 is another writer's") }
    }

    func testANegativeDurationCountsAsZero() throws {
        let r = try region(blocks: 1)
        let m = WorkerMetrics(block: r.block(0))
        m.requestEnded(.http11, status: 200, microseconds: -5)
        XCTAssertEqual(r.load(0, MetricsLayout.durationMicroseconds), 0)
        XCTAssertEqual(r.load(0, MetricsLayout.durationBuckets), 1)
    }

    func testEveryFamilyWritesItsOwnWord() throws {
        let r = try region(blocks: 1)
        let m = WorkerMetrics(block: r.block(0))
        m.connectionOpened(.quic)
        m.connectionClosed(.tcp)
        m.received(.tcp, bytes: 100)
        m.sent(.quic, bytes: 1200)
        m.tlsHandshake(.quic, .resumed)
        m.http2StreamOpened()
        m.http2Reset(code: 0x8)
        m.webSocketMessageReceived()
        m.webSocketMessageSent()
        m.webSocketMessageSent()
        m.rejected(status: 431)
        m.quicPathEvents(.ecnCongestion, count: 3)
        m.quicPathEvents(.ecnValidationFailed)
        m.setPythonVersion(major: 3, minor: 13, micro: 1)
        var expected = [Int64](repeating: 0, count: MetricsLayout.blockWords)
        expected[MetricsLayout.connectionsOpened + MetricsTransport.quic.rawValue] = 1
        expected[MetricsLayout.connectionsClosed + MetricsTransport.tcp.rawValue] = 1
        expected[MetricsLayout.bytesReceived + MetricsTransport.tcp.rawValue] = 100
        expected[MetricsLayout.bytesSent + MetricsTransport.quic.rawValue] = 1200
        expected[MetricsLayout.tlsHandshakes + MetricsTransport.quic.rawValue * TLSHandshakeOutcome.count + 1] = 1
        expected[MetricsLayout.http2Streams] = 1
        expected[MetricsLayout.http2Resets + 8] = 1
        expected[MetricsLayout.webSocketMessagesIn] = 1
        expected[MetricsLayout.webSocketMessagesOut] = 2
        expected[MetricsLayout.rejected + RejectReason.fieldsTooLarge.rawValue] = 1
        expected[MetricsLayout.quicPathEvents + QUICPathEvent.ecnCongestion.rawValue] = 3
        expected[MetricsLayout.quicPathEvents + QUICPathEvent.ecnValidationFailed.rawValue] = 1
        expected[MetricsLayout.pythonVersion] = 3 << 16 | 13 << 8 | 1
        XCTAssertEqual((0..<MetricsLayout.blockWords).map { r.load(0, $0) }, expected)
    }

    func testOffWritesNothingAndCostsNoBlock() {
        let m = WorkerMetrics.off
        XCTAssertFalse(m.enabled)
        m.requestBegun(.http11)
        m.requestEnded(.http11, status: 200, microseconds: 1)
        m.rejected(status: 400)
    }

    func testASecondMappingSeesTheSameWordsAndClearZeroes() throws {
        let r = try region()
        let other = try XCTUnwrap(MetricsRegion.map(fd: r.fd, blocks: r.blocks))
        WorkerMetrics(block: other.block(1)).received(.tcp, bytes: 42)
        XCTAssertEqual(r.load(1, MetricsLayout.bytesReceived), 42)
        r.clear(1)
        XCTAssertEqual(other.load(1, MetricsLayout.bytesReceived), 0)
    }

    func testBlocksOutsideTheRegionAreNotHandedOut() throws {
        let r = try region()
        XCTAssertNil(r.block(2))
        XCTAssertNil(r.block(-1))
        XCTAssertNil(MetricsRegion.map(fd: -1, blocks: 1))
    }
}
