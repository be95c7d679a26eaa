import XCTest

@testable import Options

/// `--header`, `--server-header`, `--no-date-header` (CONFIG.md, "Response
/// headers"): names are tokens (RFC 9110 §5.6.2), values field-content
/// (§5.5), and the server's own fields are refused.
final class CommandLineResponseHeaderTests: XCTestCase {
    private func pairs(_ c: Config) -> [String] {
        c.defaultResponseFields.map { String(decoding: $0.name, as: UTF8.self) + "=" + String(decoding: $0.value, as: UTF8.self) }
    }

    func testDefaultsAreNoFieldsAndADate() throws {
        let c = try config([])
        XCTAssertEqual(c.responseHeaders, [])
        XCTAssertNil(c.serverHeader)
        XCTAssertTrue(c.dateHeader)
        XCTAssertTrue(c.defaultResponseFields.isEmpty)
    }

    func testNamesAreLowerCasedValuesTrimmedAndServerComesLast() throws {
        let c = try config(["--server-header", " peregrine ", "--header", "X-Frame-Options: DENY",
                            "--header=x-a:1", "--header", "X-A:\t two words\t", "--header", "x-empty:",
                            "--no-date-header"])
        XCTAssertEqual(pairs(c), ["x-frame-options=DENY", "x-a=1", "x-a=two words", "x-empty=", "server=peregrine"])
        XCTAssertFalse(c.dateHeader)
    }

    func testEveryTcharIsAcceptedInANameAndObsTextInAValue() throws {
        let c = try config(["--header", "!#$%&'*+-.^_`|~09AZaz:caf\u{e9}"])
        XCTAssertEqual(pairs(c), ["!#$%&'*+-.^_`|~09azaz=caf\u{e9}"])
    }

    func testMalformedFieldsAreRefused() {
        for (argument, words) in [("no-colon", "NAME:VALUE"), (":v", "token"), ("a b:v", "token"), ("a(b):v", "token"),
                                  ("x-a:a\r\nx-b: c", "control"), ("x-a:a\nb", "control"), ("x-a:\u{1}", "control"),
                                  ("x-a:\u{7f}", "control"), ("x-a:" + String(repeating: "v", count: 4097), "4096")] {
            let message = usageError(["--header", argument])
            XCTAssertNotNil(message, argument)
            XCTAssertTrue(message?.contains(words) == true, "\(argument): \(message ?? "")")
            XCTAssertTrue(message?.hasPrefix("--header") == true, message ?? "")
        }
        XCTAssertNil(usageError(["--header", "x-a:" + String(repeating: "v", count: 4096)]))
    }

    /// RFC 9110 §7.6.1 and the server's own fields.
    func testTheServersOwnFieldsAreRefused() {
        for name in ["date", "Server", "connection", "Keep-Alive", "proxy-connection", "te", "transfer-encoding",
                     "upgrade", "content-length", "trailer"] {
            let message = usageError(["--header", name + ": x"])
            XCTAssertTrue(message?.contains("'\(name.lowercased())'") == true, "\(name): \(message ?? "")")
        }
        XCTAssertTrue(usageError(["--header", "server: x"])?.contains("--server-header") == true)
        XCTAssertNil(usageError(["--header", "alt-svc: clear"]))
    }

    func testServerHeaderValuesAreChecked() {
        XCTAssertEqual(usageError(["--server-header", ""]), "--server-header must not be empty")
        XCTAssertEqual(usageError(["--server-header", " \t"]), "--server-header must not be empty")
        XCTAssertTrue(usageError(["--server-header", "a\r\nb: c"])?.hasPrefix("--server-header:") == true)
        XCTAssertEqual(usageError(["--no-date-header=1"]), "option --no-date-header takes no value")
    }

    /// With `server`, 64 fields at most: a mask of one word (DefaultResponseFields).
    func testAtMostSixtyThreeHeaders() {
        let args = { (n: Int) in (0..<n).flatMap { ["--header", "x-\($0): v"] } }
        XCTAssertNil(usageError(args(63) + ["--server-header", "s"]))
        XCTAssertEqual(usageError(args(64)), "--header: at most 63 fields")
    }
}
