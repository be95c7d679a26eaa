import XCTest

@testable import Options

/// `--min-body-rate` (CONFIG.md; RELIABILITY.md "The minimum body rate").
final class CommandLineMinBodyRateTests: XCTestCase {
    func testDefaultIsApacheMinRate() throws {
        XCTAssertEqual(try config([]).minBodyRate, 500)
    }

    func testValuesSuffixesAndLimits() throws {
        XCTAssertEqual(try config(["--min-body-rate", "0"]).minBodyRate, 0)
        XCTAssertEqual(try config(["--min-body-rate=2k"]).minBodyRate, 2048)
        XCTAssertEqual(try config(["--min-body-rate", "1g"]).minBodyRate, 1 << 30)
        XCTAssertNotNil(usageError(["--min-body-rate", "-1"]))
        XCTAssertNotNil(usageError(["--min-body-rate", "2g"]))
        XCTAssertNotNil(usageError(["--min-body-rate", "fast"]))
    }
}
