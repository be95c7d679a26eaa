// Frame test helpers: marker-filled encode buffers and one-shot decoding.

import XCTest
import Core
@testable import HTTP2

let marker: UInt8 = 0xaa

/// Runs an encoder over a buffer of `size + 8` marker bytes; checks it wrote
/// exactly `size` bytes and nothing past them.
func encoded(size: Int, file: StaticString = #filePath, line: UInt = #line,
             _ body: (UnsafeMutableRawBufferPointer) -> Int) -> [UInt8] {
    var buf = [UInt8](repeating: marker, count: size + 8)
    let n = buf.withUnsafeMutableBytes { body($0) }
    XCTAssertEqual(n, size, "returned length vs size function", file: file, line: line)
    XCTAssertEqual(Array(buf[size...]), [UInt8](repeating: marker, count: 8), "wrote past the frame", file: file, line: line)
    return Array(buf[..<min(n, size)])
}

/// Decodes exactly one frame (no preface).
func decodeOne(_ wire: [UInt8], maxFrameSize: Int = 16_384) throws -> FrameParser.Event {
    var p = FrameParser(maxFrameSize: maxFrameSize, expectPreface: false)
    return try wire.withUnsafeBytes { try p.nextEvent(in: $0) }
}

func decodeFrame(_ wire: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws -> Frame? {
    guard case .frame(let f, let n) = try decodeOne(wire) else {
        XCTFail("not a frame", file: file, line: line)
        return nil
    }
    XCTAssertEqual(n, wire.count, "consumed", file: file, line: line)
    return f
}

func slice(_ wire: [UInt8], _ span: ByteSpan) -> [UInt8] { Array(wire[span.start ..< span.end]) }

func XCTAssertThrowsFrame(_ expected: FrameError, file: StaticString = #filePath, line: UInt = #line,
                          _ body: () throws -> Void) {
    do {
        try body()
        XCTFail("expected \(expected)", file: file, line: line)
    } catch {
        XCTAssertEqual(error as? FrameError, expected, file: file, line: line)
    }
}

/// A raw frame: header fields and payload bytes, for building malformed input.
func rawFrame(_ type: FrameType, flags: FrameFlags = [], stream: UInt32, _ payload: [UInt8]) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: 9)
    out.withUnsafeMutableBytes {
        FrameHeader(length: payload.count, type: type, flags: flags, streamID: stream).encode(into: $0.baseAddress!)
    }
    return out + payload
}
