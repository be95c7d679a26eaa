import XCTest

@testable import Options

/// `--metrics-port` and `--metrics-host` (CONFIG.md, "Metrics"), and the
/// hidden `--worker-metrics` the supervisor passes its workers.
final class CommandLineMetricsTests: XCTestCase {
    func testMetricsAreOffByDefault() throws {
        let c = try config([])
        XCTAssertNil(c.metricsPort)
        XCTAssertNil(c.metricsHost)
        XCTAssertEqual(c.metricsFD, -1)
    }

    func testPortAndHost() throws {
        let c = try config(["--metrics-port", "9100", "--metrics-host", "0.0.0.0"])
        XCTAssertEqual(c.metricsPort, 9100)
        XCTAssertEqual(c.metricsHost, "0.0.0.0")
        XCTAssertEqual(try config(["--metrics-port", "0"]).metricsPort, 0)
        XCTAssertEqual(try config(["--metrics-port", "65535"]).metricsPort, 65535)
    }

    func testPortOutOfRangeOrNotANumberIsRefused() {
        XCTAssertNotNil(usageError(["--metrics-port", "65536"])?.range(of: "--metrics-port"))
        XCTAssertNotNil(usageError(["--metrics-port", "-1"])?.range(of: "--metrics-port"))
        XCTAssertNotNil(usageError(["--metrics-port", "abc"])?.range(of: "--metrics-port"))
        XCTAssertNotNil(usageError(["--metrics-port"]))
    }

    func testTheServingPortCannotServeMetrics() {
        XCTAssertEqual(usageError(["--port", "9000", "--metrics-port", "9000"]),
                       "--metrics-port must differ from the serving port (9000)")
        // The default serving port counts too.
        XCTAssertEqual(usageError(["--metrics-port", "8000"]), "--metrics-port must differ from the serving port (8000)")
    }

    func testPortZeroTwiceMeansTwoFreePorts() throws {
        XCTAssertEqual(try config(["--port", "0", "--metrics-port", "0"]).metricsPort, 0)
    }

    func testAUnixSocketOrAnInheritedOneLeavesEveryPortFree() throws {
        XCTAssertEqual(try config(["--unix", "/tmp/s", "--metrics-port", "8000"]).metricsPort, 8000)
        XCTAssertEqual(try config(["--fd", "3", "--metrics-port", "8000"]).metricsPort, 8000)
    }

    func testHostNeedsPort() {
        XCTAssertEqual(usageError(["--metrics-host", "127.0.0.1"]), "--metrics-host needs --metrics-port")
        XCTAssertEqual(usageError(["--metrics-port", "9100", "--metrics-host", ""]), "--metrics-host must not be empty")
    }

    func testHiddenWorkerMetrics() throws {
        let c = try config(["--worker-metrics", "7:4:16"])
        XCTAssertEqual(c.metricsFD, 7)
        XCTAssertEqual(c.metricsFirstBlock, 4)
        XCTAssertEqual(c.metricsBlocks, 16)
        for bad in ["7:4", "7:4:4", "x:0:1", "-1:0:1", "7:-1:2", "7:0:1:2", ""] {
            XCTAssertEqual(usageError(["--worker-metrics", bad]), "--worker-metrics is internal (FD:FIRST:BLOCKS)", bad)
        }
    }

    func testUsageTextListsTheOptions() {
        XCTAssertTrue(usageText.contains("\n  --metrics-port PORT      "))
        XCTAssertTrue(usageText.contains("\n  --metrics-host HOST      "))
        for line in usageText.split(separator: "\n") where line.contains("metrics") || line.contains("(0 picks a free one") {
            XCTAssertLessThanOrEqual(line.count, 80, String(line))
        }
    }
}
