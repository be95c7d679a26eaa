import XCTest

@testable import Options

/// `--http3` and the QUIC options (CONFIG.md, "HTTP/3"), and the hidden
/// `--worker-udp` the supervisor passes its workers.
final class CommandLineHTTP3Tests: XCTestCase {
    private let tls = ["--tls-cert", "c.pem", "--tls-key", "k.pem"]

    func testDefaultsAreTheDocumentedOnes() throws {
        let c = try config([])
        XCTAssertFalse(c.http3)
        XCTAssertNil(c.quicPort)
        XCTAssertEqual(c.http3MaxStreams, 100)
        XCTAssertEqual(c.quicIdleTimeoutMilliseconds, 30_000)
        XCTAssertEqual(c.quicStreamWindow, 1 << 20)
        XCTAssertEqual(c.quicConnectionWindow, 4 << 20)
        XCTAssertEqual(c.quicCongestion, .cubic)
        XCTAssertEqual(c.inheritedDatagramSockets, [])
        XCTAssertFalse(c.quicRetry)
        XCTAssertEqual(c.quicRetryThreshold, 100)
        XCTAssertEqual(c.quicMaxDatagramSize, 1452)
        XCTAssertFalse(c.quicNoMigration)
    }

    /// `--quic-max-datagram-size` (RFC 8899 path MTU discovery's ceiling;
    /// CONFIG.md): 1200 (no discovery) to 9000 (jumbo frames).
    func testMaxDatagramSize() throws {
        XCTAssertEqual(try config(tls + ["--http3", "--quic-max-datagram-size", "1200"]).quicMaxDatagramSize, 1200)
        XCTAssertEqual(try config(tls + ["--http3", "--quic-max-datagram-size=9000"]).quicMaxDatagramSize, 9000)
        XCTAssertNotNil(usageError(tls + ["--http3", "--quic-max-datagram-size", "1199"]))
        XCTAssertNotNil(usageError(tls + ["--http3", "--quic-max-datagram-size", "9001"]))
        XCTAssertNotNil(usageError(tls + ["--http3", "--quic-max-datagram-size", "1.5k"]))
        XCTAssertEqual(usageError(tls + ["--quic-max-datagram-size", "1300"]), "--quic-max-datagram-size needs --http3")
    }

    /// `--quic-no-migration` (RFC 9000 §18.2 disable_active_migration).
    func testNoMigrationOption() throws {
        XCTAssertTrue(try config(tls + ["--http3", "--quic-no-migration"]).quicNoMigration)
        XCTAssertEqual(usageError(tls + ["--http3", "--quic-no-migration=1"]), "option --quic-no-migration takes no value")
        XCTAssertEqual(usageError(tls + ["--quic-no-migration"]), "--quic-no-migration needs --http3")
    }

    /// `--quic-retry` and `--quic-retry-threshold` (RFC 9000 §8.1.2;
    /// TRANSPORT.md "Address validation").
    func testRetryOptions() throws {
        let c = try config(tls + ["--http3", "--quic-retry", "--quic-retry-threshold", "0"])
        XCTAssertTrue(c.quicRetry)
        XCTAssertEqual(c.quicRetryThreshold, 0)
        XCTAssertEqual(try config(tls + ["--http3", "--quic-retry-threshold=1000000"]).quicRetryThreshold, 1_000_000)
        XCTAssertEqual(usageError(tls + ["--http3", "--quic-retry=yes"]), "option --quic-retry takes no value")
        XCTAssertNotNil(usageError(tls + ["--http3", "--quic-retry-threshold", "1000001"]))
        XCTAssertNotNil(usageError(tls + ["--http3", "--quic-retry-threshold", "-1"]))
        XCTAssertNotNil(usageError(tls + ["--http3", "--quic-retry-threshold", "x"]))
        XCTAssertEqual(usageError(tls + ["--quic-retry"]), "--quic-retry needs --http3")
    }

    func testEveryOptionIsRead() throws {
        let c = try config(tls + ["--http3", "--quic-port", "8443", "--http3-max-streams", "7",
                                  "--quic-idle-timeout=1500", "--quic-stream-window", "64k",
                                  "--quic-connection-window", "2m", "--quic-congestion", "newreno"])
        XCTAssertTrue(c.http3)
        XCTAssertEqual(c.quicPort, 8443)
        XCTAssertEqual(c.http3MaxStreams, 7)
        XCTAssertEqual(c.quicIdleTimeoutMilliseconds, 1500)
        XCTAssertEqual(c.quicStreamWindow, 64 << 10)
        XCTAssertEqual(c.quicConnectionWindow, 2 << 20)
        XCTAssertEqual(c.quicCongestion, .newReno)
    }

    /// `--quic-congestion` names one of the two controllers (RFC 9438 CUBIC,
    /// RFC 9002 NewReno), nothing else, and like every QUIC option needs --http3.
    func testQUICCongestionNamesAController() throws {
        XCTAssertEqual(try config(tls + ["--http3", "--quic-congestion=cubic"]).quicCongestion, .cubic)
        XCTAssertEqual(try config(tls + ["--http3", "--quic-congestion", "newreno"]).quicCongestion, .newReno)
        for bad in ["", "reno", "CUBIC", "bbr"] {
            XCTAssertEqual(usageError(tls + ["--http3", "--quic-congestion", bad]),
                           "--quic-congestion must be cubic or newreno, got '\(bad)'", bad)
        }
        XCTAssertEqual(usageError(tls + ["--quic-congestion", "newreno"]), "--quic-congestion needs --http3")
    }

    /// `--quic-key-update-interval`: packets under one key before the
    /// server updates (RFC 9001 §6.1), at most half AES-GCM's 2^23 (§6.6).
    func testKeyUpdateInterval() throws {
        XCTAssertEqual(try config(tls + ["--http3"]).quicKeyUpdateInterval, 1 << 20)
        XCTAssertEqual(try config(tls + ["--http3", "--quic-key-update-interval", "0"]).quicKeyUpdateInterval, 0)
        XCTAssertEqual(try config(tls + ["--http3", "--quic-key-update-interval=4194304"]).quicKeyUpdateInterval, 1 << 22)
        XCTAssertNotNil(usageError(tls + ["--http3", "--quic-key-update-interval", "4194305"]))
        XCTAssertNotNil(usageError(tls + ["--http3", "--quic-key-update-interval", "-1"]))
        XCTAssertEqual(usageError(tls + ["--quic-key-update-interval", "5"]), "--quic-key-update-interval needs --http3")
    }

    /// `--quic-log DIR`: qlog traces, off by default.
    func testQUICLog() throws {
        XCTAssertNil(try config(tls + ["--http3"]).quicLogDirectory)
        XCTAssertEqual(try config(tls + ["--http3", "--quic-log", "/tmp/q"]).quicLogDirectory, "/tmp/q")
        XCTAssertEqual(usageError(tls + ["--http3", "--quic-log="]), "--quic-log needs a path")
        XCTAssertEqual(usageError(tls + ["--quic-log", "/tmp/q"]), "--quic-log needs --http3")
    }

    func testHTTP3NeedsACertificateAndAKey() {
        XCTAssertEqual(usageError(["--http3"]), "--http3 needs --tls-cert and --tls-key (QUIC always runs TLS 1.3)")
    }

    func testHTTP3TakesNoValue() {
        XCTAssertEqual(usageError(tls + ["--http3=yes"]), "option --http3 takes no value")
    }

    func testHTTP3RefusesAUnixSocket() {
        XCTAssertEqual(usageError(tls + ["--http3", "--unix", "/tmp/s"]),
                       "--http3 needs a TCP listener (--host/--port), not --unix: the UDP socket binds the TCP listener's address")
    }

    func testQUICOptionsNeedHTTP3() {
        for (option, value) in [("--quic-port", "1"), ("--http3-max-streams", "1"), ("--quic-idle-timeout", "1"),
                                ("--quic-stream-window", "64k"), ("--quic-connection-window", "64k")] {
            XCTAssertEqual(usageError(tls + [option, value]), "\(option) needs --http3")
        }
    }

    func testEachRangeIsEnforcedAtBothEnds() throws {
        XCTAssertEqual(try config(tls + ["--http3", "--quic-port", "0"]).quicPort, 0)
        XCTAssertEqual(try config(tls + ["--http3", "--quic-port", "65535"]).quicPort, 65535)
        XCTAssertEqual(usageError(tls + ["--http3", "--quic-port", "65536"]),
                       "--quic-port must be an integer in 0...65535, got '65536'")
        XCTAssertEqual(usageError(tls + ["--http3", "--quic-port", "-1"]),
                       "--quic-port must be an integer in 0...65535, got '-1'")

        XCTAssertEqual(try config(tls + ["--http3", "--http3-max-streams", "100000"]).http3MaxStreams, 100_000)
        XCTAssertEqual(usageError(tls + ["--http3", "--http3-max-streams", "0"]),
                       "--http3-max-streams must be an integer in 1...100000, got '0'")
        XCTAssertEqual(usageError(tls + ["--http3", "--http3-max-streams", "100001"]),
                       "--http3-max-streams must be an integer in 1...100000, got '100001'")

        XCTAssertEqual(try config(tls + ["--http3", "--quic-idle-timeout", "1"]).quicIdleTimeoutMilliseconds, 1)
        XCTAssertEqual(usageError(tls + ["--http3", "--quic-idle-timeout", "0"]),
                       "--quic-idle-timeout must be an integer in 1...86400000, got '0'")
        XCTAssertEqual(usageError(tls + ["--http3", "--quic-idle-timeout", "86400001"]),
                       "--quic-idle-timeout must be an integer in 1...86400000, got '86400001'")

        XCTAssertEqual(try config(tls + ["--http3", "--quic-stream-window", "16k"]).quicStreamWindow, 16 << 10)
        XCTAssertEqual(try config(tls + ["--http3", "--quic-stream-window", "1g", "--quic-connection-window", "1g"])
            .quicConnectionWindow, 1 << 30)
        XCTAssertEqual(usageError(tls + ["--http3", "--quic-stream-window", "16383"]),
                       "--quic-stream-window must be a size in bytes between 16384 and 1073741824 (suffix k, m or g allowed), got '16383'")
        XCTAssertEqual(usageError(tls + ["--http3", "--quic-connection-window", "1025m"]),
                       "--quic-connection-window must be a size in bytes between 16384 and 1073741824 (suffix k, m or g allowed), got '1025m'")
    }

    func testTheStreamWindowMustFitTheConnectionWindow() throws {
        XCTAssertEqual(usageError(tls + ["--http3", "--quic-stream-window", "8m"]),
                       "--quic-stream-window (8388608) must not exceed --quic-connection-window (4194304)")
        XCTAssertEqual(try config(tls + ["--http3", "--quic-stream-window", "4m"]).quicStreamWindow, 4 << 20)
    }

    func testWorkerUDPNamesTheBaseIndexAndOneSocketPerThread() throws {
        let c = try config(["--worker-udp", "6:9,10,11"])
        XCTAssertEqual(c.datagramSocketBase, 6)
        XCTAssertEqual(c.inheritedDatagramSockets, [9, 10, 11])
        for bad in ["", "6", "6:", ":9", "x:9", "6:9,", "6:9,x", "-1:9", "6:-3", "1:2:3"] {
            XCTAssertEqual(usageError(["--worker-udp", bad]), "--worker-udp is internal (BASE:FD[,FD...])", bad)
        }
    }

    func testHelpListsTheOptions() {
        for option in ["--http3 ", "--quic-port", "--http3-max-streams", "--quic-idle-timeout", "--quic-stream-window",
                       "--quic-connection-window", "--quic-congestion", "--quic-key-update-interval", "--quic-log"] {
            XCTAssertTrue(usageText.contains("  \(option)"), option)
        }
        XCTAssertFalse(usageText.contains("--worker-udp"))
    }
}
