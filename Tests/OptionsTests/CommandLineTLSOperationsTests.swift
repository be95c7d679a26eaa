import XCTest

@testable import Core
@testable import Options

/// The TLS operations options (CONFIG.md, "TLS"): key passwords, the
/// lowest TLS version, OCSP responses, and the hidden `--worker
/// check-reload` the supervisor runs on SIGHUP.
final class CommandLineTLSOperationsTests: XCTestCase {
    private let tls = ["--tls-cert", "c.pem", "--tls-key", "k.pem"]

    func testDefaultsAreTheDocumentedOnes() throws {
        let c = try config(tls)
        XCTAssertNil(c.tlsKeyPassword)
        XCTAssertNil(c.tlsKeyPasswordFile)
        XCTAssertEqual(c.tlsMinimumVersion, .tls12)
        XCTAssertEqual(c.tlsOCSPResponses, [])
        XCTAssertFalse(c.checkBeforeRestart)
    }

    func testKeyPasswordFromTheCommandLineOrAFile() throws {
        XCTAssertEqual(try config(tls + ["--tls-key-password", "s3cret word"]).tlsKeyPassword, "s3cret word")
        XCTAssertEqual(try config(tls + ["--tls-key-password-file", "/run/pw"]).tlsKeyPasswordFile, "/run/pw")
        XCTAssertEqual(try config(tls + ["--tls-key-password=x"]).tlsKeyPassword, "x")
    }

    func testKeyPasswordMistakesAreUsageErrors() {
        XCTAssertEqual(usageError(tls + ["--tls-key-password", ""]), "--tls-key-password must not be empty")
        XCTAssertEqual(usageError(tls + ["--tls-key-password-file", ""]), "--tls-key-password-file needs a path")
        XCTAssertEqual(usageError(tls + ["--tls-key-password", "a", "--tls-key-password-file", "/p"]),
                       "--tls-key-password and --tls-key-password-file are alternatives: give one")
        XCTAssertEqual(usageError(["--tls-key-password", "a"]), "--tls-key-password needs --tls-cert and --tls-key")
        XCTAssertEqual(usageError(["--tls-key-password-file", "/p"]),
                       "--tls-key-password-file needs --tls-cert and --tls-key")
    }

    func testMinimumVersionIsOneTwoOrOneThree() throws {
        XCTAssertEqual(try config(tls + ["--tls-min-version", "1.2"]).tlsMinimumVersion, .tls12)
        XCTAssertEqual(try config(tls + ["--tls-min-version", "1.3"]).tlsMinimumVersion, .tls13)
        XCTAssertEqual(TLSMinimumVersion.tls12.wireValue, 0x0303)  // RFC 8446 §4.2.1
        XCTAssertEqual(TLSMinimumVersion.tls13.wireValue, 0x0304)
        for bad in ["1.1", "1.0", "1", "tls1.3", "1.3 ", ""] {
            XCTAssertEqual(usageError(tls + ["--tls-min-version", bad]),
                           "--tls-min-version must be 1.2 or 1.3, got '\(bad)'")
        }
        XCTAssertEqual(usageError(["--tls-min-version", "1.3"]), "--tls-min-version needs --tls-cert and --tls-key")
    }

    func testCiphersWithOnlyTLS13AreRefused() {
        XCTAssertEqual(usageError(tls + ["--tls-min-version", "1.3", "--tls-ciphers", "ECDHE-ECDSA-AES128-GCM-SHA256"]),
                       "--tls-ciphers chooses TLS 1.2 ciphers: it has no effect with --tls-min-version 1.3")
        XCTAssertNil(usageError(tls + ["--tls-min-version", "1.2", "--tls-ciphers", "ECDHE-ECDSA-AES128-GCM-SHA256"]))
    }

    func testOCSPResponsesPairWithCertificatesInOrder() throws {
        let two = tls + ["--tls-cert", "d.pem", "--tls-key", "e.pem"]
        XCTAssertEqual(try config(two + ["--tls-ocsp", "c.der"]).tlsOCSPResponses, ["c.der"])
        XCTAssertEqual(try config(two + ["--tls-ocsp", "", "--tls-ocsp", "d.der"]).tlsOCSPResponses, ["", "d.der"])
        XCTAssertEqual(usageError(tls + ["--tls-ocsp", "a.der", "--tls-ocsp", "b.der"]),
                       "--tls-ocsp pairs with --tls-cert in order: 2 responses for 1 certificate(s)")
        XCTAssertEqual(usageError(["--tls-ocsp", "a.der"]), "--tls-ocsp needs --tls-cert and --tls-key")
    }

    func testCheckReloadIsTheHiddenSIGHUPCheck() throws {
        let reload = try config(tls + ["--worker", "check-reload"])
        XCTAssertTrue(reload.checkOnly)
        XCTAssertTrue(reload.checkBeforeRestart)
        let start = try config(tls + ["--worker", "check"])
        XCTAssertTrue(start.checkOnly)
        XCTAssertFalse(start.checkBeforeRestart)
    }

    func testUsageTextListsTheOptions() {
        for option in ["--tls-key-password-file PATH", "--tls-key-password TEXT", "--tls-min-version V", "--tls-ocsp PATH"] {
            XCTAssertTrue(usageText.contains(option), option)
        }
    }
}
