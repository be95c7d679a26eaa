import Core
import XCTest

@testable import WebSocket

/// Sec-WebSocket-Extensions (RFC 6455 §9.1), with the offers RFC 7692 §7
/// shows for permessage-deflate.
final class ExtensionListReaderTests: XCTestCase {
    func testPermessageDeflateOfferWithParameters() {
        XCTAssertEqual(read("permessage-deflate; client_max_window_bits; server_no_context_takeover"),
                       ["permessage-deflate(client_max_window_bits, server_no_context_takeover)"])
    }

    func testRFC7692Section7_2_3Examples() {
        // RFC 7692 §7.2.3.x: offers with values, and a fallback list.
        XCTAssertEqual(read("permessage-deflate; server_max_window_bits=10, permessage-deflate"),
                       ["permessage-deflate(server_max_window_bits=10)", "permessage-deflate()"])
        XCTAssertEqual(read("permessage-deflate; client_max_window_bits=\"10\""),
                       ["permessage-deflate(client_max_window_bits=10)"])
    }

    func testWhitespaceAroundSeparatorsAndEmptyElements() {
        XCTAssertEqual(read(" , x-a ;\tp = v ; q ,, x-b,"), ["x-a(p=v, q)", "x-b()"])
    }

    func testMalformedListsAre400() {
        for bad in ["", ";", "a;", "a; =1", "a; p=", "a; p=\"\"", "a; p=\"x y\"", "a; p=\"1\\0\"",
                    "a; p=\"1", "a b", "a; p==1", "a; p=1 2", "é"] {
            XCTAssertEqual(read(bad), bad.isEmpty ? [] : nil, bad)
        }
    }

    private func read(_ text: String) -> [String]? {
        let value = Array(text.utf8)
        func str(_ s: ByteSpan) -> String { String(decoding: value[s.start..<s.end], as: UTF8.self) }
        return value.withUnsafeBytes { raw -> [String]? in
            var reader = ExtensionListReader(raw)
            var out: [String] = []
            do throws(HandshakeRejection) {
                while let offer = try reader.next() {
                    var params = offer.parameters(in: raw)
                    var rendered: [String] = []
                    while let p = params.next() { rendered.append(str(p.name) + (p.value.map { "=" + str($0) } ?? "")) }
                    out.append(str(offer.name) + "(" + rendered.joined(separator: ", ") + ")")
                }
            } catch {
                XCTAssertEqual(error, .malformedExtensionList)
                return nil
            }
            return out
        }
    }
}
