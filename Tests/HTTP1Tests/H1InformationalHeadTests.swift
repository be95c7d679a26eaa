import XCTest

@testable import HTTP1

final class H1InformationalHeadTests: XCTestCase {
    private func written(_ status: Int, _ fields: [StaticField]) -> String {
        withFields(fields) { fields in
            let h = H1InformationalHead(status: status, fields: fields)
            return writtenText(length: h.length) { h.write(into: $0) }
        }
    }

    /// RFC 9110 §10.1.1: the interim response a client that sent
    /// "Expect: 100-continue" waits for.
    func testContinueIsTheStatusLineAndTheEmptyLine() {
        XCTAssertEqual(written(100, []), "HTTP/1.1 100 Continue\r\n\r\n")
    }

    /// RFC 8297: 103 Early Hints carries its fields, and no date, framing or
    /// connection field (it is not the final response).
    func testEarlyHintsCarriesItsFieldsOnly() {
        XCTAssertEqual(written(103, [StaticField("link", "</style.css>; rel=preload; as=style"), StaticField("link", "</a.js>")]),
                       "HTTP/1.1 103 Early Hints\r\nlink: </style.css>; rel=preload; as=style\r\nlink: </a.js>\r\n\r\n")
    }

    func testUnregisteredInformationalCodeKeepsTheSpace() {
        XCTAssertEqual(written(199, []), "HTTP/1.1 199 \r\n\r\n")
    }
}
