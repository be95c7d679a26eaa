import XCTest

@testable import Options

/// `--env-file`: python-dotenv's syntax (what uvicorn's `--env-file` reads).
final class DotEnvTests: XCTestCase {
    private func read(_ text: String, environment: [String: String] = [:]) throws(DotEnvError) -> [String] {
        try DotEnv.read(Array(text.utf8), environment: { environment[$0] }).map { "\($0.name)=\($0.value)" }
    }

    func testPlainExportedSpacedAndCommentedLines() throws {
        let doc = """
        # comment
        A=1
        export B=two words
        C = spaced   # a comment
        D=x#not-a-comment

        E=
        """
        XCTAssertEqual(try read(doc), ["A=1", "B=two words", "C=spaced", "D=x#not-a-comment", "E="])
    }

    func testQuotes() throws {
        XCTAssertEqual(try read(#"A='lit $X \n'"#, environment: ["X": "no"]), [#"A=lit $X \n"#])
        XCTAssertEqual(try read(#"A="tab\there \"q\" \\ it\'s""#), ["A=tab\there \"q\" \\ it's"])
        XCTAssertEqual(try read("A=\"two\nlines\"\nB=3"), ["A=two\nlines", "B=3"])
        XCTAssertEqual(try read("A='x' # comment"), ["A=x"])
    }

    func testExpansionPrefersTheEnvironmentThenEarlierLines() throws {
        let doc = "HOME_DIR=/file\nA=${HOME_DIR}/x\nB=\"${MISSING:-fallback}\"\nC=${MISSING}\nD=$NOTBRACED\nE='${HOME_DIR}'"
        XCTAssertEqual(try read(doc), ["HOME_DIR=/file", "A=/file/x", "B=fallback", "C=", "D=$NOTBRACED", "E=${HOME_DIR}"])
        XCTAssertEqual(try read(doc, environment: ["HOME_DIR": "/env"])[1], "A=/env/x")
    }

    func testNameWithoutValueIsSkipped() throws {
        XCTAssertEqual(try read("LONE\nA=1\n"), ["A=1"])
    }

    func testErrorsNameTheLine() {
        XCTAssertThrowsError(try read("A=1\n1BAD=2")) { XCTAssertEqual(($0 as? DotEnvError)?.line, 2) }
        XCTAssertThrowsError(try read("A=1\n\nB \"x\"")) {
            XCTAssertEqual($0 as? DotEnvError, DotEnvError(line: 3, message: "expected '=' after B"))
        }
        XCTAssertThrowsError(try read("A=\"open\nB=1")) {
            XCTAssertEqual($0 as? DotEnvError, DotEnvError(line: 1, message: "A: unterminated quoted value"))
        }
        XCTAssertThrowsError(try read("A='x' y")) { XCTAssertEqual(($0 as? DotEnvError)?.line, 1) }
        XCTAssertThrowsError(try read("A=${OPEN")) { XCTAssertEqual(($0 as? DotEnvError)?.message, "unterminated ${ in a value") }
    }
}
