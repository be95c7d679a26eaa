// TLS operations (issue 18 item 5) at the context level: encrypted keys
// (PKCS#8 and traditional PEM) for the TCP and QUIC contexts, the lowest
// version, and OCSP responses loaded, checked and stapled (RFC 6066 §8; in
// TLS 1.3 inside the leaf's CertificateEntry, RFC 8446 §4.4.2.1).
//
// Fixtures (Fixtures/): a-pkcs8-encrypted.key and a-traditional-encrypted.key
// are a.key under "fixture-password" (`openssl pkcs8 -topk8 -v2 aes-256-cbc`,
// `openssl ec -aes256`); a-ocsp.der and b-ocsp.der are "good" responses for
// the self-signed a.pem and b.pem, each signed by its own key (`openssl ocsp
// -index ... -rsigner`, next update a century on); a-twice.pem is a.pem
// followed by itself, a chain file that holds the issuer of its leaf.

import XCTest
import Core
#if canImport(Glibc)
import Glibc
#endif
import QUIC
@testable import TLS

final class TLSOperationsTests: XCTestCase {
    static let password = Array("fixture-password".utf8)

    func message(_ body: () throws -> Void) -> String {
        do {
            try body()
            return ""
        } catch {
            return (error as? TLSConfigurationError)?.message ?? "\(error)"
        }
    }

    func encryptedPair(_ form: String) -> TLSCertificatePair {
        TLSCertificatePair(certificate: Fixture.path("a.pem"), key: Fixture.path("a-\(form)-encrypted.key"))
    }

    // MARK: - Encrypted keys

    func testEncryptedKeysLoadWithTheirPassword() throws {
        for form in ["pkcs8", "traditional"] {
            _ = try TLSContext(pairs: [encryptedPair(form)], alpn: ["http/1.1"], keyPassword: Self.password)
            _ = try QUICTLSContext(pairs: [encryptedPair(form)], keyPassword: Self.password)
        }
    }

    func testOnePasswordServesEveryEncryptedKeyAndPlainKeysIgnoreIt() throws {
        let pairs = [encryptedPair("pkcs8"), Fixture.pair("b"), encryptedPair("traditional")]
        _ = try TLSContext(pairs: pairs, alpn: ["http/1.1"], keyPassword: Self.password)
        _ = try TLSContext(pairs: [Fixture.pair("a")], alpn: ["http/1.1"], keyPassword: Self.password)
    }

    func testWrongPasswordIsNamed() {
        for form in ["pkcs8", "traditional"] {
            let key = Fixture.path("a-\(form)-encrypted.key")
            let tcp = message { _ = try TLSContext(pairs: [encryptedPair(form)], alpn: [], keyPassword: Array("nope".utf8)) }
            XCTAssertEqual(tcp, "cannot decrypt the private key in \(key): wrong password")
            let quic = message { _ = try QUICTLSContext(pairs: [encryptedPair(form)], keyPassword: Array("nope".utf8)) }
            XCTAssertEqual(quic, "cannot decrypt the private key in \(key): wrong password")
        }
    }

    /// Without a password OpenSSL would prompt on the terminal; here it fails.
    func testEncryptedKeyWithoutAPasswordIsRefused() {
        for form in ["pkcs8", "traditional"] {
            let key = Fixture.path("a-\(form)-encrypted.key")
            XCTAssertEqual(message { _ = try TLSContext(pairs: [encryptedPair(form)], alpn: []) },
                           "the private key in \(key) is encrypted: give its password with --tls-key-password-file")
        }
    }

    func testPasswordLongerThanOpenSSLsBufferIsAWrongOne() {
        let long = [UInt8](repeating: UInt8(ascii: "x"), count: 5000)
        XCTAssertTrue(message { _ = try TLSContext(pairs: [encryptedPair("pkcs8")], alpn: [], keyPassword: long) }
            .hasSuffix("wrong password"))
    }

    // MARK: - Minimum version

    func testBothMinimumVersionsMakeAContext() throws {
        _ = try TLSContext(pairs: [Fixture.pair("a")], alpn: ["http/1.1"], minimumVersion: .tls12)
        _ = try TLSContext(pairs: [Fixture.pair("a")], alpn: ["http/1.1"], minimumVersion: .tls13)
    }

    // MARK: - OCSP responses

    func ocspPair(_ certificate: String, _ key: String, _ response: String) -> TLSCertificatePair {
        TLSCertificatePair(certificate: Fixture.path(certificate), key: Fixture.path(key), ocspResponse: response)
    }

    func testGoodResponsesLoad() throws {
        let context = try TLSContext(pairs: [ocspPair("a.pem", "a.key", Fixture.path("a-ocsp.der")),
                                             ocspPair("b.pem", "b.key", Fixture.path("b-ocsp.der"))], alpn: [])
        XCTAssertTrue(context.warnings.isEmpty)
        // The chain holds the issuer: the response is checked to be about a.pem.
        _ = try TLSContext(pairs: [ocspPair("a-twice.pem", "a.key", Fixture.path("a-ocsp.der"))], alpn: [])
    }

    func testResponseAboutAnotherCertificateIsRefused() {
        let path = Fixture.path("b-ocsp.der")
        XCTAssertEqual(message { _ = try TLSContext(pairs: [ocspPair("a-twice.pem", "a.key", path)], alpn: []) },
                       "the OCSP response in \(path) is not about the certificate it is paired with")
        XCTAssertEqual(message { _ = try QUICTLSContext(pairs: [ocspPair("a-twice.pem", "a.key", path)]) },
                       "the OCSP response in \(path) is not about the certificate it is paired with")
    }

    func testFilesThatAreNoResponseAreRefused() throws {
        let directory = "/tmp"
        let cases: [(String, [UInt8], String)] = [
            ("empty.der", [], "is empty"),
            ("pem.der", Array("-----BEGIN CERTIFICATE-----\n".utf8), "is not a DER OCSP response"),
            // Trailing bytes after a whole response.
            ("trailing.der", try readBytes(Fixture.path("a-ocsp.der")) + [0], "is not a DER OCSP response"),
            // Cut one byte short.
            ("short.der", Array(try readBytes(Fixture.path("a-ocsp.der")).dropLast()), "is not a DER OCSP response"),
            // OCSPResponse { responseStatus tryLater (3) } (RFC 6960 §4.2.1).
            ("later.der", [0x30, 0x03, 0x0A, 0x01, 0x03], "is not a successful one (trylater)"),
            ("big.der", [UInt8](repeating: 0x30, count: 64 * 1024 + 1), "is larger than 64 KiB"),
        ]
        for (name, bytes, expected) in cases {
            let path = directory + "/peregrine-ocsp-test-" + name
            try writeBytes(bytes, to: path)
            let text = message { _ = try TLSContext(pairs: [ocspPair("a.pem", "a.key", path)], alpn: []) }
            XCTAssertTrue(text.contains(path) && text.contains(expected), "\(name): \(text)")
        }
        let missing = message { _ = try TLSContext(pairs: [ocspPair("a.pem", "a.key", "/nonexistent/r.der")], alpn: []) }
        XCTAssertTrue(missing.hasPrefix("cannot read the OCSP response file /nonexistent/r.der"), missing)
    }

    /// QUIC staples the pair's response when the client asks: in the
    /// leaf's CertificateEntry, byte for byte the file's.
    func testQUICStaplesTheResponseWhenAsked() throws {
        let response = try readBytes(Fixture.path("b-ocsp.der"))
        let server = try QUICTLSContext(pairs: [Fixture.pair("a"), ocspPair("b.pem", "b.key", Fixture.path("b-ocsp.der"))])
        let asking = try QUICTLSClientContext(requestOCSPStatus: true)
        for cut in [Cut.whole, .everyByte] {
            let pipe = try HandshakePipe(server, asking, serverName: "b.example")
            XCTAssertEqual(pipe.run(cut: cut), .completed)
            XCTAssertEqual(pipe.client.stapledOCSPResponse, response)
        }
        // Not for the pair without one, nor for a client that did not ask.
        let other = try HandshakePipe(server, asking, serverName: "a.example")
        XCTAssertEqual(other.run(), .completed)
        XCTAssertNil(other.client.stapledOCSPResponse)
        let silent = try HandshakePipe(server, try QUICTLSClientContext(), serverName: "b.example")
        XCTAssertEqual(silent.run(), .completed)
        XCTAssertNil(silent.client.stapledOCSPResponse)
    }
}

func readBytes(_ path: String) throws -> [UInt8] {
    guard let file = fopen(path, "rb") else { throw TLSConfigurationError(message: "cannot open \(path)") }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = fread(&buffer, 1, buffer.count, file)
        if n == 0 { break }
        bytes += buffer.prefix(n)
    }
    return bytes
}

func writeBytes(_ bytes: [UInt8], to path: String) throws {
    guard let file = fopen(path, "wb") else { throw TLSConfigurationError(message: "cannot create \(path)") }
    defer { fclose(file) }
    _ = bytes.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, file) }
}
