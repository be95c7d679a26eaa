import XCTest

@testable import Options

/// Configuration from a TOML file, PEREGRINE_* variables and the command
/// line: precedence, types, origins in errors, and the arguments the
/// workers get (CONFIG.md "Configuration file and environment").
final class ConfigSourcesTests: XCTestCase {
    private func resolve(_ commandLine: [String], environment: [String: String] = [:],
                         files: [String: String] = [:]) throws(UsageError) -> ResolvedConfiguration {
        let outcome = try ConfigSources.resolve(commandLine: commandLine, environment: { environment[$0] },
                                                readFile: { path in
            files[path].map { .success(Array($0.utf8)) } ?? .failure(FileReadFailure("open: No such file or directory"))
        })
        guard case .resolved(let r) = outcome else {
            XCTFail("printed instead of resolving")
            throw UsageError(message: "printed")
        }
        return r
    }

    private func usageError(_ commandLine: [String], environment: [String: String] = [:],
                            files: [String: String] = [:]) -> String? {
        do {
            _ = try resolve(commandLine, environment: environment, files: files)
            return nil
        } catch {
            return error.message
        }
    }

    private func origin(_ r: ResolvedConfiguration, _ option: String) -> ConfigOrigin? {
        r.entries.first { $0.option == option }?.origin
    }

    // MARK: - Precedence: command line > PEREGRINE_* > file > WEB_CONCURRENCY/FORWARDED_ALLOW_IPS > default

    func testCommandLineBeatsEnvironmentBeatsFileBeatsDefault() throws {
        let files = ["p.toml": "port = 1111\nbacklog = 10\nmax-body = \"1k\"\nkeep-alive = 7\n"]
        let env = ["PEREGRINE_PORT": "2222", "PEREGRINE_BACKLOG": "20"]
        let r = try resolve(["--config", "p.toml", "--port", "3333", "app:app"], environment: env, files: files)
        XCTAssertEqual(r.config.port, 3333)
        XCTAssertEqual(r.config.backlog, 20)
        XCTAssertEqual(r.config.maxBody, 1024)
        XCTAssertEqual(r.config.keepAliveMilliseconds, 7)
        XCTAssertEqual(r.config.requestTimeoutMilliseconds, 30000)
        XCTAssertEqual(origin(r, "port"), .commandLine)
        XCTAssertEqual(origin(r, "backlog"), .environment("PEREGRINE_BACKLOG"))
        XCTAssertEqual(origin(r, "max-body"), .file(path: "p.toml", line: 3, key: "max-body"))
        XCTAssertNil(origin(r, "request-timeout"))
    }

    func testRepeatableOptionFromTheHighestSourceReplacesLowerOnesWholesale() throws {
        let files = ["p.toml": "python-path = [\"f1\", \"f2\"]\nreload-dir = \"one\"\n"]
        let r = try resolve(["--config", "p.toml", "--python-path", "c1", "app:app"],
                            environment: ["PEREGRINE_RELOAD_DIR": "[\"e1\", \"e2,with comma\"]"], files: files)
        XCTAssertEqual(r.config.pythonPaths, ["c1"])
        XCTAssertEqual(r.config.reloadDirs, ["e1", "e2,with comma"])
        let fileOnly = try resolve(["--config", "p.toml", "app:app"], files: files)
        XCTAssertEqual(fileOnly.config.pythonPaths, ["f1", "f2"])
        XCTAssertEqual(fileOnly.config.reloadDirs, ["one"])
    }

    func testAFalseFlagInAHigherSourceTurnsALowerOneOff() throws {
        let files = ["p.toml": "access-log = true\nno-uvloop = true\n"]
        let r = try resolve(["--config", "p.toml", "app:app"], environment: ["PEREGRINE_ACCESS_LOG": "off"], files: files)
        XCTAssertFalse(r.config.accessLog)
        XCTAssertFalse(r.config.uvloop)
        XCTAssertFalse(r.arguments.contains("--access-log"))
    }

    func testEnvironmentFlagSpellings() throws {
        for yes in ["1", "true", "YES", "On"] {
            XCTAssertTrue(try resolve(["app:app"], environment: ["PEREGRINE_ACCESS_LOG": yes]).config.accessLog, yes)
        }
        for no in ["0", "false", "No", "OFF"] {
            XCTAssertFalse(try resolve(["app:app"], environment: ["PEREGRINE_ACCESS_LOG": no]).config.accessLog, no)
        }
        XCTAssertEqual(usageError(["app:app"], environment: ["PEREGRINE_ACCESS_LOG": "maybe"]),
                       "environment variable PEREGRINE_ACCESS_LOG must be 1, true, yes, on, 0, false, no or off, got 'maybe'")
    }

    func testAnEmptyVariableCountsAsUnset() throws {
        XCTAssertEqual(try resolve(["app:app"], environment: ["PEREGRINE_PORT": ""]).config.port, 8000)
    }

    func testWebConcurrencySetsWorkersBelowTheFileAndPeregrineWorkers() throws {
        XCTAssertEqual(try resolve(["app:app"], environment: ["WEB_CONCURRENCY": "3"]).config.workers, 3)
        let files = ["p.toml": "workers = 2\n"]
        XCTAssertEqual(try resolve(["--config", "p.toml", "app:app"], environment: ["WEB_CONCURRENCY": "3"],
                                   files: files).config.workers, 2)
        XCTAssertEqual(try resolve(["app:app"], environment: ["WEB_CONCURRENCY": "3", "PEREGRINE_WORKERS": "4"]).config.workers, 4)
        XCTAssertEqual(try resolve(["--workers", "5", "app:app"], environment: ["WEB_CONCURRENCY": "3"]).config.workers, 5)
        XCTAssertEqual(usageError(["app:app"], environment: ["WEB_CONCURRENCY": "lots"]),
                       "environment variable WEB_CONCURRENCY: --workers must be an integer in 0...1024, got 'lots'")
    }

    func testForwardedAllowIPsKeepsItsPlaceBelowPeregrineForwardedAllowIPs() throws {
        let r = try resolve(["app:app"], environment: ["FORWARDED_ALLOW_IPS": "10.0.0.1",
                                                       "PEREGRINE_FORWARDED_ALLOW_IPS": "10.0.0.2"])
        XCTAssertTrue(r.arguments.contains("10.0.0.2"))
        XCTAssertEqual(origin(r, "forwarded-allow-ips"), .environment("PEREGRINE_FORWARDED_ALLOW_IPS"))
        let legacy = try resolve(["app:app"], environment: ["FORWARDED_ALLOW_IPS": "10.0.0.1"])
        XCTAssertEqual(origin(legacy, "forwarded-allow-ips"), .environment("FORWARDED_ALLOW_IPS"))
        XCTAssertEqual(usageError(["app:app"], environment: ["FORWARDED_ALLOW_IPS": "bogus"])?.hasPrefix("FORWARDED_ALLOW_IPS: 'bogus'"), true)
    }

    func testConfigFileFromPeregrineConfig() throws {
        let r = try resolve(["app:app"], environment: ["PEREGRINE_CONFIG": "p.toml"], files: ["p.toml": "port = 9\n"])
        XCTAssertEqual(r.config.port, 9)
        XCTAssertEqual(r.configFile, "p.toml")
    }

    func testApplicationFromFileOrEnvironmentUnlessGivenOnTheCommandLine() throws {
        let files = ["p.toml": "app = \"file:app\"\n"]
        XCTAssertEqual(try resolve(["--config", "p.toml"], files: files).config.app, "file:app")
        XCTAssertEqual(try resolve(["--config", "p.toml"], environment: ["PEREGRINE_APP": "env:app"], files: files).config.app, "env:app")
        XCTAssertEqual(try resolve(["--config", "p.toml", "cli:app"], environment: ["PEREGRINE_APP": "env:app"], files: files).config.app, "cli:app")
        XCTAssertEqual(usageError(["--config", "p.toml"], files: ["p.toml": "app = \"noattr\"\n"]),
                       "application must be given as MODULE:ATTR, got 'noattr' (application from p.toml:1 (key app))")
    }

    // MARK: - What the workers get

    func testWorkersGetTheResolvedArgumentsWithoutTheSources() throws {
        let files = ["p.toml": "workers = 2\naccess-log = true\ntls-cert = [\"a.pem\"]\ntls-key = [\"a.key\"]\nenv-file = \"e.env\"\n",
                     "e.env": "X=1\n"]
        let r = try resolve(["--config", "p.toml", "--port=0", "app:app"], environment: ["PEREGRINE_HOST": "::1"], files: files)
        XCTAssertEqual(r.arguments, ["--host", "::1", "--port", "0", "--access-log", "--workers", "2",
                                     "--tls-cert", "a.pem", "--tls-key", "a.key", "app:app"])
        XCTAssertEqual(r.environmentFile.map(\.name), ["X"])
        guard case .run(let again) = try CommandLineParser.parse(r.arguments, environment: { _ in nil }) else { return XCTFail() }
        XCTAssertEqual(again.workers, 2)
        XCTAssertEqual(again.tlsCertificates, ["a.pem"])
    }

    func testHelpAndVersionStillPrint() throws {
        guard case .printAndExit(let text, 0) = try ConfigSources.resolve(
            commandLine: ["--version"], environment: { _ in nil }, readFile: { _ in .failure(FileReadFailure("unused")) }) else { return XCTFail() }
        XCTAssertTrue(text.hasPrefix("peregrine "))
    }

    // MARK: - Errors name their origin

    func testBadValuesNameTheirOrigin() {
        XCTAssertEqual(usageError(["--config", "p.toml", "app:app"], files: ["p.toml": "\n[peregrine]\nmax_body = \"1x\"\n"]),
                       "p.toml:3 (key max_body): --max-body must be a size in bytes between 0 and 1125899906842624 (suffix k, m or g allowed), got '1x'")
        XCTAssertEqual(usageError(["app:app"], environment: ["PEREGRINE_PORT": "70000"]),
                       "environment variable PEREGRINE_PORT: --port must be an integer in 0...65535, got '70000'")
        XCTAssertEqual(usageError(["--port", "70000", "app:app"]), "--port must be an integer in 0...65535, got '70000'")
    }

    func testCrossOptionChecksNameTheOriginsOfTheOptions() {
        XCTAssertEqual(usageError(["--config", "p.toml", "app:app"], files: ["p.toml": "quic-port = 4433\n"]),
                       "--quic-port needs --http3 (--quic-port from p.toml:1 (key quic-port))")
    }

    func testFileKeysAreCheckedAgainstTheCatalog() {
        let f = { (doc: String) in self.usageError(["--config", "p.toml", "app:app"], files: ["p.toml": doc]) }
        XCTAssertEqual(f("max-bdy = 1\n"), "p.toml:1: unknown key 'max-bdy' (did you mean 'max-body'?)")
        XCTAssertEqual(f("x = 1\n"), "p.toml:1: unknown key 'x'")
        XCTAssertEqual(f("worker = \"1:2\"\n"), "p.toml:1: unknown key 'worker' (did you mean 'workers'?)")
        XCTAssertEqual(f("help = true\n"), "p.toml:1: --help cannot be set in a configuration file")
        XCTAssertEqual(f("config = \"other.toml\"\n"), "p.toml:1: --config cannot be set in a configuration file")
        XCTAssertEqual(f("max-body = \"1m\"\nmax_body = \"2m\"\n"), "p.toml:2: 'max_body' and 'max-body' set the same option")
    }

    func testFileTypesAreChecked() {
        let f = { (doc: String) in self.usageError(["--config", "p.toml", "app:app"], files: ["p.toml": doc]) }
        XCTAssertEqual(f("access-log = 1\n"), "p.toml:1: 'access-log' is a flag: it takes true or false")
        XCTAssertEqual(f("port = true\n"), "p.toml:1: 'port' takes a string or an integer")
        XCTAssertEqual(f("port = [1]\n"), "p.toml:1: 'port' takes a string or an integer")
        XCTAssertEqual(f("tls-cert = [true]\n"), "p.toml:1: 'tls-cert' takes an array of strings or integers")
        XCTAssertEqual(f("app = 1\n"), "p.toml:1: 'app' takes a string (MODULE:ATTR)")
        XCTAssertEqual(f("port = 1.5\n"), "p.toml:1: floats are not supported ('1.5')")
    }

    func testEnvironmentArraysAreCheckedToo() {
        XCTAssertEqual(usageError(["app:app"], environment: ["PEREGRINE_PYTHON_PATH": "[\"a\""]),
                       "environment variable PEREGRINE_PYTHON_PATH: unterminated array (a list is a TOML array: [\"a\", \"b\"])")
        XCTAssertEqual(usageError(["app:app"], environment: ["PEREGRINE_PYTHON_PATH": "[true]"]),
                       "environment variable PEREGRINE_PYTHON_PATH: 'python-path' takes an array of strings or integers")
    }

    func testMissingOrUnreadableFiles() {
        XCTAssertEqual(usageError(["--config", "nope.toml", "app:app"]), "--config: cannot read nope.toml: open: No such file or directory (command line)")
        XCTAssertEqual(usageError(["app:app"], environment: ["PEREGRINE_CONFIG": "nope.toml"]),
                       "--config: cannot read nope.toml: open: No such file or directory (environment variable PEREGRINE_CONFIG)")
        XCTAssertEqual(usageError(["--env-file", "e.env", "app:app"]), "--env-file: cannot read e.env: open: No such file or directory (command line)")
        XCTAssertEqual(usageError(["--env-file", "e.env", "app:app"], files: ["e.env": "A=1\nB C\n"]),
                       "--env-file e.env:2: expected '=' after B")
    }

    func testCommandLineMistakesStayTheParsersMessages() {
        XCTAssertEqual(usageError(["--nope", "app:app"]), "unknown option '--nope' (see --help)")
        XCTAssertEqual(usageError(["--port"]), "option --port needs a value")
        XCTAssertEqual(usageError(["--factory=1", "app:app"]), "option --factory takes no value")
        XCTAssertEqual(usageError(["a:b", "c:d"]), "expected one MODULE:ATTR, got 2: a:b c:d")
        XCTAssertEqual(usageError([]), "no application given: peregrine [options] MODULE:ATTR (see --help)")
    }

    // MARK: - --print-config

    func testPrintConfigRendersATOMLDocumentOfWhatWasSet() throws {
        let r = try resolve(["--print-config", "--config", "p.toml", "--host", "h\"q", "app:app"],
                            environment: ["PEREGRINE_WORKERS": "3"], files: ["p.toml": "python-path = [\"a\", \"b\"]\n"])
        XCTAssertTrue(r.printConfig)
        let text = PrintConfig.render(r)
        XCTAssertTrue(text.contains("\nhost = \"h\\\"q\""), text)
        XCTAssertTrue(text.contains("# command line\n"))
        XCTAssertTrue(text.contains("\nworkers = 3 "))
        XCTAssertTrue(text.contains("# environment variable PEREGRINE_WORKERS\n"))
        XCTAssertTrue(text.contains("\npython-path = [\"a\", \"b\"] "))
        XCTAssertTrue(text.contains("# p.toml:1 (key python-path)\n"))
        XCTAssertTrue(text.contains("\n# backlog = 2048 "))
        // Read back as a file, it sets exactly what was set.
        let back = try TOMLReader.read(Array(text.utf8)).map(\.key)
        XCTAssertEqual(back, ["app", "host", "python-path", "workers"])
    }

    func testPrintConfigPointsOutAMisspelledVariable() throws {
        let r = try resolve(["app:app"])
        let text = PrintConfig.render(r, environmentNames: ["PEREGRINE_MAXBODY", "PEREGRINE_PORT", "PEREGRINE_BIN",
                                                            "PEREGRINE_PYTHON_EXECUTABLE", "PEREGRINE_TEST_STATE", "HOME"])
        XCTAssertTrue(text.hasSuffix("\n# ignored: PEREGRINE_MAXBODY names no option (did you mean PEREGRINE_MAX_BODY?)\n"), text)
        XCTAssertEqual(text.components(separatedBy: "# ignored").count, 2, text)
    }

    func testTOMLStringsEscapeControlCharacters() {
        XCTAssertEqual(PrintConfig.tomlString("a\u{01}\n\\"), "\"a\\u0001\\n\\\\\"")
        XCTAssertEqual(PrintConfig.tomlScalar("0660"), "\"0660\"")
        XCTAssertEqual(PrintConfig.tomlScalar("-12"), "-12")
    }
}
