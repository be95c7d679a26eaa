import XCTest

@testable import Options

/// `--access-log-format` strings: gunicorn's atoms (glogging.py), `%%`, and
/// every way a format can be wrong. Also the other access-log options.
final class AccessLogTemplateTests: XCTestCase {
    private func parts(_ format: String) throws(AccessLogTemplate.ParseError) -> [AccessLogTemplate.Part] {
        try AccessLogTemplate(parsing: format).parts
    }

    private func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    func testGunicornsDefaultFormatCompilesToLiteralsAndAtoms() throws {
        let p = try parts(#"%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s""#)
        XCTAssertEqual(p, [
            .atom(.remoteAddress), .literal(bytes(" ")), .atom(.dash), .literal(bytes(" ")), .atom(.user),
            .literal(bytes(" ")), .atom(.time), .literal(bytes(" \"")), .atom(.requestLine), .literal(bytes("\" ")),
            .atom(.status), .literal(bytes(" ")), .atom(.bytes), .literal(bytes(" \"")), .atom(.referer),
            .literal(bytes("\" \"")), .atom(.userAgent), .literal(bytes("\"")),
        ])
    }

    func testEverySingleLetterAtom() throws {
        let expected: [(String, AccessLogTemplate.Atom)] = [
            ("h", .remoteAddress), ("l", .dash), ("u", .user), ("t", .time), ("r", .requestLine), ("m", .method),
            ("U", .path), ("q", .query), ("H", .proto), ("s", .status), ("b", .bytes), ("B", .bytes),
            ("f", .referer), ("a", .userAgent), ("T", .seconds), ("D", .microseconds), ("M", .milliseconds),
            ("L", .decimalSeconds), ("p", .pid),
        ]
        for (name, atom) in expected {
            XCTAssertEqual(try parts("%(\(name))s"), [.atom(atom)], name)
        }
    }

    func testFieldAtomsAreLowerCasedAndListedOnce() throws {
        let t = try AccessLogTemplate(parsing: "%({X-Trace}i)s %({x-trace}i)s %(f)s %({Content-Type}o)s %(u)s")
        XCTAssertEqual(t.parts[0], .atom(.requestField(bytes("x-trace"), index: 0)))
        XCTAssertEqual(t.parts[2], .atom(.requestField(bytes("x-trace"), index: 0)))
        XCTAssertEqual(t.parts[6], .atom(.responseField(bytes("content-type"), index: 0)))
        XCTAssertEqual(t.requestFieldNames, [bytes("x-trace"), bytes("referer"), bytes("authorization")])
        XCTAssertEqual(t.responseFieldNames, [bytes("content-type")])
        XCTAssertEqual(t.refererIndex, 1)
        XCTAssertEqual(t.authorizationIndex, 2)
        XCTAssertNil(t.userAgentIndex)
        let two = try AccessLogTemplate(parsing: "%({a}o)s %({b}i)s %({B}o)s %({c}i)s")
        XCTAssertEqual(two.parts[2], .atom(.requestField(bytes("b"), index: 0)))
        XCTAssertEqual(two.parts[4], .atom(.responseField(bytes("b"), index: 1)))
        XCTAssertEqual(two.parts[6], .atom(.requestField(bytes("c"), index: 1)))
    }

    func testDoublePercentIsALiteralPercentAndMergesWithText() throws {
        XCTAssertEqual(try parts("100%% %(s)s%%"), [.literal(bytes("100% ")), .atom(.status), .literal(bytes("%"))])
    }

    func testFieldNameMayHoldAParenthesisOnlyInsideBraces() throws {
        // `)` is not a token character: refused, but found as the atom's text.
        XCTAssertThrowsError(try parts("%({a)b}i)s")) { error in
            XCTAssertEqual(error as? AccessLogTemplate.ParseError, .unknownAtom("%({a)b}i)s"))
        }
    }

    func testMistakesNameTheOffendingText() {
        let cases: [(String, AccessLogTemplate.ParseError)] = [
            ("%(z)s", .unknownAtom("%(z)s")),
            ("%(s)d", .unknownAtom("%(s)d")),
            ("%(hh)s", .unknownAtom("%(hh)s")),
            ("50% off %(s)s", .unknownAtom("% ")),
            ("%(s)s %", .unknownAtom("%")),
            ("%(s)s %(", .unknownAtom("%(")),
            ("%(s", .unknownAtom("%(s")),
            ("%({x}e)s", .unknownAtom("%({x}e)s")),
            ("%({}i)s", .unknownAtom("%({}i)s")),
            ("%({a b}i)s", .unknownAtom("%({a b}i)s")),
            ("%(s)", .unknownAtom("%(s)")),
            ("", .noAtom),
            ("xml", .noAtom),
            ("100%%", .noAtom),
        ]
        for (format, expected) in cases {
            XCTAssertThrowsError(try parts(format), format) { error in
                XCTAssertEqual(error as? AccessLogTemplate.ParseError, expected, format)
            }
        }
    }

    // MARK: - The options

    func testAccessLogFormatTakesTextJsonOrATemplateAndTurnsTheLogOn() throws {
        XCTAssertEqual(try config(["--access-log-format", "JSON"]).accessLogFormat, .json)
        XCTAssertEqual(try config(["--access-log-format", "text"]).accessLogFormat, .text)
        let c = try config(["--access-log-format", "%(h)s %(s)s"])
        XCTAssertTrue(c.accessLog)
        XCTAssertEqual(c.accessLogFormat, .template(try AccessLogTemplate(parsing: "%(h)s %(s)s")))
        XCTAssertEqual(c.accessLogFormat.optionValue, "%(h)s %(s)s")
        XCTAssertEqual(try config(["--access-log-format", "JSON"]).accessLogFormat.optionValue, "json")
    }

    func testABadFormatIsOneUsageLineNamingTheAtom() {
        XCTAssertEqual(usageError(["--access-log-format", "%(h)s %(zz)s"]),
                       "--access-log-format: unknown atom '%(zz)s' (see CONFIG.md for the atoms)")
        XCTAssertEqual(usageError(["--access-log-format", "xml"]),
                       "--access-log-format must be text, json or a format string with %(...)s atoms, got 'xml'")
    }

    func testAccessLogFileTurnsTheLogOn() throws {
        let c = try config(["--access-log-file", "/var/log/p.log"])
        XCTAssertEqual(c.accessLogFile, "/var/log/p.log")
        XCTAssertTrue(c.accessLog)
        XCTAssertNil(try config([]).accessLogFile)
        XCTAssertNotNil(usageError(["--access-log-file", ""]))
    }

    func testRequestIDHeaderMustBeAToken() throws {
        XCTAssertEqual(try config(["--request-id-header", "X-Request-ID"]).requestIDHeader, "X-Request-ID")
        XCTAssertNil(try config([]).requestIDHeader)
        XCTAssertEqual(try config(["--request-id-header", String(repeating: "a", count: 64)]).requestIDHeader?.count, 64)
        for bad in ["", "X Request", "X-Request-ID:", String(repeating: "a", count: 65), "é"] {
            XCTAssertNotNil(usageError(["--request-id-header", bad]), bad)
        }
        XCTAssertFalse(try config(["--request-id-header", "x-id"]).accessLog, "ids do not turn the access log on")
    }

    func testLogFormat() throws {
        XCTAssertEqual(try config([]).logFormat, .text)
        XCTAssertEqual(try config(["--log-format", "json"]).logFormat, .json)
        XCTAssertEqual(try config(["--log-format", "TEXT"]).logFormat, .text)
        XCTAssertEqual(usageError(["--log-format", "xml"]), "--log-format must be text or json, got 'xml'")
    }
}
