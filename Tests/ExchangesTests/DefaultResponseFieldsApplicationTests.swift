import XCTest
import Core

@testable import Exchanges

/// The application wins: a default whose name the application also set is
/// not sent with that response (CONFIG.md, "Response headers").
final class DefaultResponseFieldsApplicationTests: XCTestCase {
    private func bytes(_ s: StaticString) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount)
    }

    func testTheApplicationsFieldsSuppressTheDefaultsOfTheirNames() {
        let defaults = DefaultResponseFields([(Array("x-frame-options".utf8), Array("DENY".utf8)),
                                              (Array("x-a".utf8), Array("1".utf8)),
                                              (Array("server".utf8), Array("p".utf8))])
        let application = [ResponseField(name: bytes("Content-Type"), value: bytes("text/plain")),
                           ResponseField(name: bytes("Server"), value: bytes("app")),
                           ResponseField(name: bytes("X-FRAME-OPTIONS"), value: bytes("SAMEORIGIN"))]
        let lines = application.withUnsafeBufferPointer { defaults.lines(for: $0) }
        XCTAssertEqual(lines.suppressed, 0b101)
        var names: [String] = []
        lines.forEach { name, _ in names.append(String(decoding: name, as: UTF8.self)) }
        XCTAssertEqual(names, ["x-a"])
        let none = [ResponseField]().withUnsafeBufferPointer { defaults.lines(for: $0) }
        XCTAssertEqual(none.suppressed, 0)
    }
}
