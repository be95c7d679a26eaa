import XCTest

@testable import WebSocket

/// RFC 6455 §4.2.1 opening-handshake validation and the status for each
/// broken rule (§4.2.2, §4.4).
final class UpgradeRequestTests: XCTestCase {
    /// The §1.3 example request's handshake fields.
    let example: [(String, String)] = [
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ("Sec-WebSocket-Version", "13"),
        ("Sec-WebSocket-Protocol", "chat, superchat"),
        ("Origin", "http://example.com"),
    ]

    func testRFCExampleIsAccepted() {
        let verdict = run(example)
        guard case .accept(let key) = verdict else { return XCTFail("\(verdict)") }
        XCTAssertEqual(key, Array("dGhlIHNhbXBsZSBub25jZQ==".utf8).withUnsafeBytes { SecWebSocketKey(fieldValue: $0) })
    }

    func testTokensMatchCaseInsensitivelyInsideLists() {
        let fields = replacing(example, ["Upgrade": "h2c, WebSocket", "Connection": "keep-alive,  UPGRADE "])
        guard case .accept = run(fields) else { return XCTFail() }
        // Field names too (RFC 9110 §5.1).
        let lower = example.map { ($0.0.lowercased(), $0.1) }
        guard case .accept = run(lower) else { return XCTFail() }
    }

    func testUpgradeFieldsSplitOverSeveralLinesAreCombined() {
        var fields = replacing(example, ["Connection": "keep-alive"])
        fields.append(("Connection", "upgrade"))
        guard case .accept = run(fields) else { return XCTFail() }
    }

    func testRequestWithoutWebSocketUpgradeIsPlainHTTP() {
        XCTAssertEqual(run(example.filter { $0.0 != "Upgrade" }), .notWebSocket)
        XCTAssertEqual(run(replacing(example, ["Upgrade": "h2c"])), .notWebSocket)
        XCTAssertEqual(run(replacing(example, ["Upgrade": "websocket/13"])), .notWebSocket)
    }

    func testHTTP10UpgradeIsIgnored() {
        // RFC 9110 §7.8: "A server MUST ignore an Upgrade header field that is
        // received in an HTTP/1.0 request."
        XCTAssertEqual(run(example, isHTTP11OrLater: false), .notWebSocket)
    }

    func testNonGETMethodIs400() {
        XCTAssertEqual(run(example, isGET: false), .reject(.methodNotGET))
        XCTAssertEqual(HandshakeRejection.methodNotGET.status, 400)
    }

    func testMissingConnectionUpgradeIs400() {
        XCTAssertEqual(run(example.filter { $0.0 != "Connection" }), .reject(.missingConnectionUpgrade))
        XCTAssertEqual(run(replacing(example, ["Connection": "keep-alive"])), .reject(.missingConnectionUpgrade))
    }

    func testMissingOrRepeatedVersionIs400() {
        XCTAssertEqual(run(example.filter { $0.0 != "Sec-WebSocket-Version" }), .reject(.missingVersion))
        XCTAssertEqual(run(example + [("Sec-WebSocket-Version", "13")]), .reject(.repeatedVersion))
    }

    func testOtherVersionsAre426WithTheVersionField() {
        for version in ["8", "12", "14", "013", "13.0", "", "thirteen"] {
            let verdict = run(replacing(example, ["Sec-WebSocket-Version": version]))
            XCTAssertEqual(verdict, .reject(.unsupportedVersion), version)
        }
        XCTAssertEqual(HandshakeRejection.unsupportedVersion.status, 426)
        XCTAssertTrue(HandshakeRejection.unsupportedVersion.requiresVersionField)
        XCTAssertFalse(HandshakeRejection.invalidKey.requiresVersionField)
    }

    func testVersionIsCheckedBeforeTheKey() {
        let fields = replacing(example, ["Sec-WebSocket-Version": "8", "Sec-WebSocket-Key": "nope"])
        XCTAssertEqual(run(fields), .reject(.unsupportedVersion))
    }

    func testMissingRepeatedOrInvalidKeyIs400() {
        XCTAssertEqual(run(example.filter { $0.0 != "Sec-WebSocket-Key" }), .reject(.missingKey))
        XCTAssertEqual(run(example + [("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")]), .reject(.repeatedKey))
        for bad in ["", "dGhlIHNhbXBsZSBub25jZQ", "dGhlIHNhbXBsZQ==", "AAAAAAAAAAAAAAAAAAAAAAAAAAAA"] {
            XCTAssertEqual(run(replacing(example, ["Sec-WebSocket-Key": bad])), .reject(.invalidKey), bad)
        }
    }

    func testFieldNamesAreRecognised() {
        for field in HandshakeField.allCases {
            let name: String
            switch field {
            case .upgrade: name = "UPGRADE"
            case .connection: name = "connection"
            case .secWebSocketKey: name = "Sec-WebSocket-Key"
            case .secWebSocketVersion: name = "sec-websocket-version"
            case .secWebSocketProtocol: name = "Sec-Websocket-Protocol"
            case .secWebSocketExtensions: name = "SEC-WEBSOCKET-EXTENSIONS"
            }
            XCTAssertEqual(Array(name.utf8).withUnsafeBytes { HandshakeField(name: $0) }, field)
        }
        for other in ["", "Origin", "Sec-WebSocket-Accept", "Upgrade-Insecure-Requests", "sec-websocket-keys"] {
            XCTAssertNil(Array(other.utf8).withUnsafeBytes { HandshakeField(name: $0) }, other)
        }
    }

    private func replacing(_ fields: [(String, String)], _ changes: [String: String]) -> [(String, String)] {
        fields.map { (name, value) in (name, changes[name] ?? value) }
    }

    private func run(_ fields: [(String, String)], isGET: Bool = true, isHTTP11OrLater: Bool = true) -> HandshakeVerdict {
        var request = UpgradeRequest()
        for (name, value) in fields {
            guard let field = Array(name.utf8).withUnsafeBytes({ HandshakeField(name: $0) }) else { continue }
            Array(value.utf8).withUnsafeBytes { request.receive(field, value: $0) }
        }
        return request.verdict(isGET: isGET, isHTTP11OrLater: isHTTP11OrLater)
    }
}
