import XCTest

@testable import HTTP1

/// A field line over static bytes, for the writers' tests.
struct StaticField: H1FieldBytes {
    let name: UnsafeRawBufferPointer
    let value: UnsafeRawBufferPointer

    init(_ name: StaticString, _ value: StaticString) {
        self.name = UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        self.value = UnsafeRawBufferPointer(start: value.utf8Start, count: value.utf8CodeUnitCount)
    }
}

/// Runs `body` with `fields` as the buffer the writers take.
func withFields<R>(_ fields: [StaticField], _ body: (UnsafeBufferPointer<StaticField>) -> R) -> R {
    fields.withUnsafeBufferPointer(body)
}

func staticBytes(_ s: StaticString) -> UnsafeRawBufferPointer {
    UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount)
}

/// Writes with `write` into a buffer of `length` bytes plus a margin
/// pre-filled with a marker byte; checks that exactly `length` bytes were
/// written and nothing past them changed, and returns them as text.
func writtenText(length: Int, file: StaticString = #filePath, line: UInt = #line,
                 _ write: (UnsafeMutableRawPointer) -> Int) -> String {
    var buffer = [UInt8](repeating: 0xEE, count: length + 16)
    let n = buffer.withUnsafeMutableBytes { write($0.baseAddress!) }
    XCTAssertEqual(n, length, "wrote other than its declared length", file: file, line: line)
    XCTAssertTrue(buffer[min(n, buffer.count)...].allSatisfy { $0 == 0xEE }, "wrote past its count", file: file, line: line)
    return String(decoding: buffer[..<min(n, buffer.count)], as: UTF8.self)
}
