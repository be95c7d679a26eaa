import XCTest

@testable import Options
import Proxy

/// `--forwarded-allow-ips`, its `FORWARDED_ALLOW_IPS` fallback and
/// `--scheme` on the command line (CONFIG.md, "Behind a reverse proxy").
final class CommandLineForwardedTests: XCTestCase {
    private func config(_ arguments: [String], environment: [String: String] = [:]) throws(UsageError) -> Config {
        switch try CommandLineParser.parse(arguments + ["app:app"], environment: { environment[$0] }) {
        case .run(let config): return config
        case .printAndExit: XCTFail("printed instead of running"); return Config()
        }
    }

    private func usageError(_ arguments: [String], environment: [String: String] = [:]) -> String? {
        do {
            _ = try config(arguments, environment: environment)
            return nil
        } catch {
            return error.message
        }
    }

    private func ip(_ text: String) -> PeerAddress { .ip(IPAddress(text)!) }

    func testByDefaultNoPeerIsTrustedAndNoSchemeIsForced() throws {
        let c = try config([])
        XCTAssertTrue(c.forwardedAllowIPs.isEmpty)
        XCTAssertNil(c.scheme)
    }

    func testTheOptionListsAddressesBlocksAndUnix() throws {
        let c = try config(["--forwarded-allow-ips", "127.0.0.1, 10.0.0.0/8, unix"])
        XCTAssertTrue(c.forwardedAllowIPs.contains(ip("127.0.0.1")))
        XCTAssertTrue(c.forwardedAllowIPs.contains(ip("10.9.8.7")))
        XCTAssertTrue(c.forwardedAllowIPs.contains(.unix))
        XCTAssertFalse(c.forwardedAllowIPs.contains(ip("192.168.1.1")))
        let inline = try config(["--forwarded-allow-ips=*"])
        XCTAssertTrue(inline.forwardedAllowIPs.trustsEveryone)
    }

    func testTheEnvironmentVariableIsReadOnlyWhenTheOptionIsAbsent() throws {
        let fromEnvironment = try config([], environment: ["FORWARDED_ALLOW_IPS": "::1"])
        XCTAssertTrue(fromEnvironment.forwardedAllowIPs.contains(ip("::1")))
        let overruled = try config(["--forwarded-allow-ips", "10.0.0.1"], environment: ["FORWARDED_ALLOW_IPS": "::1"])
        XCTAssertFalse(overruled.forwardedAllowIPs.contains(ip("::1")))
        XCTAssertTrue(overruled.forwardedAllowIPs.contains(ip("10.0.0.1")))
        // The option wins even over a variable that would not parse.
        XCTAssertNoThrow(try config(["--forwarded-allow-ips", "10.0.0.1"], environment: ["FORWARDED_ALLOW_IPS": "x"]))
    }

    func testAMalformedItemIsAUsageErrorNamingIt() {
        XCTAssertEqual(usageError(["--forwarded-allow-ips", "127.0.0.1, 10.0.0.0/33"]),
                       "--forwarded-allow-ips: '10.0.0.0/33' has an invalid prefix length (0-32 for IPv4, 0-128 for IPv6)")
        XCTAssertEqual(usageError(["--forwarded-allow-ips", "localhost"]),
                       "--forwarded-allow-ips: 'localhost' is not an IP address, a CIDR block, 'unix' or '*'")
        XCTAssertEqual(usageError([], environment: ["FORWARDED_ALLOW_IPS": "1.2.3.4, nope"]),
                       "FORWARDED_ALLOW_IPS: 'nope' is not an IP address, a CIDR block, 'unix' or '*'")
    }

    func testSchemeIsHTTPOrHTTPS() throws {
        XCTAssertEqual(try config(["--scheme", "https"]).scheme, .https)
        XCTAssertEqual(try config(["--scheme", "HTTP"]).scheme, .http)
        XCTAssertEqual(usageError(["--scheme", "wss"]), "--scheme must be http or https, got 'wss'")
    }
}
