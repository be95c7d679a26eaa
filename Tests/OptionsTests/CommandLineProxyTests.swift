import XCTest

@testable import Options
import Proxy

/// The options of CONFIG.md "Behind a reverse proxy" beyond the forwarded
/// headers: PROXY protocol, inherited sockets, health and draining,
/// admission control. Each is parsed, and each mistake is one usage line.
final class CommandLineProxyTests: XCTestCase {
    private func config(_ arguments: [String]) throws(UsageError) -> Config {
        switch try CommandLineParser.parse(arguments + ["app:app"], environment: { _ in nil }) {
        case .run(let config): return config
        case .printAndExit: XCTFail("printed instead of running"); return Config()
        }
    }

    private func usageError(_ arguments: [String]) -> String? {
        do {
            _ = try config(arguments)
            return nil
        } catch {
            return error.message
        }
    }

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
}
