import XCTest

@testable import Supervision

/// The text exposition format, version 0.0.4
/// (https://prometheus.io/docs/instrumenting/exposition_formats/): the
/// escaping of HELP text and label values, sample lines, and the decimal
/// seconds the histogram bounds and sums use.
final class MetricsExpositionTests: XCTestCase {
    /// HELP: `\` → `\\`, line feed → `\n`; a double quote stays.
    func testHelpEscapesBackslashAndLineFeedOnly() {
        XCTAssertEqual(MetricsExposition.escapeHelp("plain text"), "plain text")
        XCTAssertEqual(MetricsExposition.escapeHelp("a\\b\nc\"d"), "a\\\\b\\nc\"d")
    }

    /// Label values: `\` → `\\`, `"` → `\"`, line feed → `\n`; UTF-8 as is.
    func testLabelValuesEscapeBackslashQuoteAndLineFeed() {
        XCTAssertEqual(MetricsExposition.escapeLabelValue("http/1.1"), "http/1.1")
        XCTAssertEqual(MetricsExposition.escapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd")
        XCTAssertEqual(MetricsExposition.escapeLabelValue("é\tx"), "é\tx")
        XCTAssertEqual(MetricsExposition.escapeLabelValue("\\\\"), "\\\\\\\\")
    }

    func testAFamilyAndItsSamples() {
        var e = MetricsExposition()
        e.family("peregrine_x_total", .counter, help: "What x\ncounts.")
        e.sample("peregrine_x_total", [("protocol", "h2"), ("path", "say \"hi\"")], 3)
        e.sample("peregrine_x_total", [], "+Inf")
        XCTAssertEqual(e.text, """
            # HELP peregrine_x_total What x\\ncounts.
            # TYPE peregrine_x_total counter
            peregrine_x_total{protocol="h2",path="say \\"hi\\""} 3
            peregrine_x_total +Inf

            """)
    }

    func testSecondsFromMicrosecondsAreExactDecimals() {
        XCTAssertEqual(MetricsExposition.seconds(microseconds: 0), "0")
        XCTAssertEqual(MetricsExposition.seconds(microseconds: 500), "0.0005")
        XCTAssertEqual(MetricsExposition.seconds(microseconds: 2_500), "0.0025")
        XCTAssertEqual(MetricsExposition.seconds(microseconds: 1), "0.000001")
        XCTAssertEqual(MetricsExposition.seconds(microseconds: 1_000_000), "1")
        XCTAssertEqual(MetricsExposition.seconds(microseconds: 10_250_000), "10.25")
        XCTAssertEqual(MetricsExposition.seconds(microseconds: -1_500_000), "-1.5")
    }
}
