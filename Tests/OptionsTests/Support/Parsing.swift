import XCTest

@testable import Options

/// The configuration `arguments` (plus an application) parse into, with no
/// environment.
func config(_ arguments: [String]) throws(UsageError) -> Config {
    switch try CommandLineParser.parse(arguments + ["app:app"], environment: { _ in nil }) {
    case .run(let config): return config
    case .printAndExit: XCTFail("printed instead of running"); return Config()
    }
}

/// The usage error `arguments` give, or nil when they parse.
func usageError(_ arguments: [String]) -> String? {
    do {
        _ = try config(arguments)
        return nil
    } catch {
        return error.message
    }
}
