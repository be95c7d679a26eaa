import XCTest

@testable import WebSocket

/// RFC 8441 §4/§5: the WebSocket part of an extended CONNECT, and the status
/// for each broken rule.
final class ExtendedConnectRequestTests: XCTestCase {
    /// RFC 8441 §5.1's example request, as regular fields (the pseudo-header
    /// fields are the HTTP/2 core's).
    let example: [(String, String)] = [
        ("sec-websocket-protocol", "chat, superchat"),
        ("sec-websocket-extensions", "permessage-deflate"),
        ("sec-websocket-version", "13"),
        ("origin", "http://www.example.com"),
    ]

    func testRFCExampleIsAccepted() {
        XCTAssertEqual(run(example), .accept)
    }

    func testProtocolTokenIsCaseInsensitiveAndOnlyWebSocket() {
        XCTAssertEqual(run(example, protocolName: "WebSocket"), .accept)
        for other in ["connect-udp", "websockets", "webtransport", "", "h2c"] {
            XCTAssertEqual(run(example, protocolName: other), .reject(.unsupportedProtocol), other)
        }
        XCTAssertEqual(HandshakeRejection.unsupportedProtocol.status, 501)
        XCTAssertFalse(HandshakeRejection.unsupportedProtocol.requiresVersionField)
    }

    func testVersionRulesAnswer400NamingVersion13() {
        XCTAssertEqual(run(example.filter { $0.0 != "sec-websocket-version" }), .reject(.missingVersionOverHTTP2))
        XCTAssertEqual(run(example + [("sec-websocket-version", "13")]), .reject(.repeatedVersionOverHTTP2))
        for bad in ["8", "12", "14", "", "13, 8", "1 3"] {
            let fields = example.map { $0.0 == "sec-websocket-version" ? ($0.0, bad) : $0 }
            XCTAssertEqual(run(fields), .reject(.unsupportedVersionOverHTTP2), bad)
        }
        XCTAssertEqual(run(example.map { $0.0 == "sec-websocket-version" ? ($0.0, " 13\t") : $0 }), .accept)
        for r in [HandshakeRejection.missingVersionOverHTTP2, .repeatedVersionOverHTTP2, .unsupportedVersionOverHTTP2] {
            // No 426 over HTTP/2: it would need an Upgrade field (RFC 9110 §15.5.22).
            XCTAssertEqual(r.status, 400)
            XCTAssertTrue(r.requiresVersionField)
        }
        // Same status and text as the HTTP/1.1 rule, still a different verdict.
        XCTAssertNotEqual(HandshakeRejection.missingVersionOverHTTP2, .missingVersion)
    }

    func testKeyIsNotNeededAndIgnored() {
        // RFC 8441 §5: Sec-WebSocket-Key/-Accept are not used.
        XCTAssertEqual(run(example + [("sec-websocket-key", "not base64")]), .accept)
        XCTAssertEqual(run(example + [("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")]), .accept)
    }

    private func run(_ fields: [(String, String)], protocolName: String = "websocket") -> ExtendedConnectVerdict {
        var request = ExtendedConnectRequest()
        for (name, value) in fields {
            let recognised = Array(name.utf8).withUnsafeBytes { HandshakeField(name: $0) }
            guard let field = recognised else { continue }
            Array(value.utf8).withUnsafeBytes { request.receive(field, value: $0) }
        }
        return Array(protocolName.utf8).withUnsafeBytes { request.verdict(protocolName: $0) }
    }
}
