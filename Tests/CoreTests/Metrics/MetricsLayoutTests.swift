import XCTest

@testable import Core

/// The shared block layout both the workers and the supervisor read
/// (Sources/Core/Metrics/MetricsLayout.swift).
final class MetricsLayoutTests: XCTestCase {
    func testFamiliesFitTheBlockAndTheBlockIsWholeCacheLines() {
        XCTAssertLessThanOrEqual(MetricsLayout.usedWords, MetricsLayout.blockWords)
        XCTAssertEqual(MetricsLayout.blockWords * 8 % 64, 0, "a block must not share a cache line with another writer's")
    }

    func testFamiliesFollowEachOtherWithoutOverlap() {
        let starts: [(Int, Int)] = [
            (MetricsLayout.requests, MetricsProtocol.count * StatusClass.count),
            (MetricsLayout.requestsBegun, MetricsProtocol.count),
            (MetricsLayout.durationBuckets, MetricsProtocol.count * DurationBuckets.count),
            (MetricsLayout.durationMicroseconds, MetricsProtocol.count),
            (MetricsLayout.connectionsOpened, MetricsTransport.count),
            (MetricsLayout.connectionsClosed, MetricsTransport.count),
            (MetricsLayout.bytesReceived, MetricsTransport.count),
            (MetricsLayout.bytesSent, MetricsTransport.count),
            (MetricsLayout.tlsHandshakes, MetricsTransport.count * TLSHandshakeOutcome.count),
            (MetricsLayout.http2Streams, 1),
            (MetricsLayout.http2Resets, H2ResetCode.count),
            (MetricsLayout.webSocketMessagesIn, 1),
            (MetricsLayout.webSocketMessagesOut, 1),
            (MetricsLayout.rejected, RejectReason.count),
            (MetricsLayout.quicPathEvents, QUICPathEvent.count),
            (MetricsLayout.webTransportSessions, WebTransportSessionResult.count),
            (MetricsLayout.webTransportStreams, 1),
            (MetricsLayout.webTransportDatagramsIn, 1),
            (MetricsLayout.webTransportDatagramsOut, 1),
            (MetricsLayout.webTransportDatagramsDropped, WebTransportDatagramDrop.count),
            (MetricsLayout.pythonVersion, 1),
        ]
        var next = 0
        for (start, length) in starts {
            XCTAssertEqual(start, next)
            next = start + length
        }
        XCTAssertEqual(next, MetricsLayout.usedWords)
    }

    func testCaseCountsMatchTheStaticCounts() {
        XCTAssertEqual(MetricsProtocol.allCases.count, MetricsProtocol.count)
        XCTAssertEqual(StatusClass.allCases.count, StatusClass.count)
        XCTAssertEqual(MetricsTransport.allCases.count, MetricsTransport.count)
        XCTAssertEqual(TLSHandshakeOutcome.allCases.count, TLSHandshakeOutcome.count)
        XCTAssertEqual(RejectReason.allCases.count, RejectReason.count)
        XCTAssertEqual(QUICPathEvent.allCases.count, QUICPathEvent.count)
        XCTAssertEqual(WebTransportSessionResult.allCases.count, WebTransportSessionResult.count)
        XCTAssertEqual(WebTransportDatagramDrop.allCases.count, WebTransportDatagramDrop.count)
        XCTAssertEqual(WebTransportDatagramDrop.allCases.map(\.label), ["queue_full", "too_large", "no_session"])
        XCTAssertEqual(H2ResetCode.names.count, H2ResetCode.count)
        XCTAssertEqual(DurationBuckets.upperBoundsMicroseconds.count + 1, DurationBuckets.count)
    }

    func testStatusClasses() {
        XCTAssertEqual(StatusClass(status: 101), .informational)
        XCTAssertEqual(StatusClass(status: 200), .success)
        XCTAssertEqual(StatusClass(status: 399), .redirection)
        XCTAssertEqual(StatusClass(status: 404), .clientError)
        XCTAssertEqual(StatusClass(status: 599), .serverError)
        XCTAssertEqual(StatusClass(status: 0), .none)
        XCTAssertEqual(StatusClass(status: 600), .none)
        XCTAssertEqual(StatusClass.allCases.map(\.label), ["1xx", "2xx", "3xx", "4xx", "5xx", "none"])
    }

    func testRejectReasons() {
        XCTAssertEqual([400, 408, 413, 414, 431, 503, 501, 505].map { RejectReason(status: $0).label },
                       ["400", "408", "413", "414", "431", "503", "other", "other"])
    }

    /// RFC 9113 §7: codes 0x0–0xd by name; anything else (extensions) is `unknown`.
    func testResetCodesNameTheRFC9113Codes() {
        XCTAssertEqual(H2ResetCode.names[H2ResetCode.index(0x0)], "NO_ERROR")
        XCTAssertEqual(H2ResetCode.names[H2ResetCode.index(0x8)], "CANCEL")
        XCTAssertEqual(H2ResetCode.names[H2ResetCode.index(0xd)], "HTTP_1_1_REQUIRED")
        XCTAssertEqual(H2ResetCode.names[H2ResetCode.index(0xe)], "unknown")
        XCTAssertEqual(H2ResetCode.names[H2ResetCode.index(UInt32.max)], "unknown")
    }

    /// Each bound belongs to its own bucket (`le` is "less than or equal"),
    /// one microsecond more to the next.
    func testDurationBucketsAtEveryBound() {
        XCTAssertEqual(DurationBuckets.index(microseconds: 0), 0)
        for (i, bound) in DurationBuckets.upperBoundsMicroseconds.enumerated() {
            XCTAssertEqual(DurationBuckets.index(microseconds: bound), i, "\(bound)")
            XCTAssertEqual(DurationBuckets.index(microseconds: bound + 1), i + 1, "\(bound + 1)")
        }
        XCTAssertEqual(DurationBuckets.index(microseconds: Int64.max), DurationBuckets.count - 1)
        XCTAssertEqual(DurationBuckets.upperBoundsMicroseconds, DurationBuckets.upperBoundsMicroseconds.sorted())
    }
}
