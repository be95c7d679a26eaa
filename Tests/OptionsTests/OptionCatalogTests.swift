import XCTest

@testable import Options

/// The catalog names exactly the options of `usageText` (plus the hidden
/// ones): an option added to the parser and the help must be added here.
final class OptionCatalogTests: XCTestCase {
    /// Every `--name` that starts an option line of the help.
    private var documentedOptions: [String] {
        usageText.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("  --") else { return nil }
            return String(line.dropFirst(4).prefix { $0 != " " })
        }
    }

    func testCatalogNamesExactlyTheDocumentedOptions() {
        let visible = OptionCatalog.options.filter { !$0.hidden }.map(\.name)
        XCTAssertEqual(Set(visible), Set(documentedOptions), "catalog vs usageText")
        XCTAssertEqual(visible.count, Set(visible).count, "an option is listed twice")
        XCTAssertEqual(OptionCatalog.options.filter(\.hidden).map(\.name), ["worker", "worker-udp", "worker-metrics"])
    }

    func testEveryCatalogOptionIsKnownToTheParserWithItsKind() {
        for spec in OptionCatalog.options where spec.name != "help" && spec.name != "version" {
            var arguments = ["--" + spec.name]
            if spec.kind != .flag { arguments.append("x") }
            do {
                _ = try CommandLineParser.parse(arguments, environment: { _ in nil })
            } catch {
                XCTAssertFalse(error.message.contains("unknown option"), "\(spec.name): \(error.message)")
                XCTAssertFalse(error.message.contains("takes no value") || error.message.contains("needs a value"),
                               "\(spec.name) kind: \(error.message)")
            }
        }
    }

    func testEnvironmentNames() {
        XCTAssertEqual(OptionCatalog.spec(named: "max-body")?.environmentName, "PEREGRINE_MAX_BODY")
        XCTAssertEqual(OptionCatalog.spec(named: "http2-only")?.environmentName, "PEREGRINE_HTTP2_ONLY")
    }

    func testCommandLineOnlyOptions() {
        for name in ["help", "version", "print-config", "worker", "worker-udp"] {
            XCTAssertEqual(OptionCatalog.spec(named: name)?.sources, .commandLineOnly, name)
        }
        XCTAssertEqual(OptionCatalog.spec(named: "config")?.sources, .environment)
    }

    func testSuggestions() {
        XCTAssertEqual(OptionCatalog.suggestion(for: "max-bdy", allowing: .file), "max-body")
        XCTAssertNil(OptionCatalog.suggestion(for: "completely-unrelated", allowing: .file))
        XCTAssertNil(OptionCatalog.suggestion(for: "print-confi", allowing: .file))
    }
}
