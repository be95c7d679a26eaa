import XCTest

@testable import Options
import Proxy

/// The options of CONFIG.md "Behind a reverse proxy" beyond the forwarded
/// headers: PROXY protocol, inherited sockets, health and draining,
/// admission control. Each is parsed, and each mistake is one usage line.
final class CommandLineProxyTests: XCTestCase {
    private func ip(_ text: String) -> PeerAddress { .ip(IPAddress(text)!) }

    // MARK: - PROXY protocol

    func testProxyProtocolIsOffByDefaultAndAllowsLoopbackAndUnixPeers() throws {
        let c = try config([])
        XCTAssertFalse(c.proxyProtocol)
        XCTAssertTrue(c.proxyAllowIPs.contains(ip("127.0.0.1")))
        XCTAssertTrue(c.proxyAllowIPs.contains(ip("::1")))
        XCTAssertTrue(c.proxyAllowIPs.contains(.unix))
        XCTAssertFalse(c.proxyAllowIPs.contains(ip("127.0.0.2")))
        XCTAssertFalse(c.proxyAllowIPs.contains(ip("10.0.0.1")))
    }

    func testProxyProtocolTakesAnAllowListOfTheForwardedSyntax() throws {
        let c = try config(["--proxy-protocol", "--proxy-allow-ips", "10.0.0.0/8, fd00::/8"])
        XCTAssertTrue(c.proxyProtocol)
        XCTAssertTrue(c.proxyAllowIPs.contains(ip("10.1.2.3")))
        XCTAssertTrue(c.proxyAllowIPs.contains(ip("fd00::7")))
        XCTAssertFalse(c.proxyAllowIPs.contains(ip("127.0.0.1")))
        XCTAssertFalse(c.proxyAllowIPs.contains(.unix))
        XCTAssertTrue(try config(["--proxy-protocol", "--proxy-allow-ips=*"]).proxyAllowIPs.trustsEveryone)
    }

    func testProxyOptionMistakesAreUsageErrors() {
        XCTAssertEqual(usageError(["--proxy-protocol=yes"]), "option --proxy-protocol takes no value")
        XCTAssertEqual(usageError(["--proxy-allow-ips", "10.0.0.1"]), "--proxy-allow-ips needs --proxy-protocol")
        XCTAssertEqual(usageError(["--proxy-protocol", "--proxy-allow-ips", "10.0.0.0/40"]),
                       "--proxy-allow-ips: '10.0.0.0/40' has an invalid prefix length (0-32 for IPv4, 0-128 for IPv6)")
        XCTAssertEqual(usageError(["--proxy-protocol", "--proxy-allow-ips", " , "]),
                       "--proxy-allow-ips must name at least one peer")
    }

    // MARK: - Inherited sockets

    func testFdIsRepeatableAndExcludesTheBindingOptions() throws {
        XCTAssertEqual(try config(["--fd", "3", "--fd=7"]).inheritedFDs, [3, 7])
        XCTAssertEqual(try config(["--fd", "0"]).inheritedFDs, [0])
        XCTAssertEqual(try config([]).inheritedFDs, [])
        XCTAssertFalse(try config(["--fd", "3"]).listenAddressGiven)
        XCTAssertTrue(try config(["--port", "1"]).listenAddressGiven)
        XCTAssertEqual(usageError(["--fd", "-1"]), "--fd must be a descriptor number (0 or more), got '-1'")
        XCTAssertEqual(usageError(["--fd", "x"]), "--fd must be a descriptor number (0 or more), got 'x'")
        XCTAssertEqual(usageError(["--fd", "3", "--fd", "3"]), "--fd 3 is given twice")
        for other in [["--host", "::1"], ["--port", "80"], ["--unix", "/tmp/s"]] {
            XCTAssertEqual(usageError(["--fd", "3"] + other),
                           "--fd serves an inherited socket: it cannot be combined with --host, --port or --unix")
        }
    }

    func testUnixModeIsOctalAndNeedsUnix() throws {
        XCTAssertNil(try config(["--unix", "/tmp/s"]).unixMode)
        XCTAssertEqual(try config(["--unix", "/tmp/s", "--unix-mode", "660"]).unixMode, 0o660)
        XCTAssertEqual(try config(["--unix", "/tmp/s", "--unix-mode", "0600"]).unixMode, 0o600)
        XCTAssertEqual(try config(["--unix", "/tmp/s", "--unix-mode", "0"]).unixMode, 0)
        XCTAssertEqual(try config(["--unix", "/tmp/s", "--unix-mode", "777"]).unixMode, 0o777)
        for bad in ["888", "1000", "07777", "rw", "", "-1", "0x1"] {
            XCTAssertEqual(usageError(["--unix", "/tmp/s", "--unix-mode", bad]),
                           "--unix-mode must be octal permission bits (0-777), got '\(bad)'", bad)
        }
        XCTAssertEqual(usageError(["--unix-mode", "600"]), "--unix-mode needs --unix")
    }

    func testTheInternalWorkerOptionCarriesSeveralListeners() throws {
        let one = try config(["--worker", "5:6"])
        XCTAssertEqual(one.inheritedListener, 5)
        XCTAssertEqual(one.moreListeners, [])
        XCTAssertEqual(one.statusFD, 6)
        let several = try config(["--worker", "3,4,9:6:7:1:4"])
        XCTAssertEqual(several.inheritedListener, 3)
        XCTAssertEqual(several.moreListeners, [4, 9])
        XCTAssertEqual(several.statusFD, 6)
        XCTAssertEqual(several.boardFD, 7)
        XCTAssertEqual(several.boardSlot, 1)
        XCTAssertEqual(several.boardSlots, 4)
        for bad in ["3,:6", ",3:6", "3,x:6", ":6", "3", "3:6:7"] {
            XCTAssertNotNil(usageError(["--worker", bad]), bad)
        }
    }

    func testSocketActivationNamesThisProcessOrNothing() throws {
        let a = try SocketActivation.parse(pid: 42, listenPID: "42", listenFDs: "3", names: "web::admin")
        XCTAssertEqual(a?.sockets, [.init(fd: 3, name: "web"), .init(fd: 4, name: nil), .init(fd: 5, name: "admin")])
        // Fewer names than sockets: the rest are unnamed.
        let b = try SocketActivation.parse(pid: 42, listenPID: "42", listenFDs: "2", names: "web")
        XCTAssertEqual(b?.sockets, [.init(fd: 3, name: "web"), .init(fd: 4, name: nil)])
        XCTAssertEqual(try SocketActivation.parse(pid: 42, listenPID: "42", listenFDs: "1", names: nil)?.sockets,
                       [.init(fd: 3, name: nil)])
        // Meant for another process (a parent's variables leaked to a child), or nothing passed.
        XCTAssertNil(try SocketActivation.parse(pid: 42, listenPID: "41", listenFDs: "1", names: nil))
        XCTAssertNil(try SocketActivation.parse(pid: 42, listenPID: nil, listenFDs: "1", names: nil))
        XCTAssertNil(try SocketActivation.parse(pid: 42, listenPID: "42", listenFDs: nil, names: nil))
        XCTAssertNil(try SocketActivation.parse(pid: 42, listenPID: "42", listenFDs: "0", names: nil))
    }

    func testMalformedActivationVariablesAreStartupErrors() {
        func failure(_ pid: String, _ fds: String) -> String? {
            do {
                _ = try SocketActivation.parse(pid: 42, listenPID: pid, listenFDs: fds, names: nil)
                return nil
            } catch {
                return error.message
            }
        }
        XCTAssertEqual(failure("x", "1"), "systemd socket activation: LISTEN_PID is not a process id: 'x'")
        XCTAssertEqual(failure("-3", "1"), "systemd socket activation: LISTEN_PID is not a process id: '-3'")
        XCTAssertEqual(failure("42", "x"), "systemd socket activation: LISTEN_FDS must be 0-64, got 'x'")
        XCTAssertEqual(failure("42", "-1"), "systemd socket activation: LISTEN_FDS must be 0-64, got '-1'")
        XCTAssertEqual(failure("42", "65"), "systemd socket activation: LISTEN_FDS must be 0-64, got '65'")
    }

    // MARK: - Health, draining, admission

    func testHealthDrainAndAdmissionDefaultsAreOff() throws {
        let c = try config([])
        XCTAssertNil(c.healthPath)
        XCTAssertEqual(c.drainDelayMilliseconds, 0)
        XCTAssertEqual(c.limitConcurrency, 0)
        XCTAssertEqual(c.maxConnectionAgeMilliseconds, 0)
    }

    func testHealthDrainAndAdmissionParse() throws {
        let c = try config(["--health-path", "/healthz", "--drain-delay", "5000", "--limit-concurrency", "64",
                            "--max-connection-age=600000"])
        XCTAssertEqual(c.healthPath, "/healthz")
        XCTAssertEqual(c.drainDelayMilliseconds, 5000)
        XCTAssertEqual(c.limitConcurrency, 64)
        XCTAssertEqual(c.maxConnectionAgeMilliseconds, 600_000)
        XCTAssertEqual(try config(["--health-path", "/"]).healthPath, "/")
        XCTAssertEqual(try config(["--health-path", "/-/ready%20x"]).healthPath, "/-/ready%20x")
        XCTAssertEqual(try config(["--drain-delay", "3600000"]).drainDelayMilliseconds, 3_600_000)
        XCTAssertEqual(try config(["--limit-concurrency", "1"]).limitConcurrency, 1)
    }

    func testHealthDrainAndAdmissionMistakesAreUsageErrors() {
        for bad in ["healthz", "", "/a?b", "/a#b", "/a b", "/\u{7F}", "/é"] {
            XCTAssertEqual(usageError(["--health-path", bad]),
                           "--health-path must be a path starting with '/' (no query, spaces or controls), got '\(bad)'")
        }
        XCTAssertEqual(usageError(["--drain-delay", "-1"]), "--drain-delay must be an integer in 0...3600000, got '-1'")
        XCTAssertEqual(usageError(["--drain-delay", "3600001"]),
                       "--drain-delay must be an integer in 0...3600000, got '3600001'")
        XCTAssertEqual(usageError(["--limit-concurrency", "0"]),
                       "--limit-concurrency must be an integer in 1...1000000, got '0'")
        XCTAssertEqual(usageError(["--limit-concurrency", "1000001"]),
                       "--limit-concurrency must be an integer in 1...1000000, got '1000001'")
        XCTAssertEqual(usageError(["--max-connection-age", "x"]),
                       "--max-connection-age must be an integer in 0...86400000, got 'x'")
        XCTAssertEqual(usageError(["--max-connection-age", "86400001"]),
                       "--max-connection-age must be an integer in 0...86400000, got '86400001'")
    }

    func testHostileActivationVariablesNeverNameSocketsTheyShouldNot() throws {
        // Table: (LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES) -> descriptors served, or a startup error (nil).
        let cases: [(String?, String?, String?, [Int32]?)] = [
            ("42", "1", "a:b:c:d", [3]),  // more names than sockets: the extra ones are ignored
            ("42", "2", ":::::", [3, 4]),
            ("42", "64", nil, (3..<67).map { Int32($0) }),
            ("42", "1", String(repeating: ":", count: 10_000), [3]),
            ("42", " 1", nil, nil),
            ("42", "+1", nil, nil),
            ("42", "1 ", nil, nil),
            ("42", "0x1", nil, nil),
            ("42", "99999999999999999999", nil, nil),
            ("042", "1", nil, [3]),  // a decimal with a leading zero is still this process
            ("42 ", "1", nil, nil),
            ("", "1", nil, nil),
            ("4294967338", "1", nil, nil),  // 42 + 2^32 must not wrap to 42
            ("42", "", nil, nil),
        ]
        for (pid, fds, names, expected) in cases {
            do {
                let got = try SocketActivation.parse(pid: 42, listenPID: pid, listenFDs: fds, names: names)
                XCTAssertEqual(got?.sockets.map(\.fd) ?? [], expected ?? [-1], "\(pid ?? "nil") \(fds ?? "nil")")
            } catch {
                XCTAssertNil(expected, "\(pid ?? "nil") \(fds ?? "nil"): \(error.message)")
            }
        }
    }
}
