import XCTest

@testable import Options

/// The strict TOML subset of `--config` files (TOML 1.0, https://toml.io/en/v1.0.0):
/// what it accepts, and each class of refusal with its line.
final class TOMLReaderTests: XCTestCase {
    private func read(_ text: String) throws(TOMLError) -> [TOMLEntry] { try TOMLReader.read(Array(text.utf8)) }

    private func refusal(_ text: String) -> TOMLError? {
        do {
            _ = try read(text)
            return nil
        } catch {
            return error
        }
    }

    private func values(_ text: String) throws -> [String: TOMLValue] {
        var map: [String: TOMLValue] = [:]
        for e in try read(text) { map[e.key] = e.value }
        return map
    }

    func testReadsKeysValuesCommentsAndLines() throws {
        let doc = """
        # a comment
        host = "0.0.0.0"   # trailing comment
        workers = 4

        access-log = true
        tls_cert = ['a.pem', "b.pem"]
        """
        let entries = try read(doc)
        XCTAssertEqual(entries, [
            TOMLEntry(key: "host", value: .string("0.0.0.0"), line: 2),
            TOMLEntry(key: "workers", value: .integer(4), line: 3),
            TOMLEntry(key: "access-log", value: .boolean(true), line: 5),
            TOMLEntry(key: "tls_cert", value: .array([.string("a.pem"), .string("b.pem")]), line: 6),
        ])
    }

    func testCRLFLineEndingsAreAccepted() throws {
        let entries = try TOMLReader.read(Array("a = 1\r\nb = 2\r\n".utf8))
        XCTAssertEqual(entries.map(\.line), [1, 2])
    }

    func testByteOrderMarkIsRefusedAsTomllibDoes() {
        XCTAssertThrowsError(try TOMLReader.read([0xEF, 0xBB, 0xBF] + Array("a = 1\n".utf8))) {
            XCTAssertEqual(($0 as? TOMLError)?.message, "the file starts with a byte order mark: save it as UTF-8 without one")
        }
    }

    func testQuotedKeysAreKeys() throws {
        XCTAssertEqual(try values(#""max-body" = "1m""# + "\n" + "'log level' = 'x'"),
                       ["max-body": .string("1m"), "log level": .string("x")])
    }

    func testBasicStringEscapesIncludingUnicode() throws {
        let v = try values(#"s = "a\tb\n\"q\" \\ \u00e9 \U0001F600 \b\f\r""#)
        XCTAssertEqual(v["s"], .string("a\tb\n\"q\" \\ é 😀 \u{08}\u{0C}\r"))
    }

    func testLiteralStringsKeepBackslashes() throws {
        XCTAssertEqual(try values(#"p = 'C:\dir\n'"#)["p"], .string(#"C:\dir\n"#))
    }

    func testIntegersWithSignUnderscoresAndPrefixes() throws {
        let v = try values("a = +17\nb = -5\nc = 1_000_000\nd = 0\ne = 0xdead_BEEF\nf = 0o755\ng = 0b1010\n"
                           + "h = 9223372036854775807\ni = -9223372036854775808\n")
        XCTAssertEqual(v["a"], .integer(17))
        XCTAssertEqual(v["b"], .integer(-5))
        XCTAssertEqual(v["c"], .integer(1_000_000))
        XCTAssertEqual(v["d"], .integer(0))
        XCTAssertEqual(v["e"], .integer(0xDEAD_BEEF))
        XCTAssertEqual(v["f"], .integer(0o755))
        XCTAssertEqual(v["g"], .integer(10))
        XCTAssertEqual(v["h"], .integer(.max))
        XCTAssertEqual(v["i"], .integer(.min))
    }

    func testMultiLineArrayWithCommentsAndTrailingComma() throws {
        let doc = """
        dirs = [
          "src",   # first
          'lib',
          3,
        ]
        next = 1
        """
        let entries = try read(doc)
        XCTAssertEqual(entries[0].value, .array([.string("src"), .string("lib"), .integer(3)]))
        XCTAssertEqual(entries[1], TOMLEntry(key: "next", value: .integer(1), line: 6))
        XCTAssertEqual(try values("e = []")["e"], .array([]))
    }

    func testPeregrineTableHoldsTheKeys() throws {
        XCTAssertEqual(try read("# c\n[peregrine]\nport = 1\n").map(\.key), ["port"])
        XCTAssertEqual(try read("[ peregrine ]  # spaced\nport = 1\n").map(\.line), [2])
    }

    // MARK: - Refusals, each with its line

    func testRefusesFloatsDatesAndSpecialFloats() {
        for (doc, word) in [("x = 1.5", "floats"), ("x = 1e3", "floats"), ("x = inf", "floats"), ("x = -nan", "floats"),
                            ("x = 1979-05-27", "dates"), ("x = 07:32:00", "dates"),
                            ("x = 1979-05-27T07:32:00Z", "dates")] {
            let e = refusal("ok = 1\n" + doc)
            XCTAssertEqual(e?.line, 2, doc)
            XCTAssertTrue(e?.message.contains(word) ?? false, "\(doc): \(String(describing: e))")
        }
    }

    func testRefusesTablesOtherThanPeregrineAndArraysOfTables() {
        XCTAssertEqual(refusal("a = 1\n[server]\n"), TOMLError(line: 2, message: "unknown table [server]: keys go at the top level or under [peregrine]"))
        XCTAssertEqual(refusal("[[peregrine]]\n")?.line, 1)
        XCTAssertTrue(refusal("[peregrine.x]\n")?.message.contains("dotted") ?? false)
        XCTAssertEqual(refusal("[peregrine]\n[peregrine]\n")?.line, 2)
        XCTAssertEqual(refusal("a = 1\n[peregrine]\nb = 2\n")?.message, "keys before [peregrine]: put every key under [peregrine] or none")
    }

    func testRefusesInlineTablesDottedKeysAndNestedArrays() {
        XCTAssertEqual(refusal("x = {a = 1}")?.message, "inline tables are not supported")
        XCTAssertEqual(refusal("\na.b = 1")?.line, 2)
        XCTAssertEqual(refusal("x = [[1]]")?.message, "nested arrays are not supported")
    }

    func testRefusesMultiLineStrings() {
        XCTAssertEqual(refusal("x = \"\"\"a\"\"\"")?.message, "multi-line strings are not supported")
        XCTAssertEqual(refusal("x = '''a'''")?.message, "multi-line strings are not supported")
    }

    func testRefusesDuplicateKeys() {
        XCTAssertEqual(refusal("a = 1\nb = 2\na = 3\n"), TOMLError(line: 3, message: "key 'a' is defined twice"))
        XCTAssertEqual(refusal("a = 1\n\"a\" = 2\n")?.line, 2)
    }

    func testRefusesBadIntegers() {
        for bad in ["01", "1__0", "_1", "1_", "0x", "+0x1", "0xG", "9223372036854775808", "-9223372036854775809", "+", "1-2"] {
            XCTAssertNotNil(refusal("x = \(bad)"), bad)
        }
    }

    func testRefusesBadStrings() {
        XCTAssertEqual(refusal("x = \"abc")?.message, "unterminated string")
        XCTAssertEqual(refusal("x = 'abc\n'")?.message, "unterminated string")
        XCTAssertEqual(refusal(#"x = "\q""#)?.message, #"invalid escape '\q' in a string"#)
        XCTAssertEqual(refusal(#"x = "\uD800""#)?.message, #"\u escape is not a Unicode scalar value"#)
        XCTAssertEqual(refusal(#"x = "\u12xy""#)?.message, #"invalid \u escape (hex digits expected)"#)
        XCTAssertEqual(refusal(#"x = "\u12"#)?.message, #"incomplete \u escape"#)
        XCTAssertEqual(refusal("x = \"a\u{01}\"")?.message, "control character in a string")
        XCTAssertEqual(try? TOMLReader.read(Array("x = \"".utf8) + [0xFF] + Array("\"".utf8)), nil)
    }

    func testRefusesBareWordsAndMissingPieces() {
        XCTAssertEqual(refusal("x = hello")?.message, "invalid value 'hello' (strings need quotes)")
        XCTAssertEqual(refusal("x =\n")?.message, "expected a value")
        XCTAssertEqual(refusal("x 1")?.message, "expected '=' after key 'x'")
        XCTAssertEqual(refusal("= 1")?.line, 1)
        XCTAssertEqual(refusal("x = 1 y = 2")?.message, "unexpected text after the value (one key = value per line)")
        XCTAssertEqual(refusal("x = [1, 2")?.message, "unterminated array")
        XCTAssertEqual(refusal("x = [1 2]")?.message, "expected ',' or ']' in the array")
        XCTAssertEqual(refusal("x = [,]")?.line, 1)
        XCTAssertEqual(refusal("x = 1\ry = 2")?.line, 1)
    }

    func testRefusesControlCharactersAndInvalidUTF8InComments() {
        XCTAssertEqual(refusal("# bad \u{07}\n")?.message, "control character in a comment")
        let badUTF8 = Array("a = 1 # é # ".utf8) + [0xC3] + Array(" # x\n".utf8)
        XCTAssertThrowsError(try TOMLReader.read(badUTF8)) {
            XCTAssertEqual($0 as? TOMLError, TOMLError(line: 1, message: "invalid UTF-8 in a comment"))
        }
    }

    func testEveryPrefixOfAGoodDocumentIsReadOrRefusedWithoutTrapping() {
        let doc = Array("[peregrine]\nhost = \"h\\u00e9\" # c\nworkers = 0x10\ndirs = [\n 'a',\n \"b\",\n]\nflag = false\n".utf8)
        for end in 0...doc.count { _ = try? TOMLReader.read(Array(doc[..<end])) }
        XCTAssertEqual(try? TOMLReader.read(doc).count, 4)
    }

    func testReadValueTakesOneArrayForTheEnvironment() throws {
        XCTAssertEqual(try TOMLReader.readValue(#"["a,b.pem", 'c'] "#), .array([.string("a,b.pem"), .string("c")]))
        XCTAssertThrowsError(try TOMLReader.readValue(#"["a"] x"#))
    }
}
