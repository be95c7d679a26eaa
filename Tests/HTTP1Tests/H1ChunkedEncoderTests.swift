import XCTest

@testable import HTTP1

final class H1ChunkedEncoderTests: XCTestCase {
    /// Writes with `write` into a buffer pre-filled with a marker byte and
    /// returns exactly the bytes written, checking nothing past them changed.
    private func written(_ write: (UnsafeMutableRawPointer) -> Int, file: StaticString = #filePath, line: UInt = #line) -> String {
        var buffer = [UInt8](repeating: 0xEE, count: 32)
        let n = buffer.withUnsafeMutableBytes { write($0.baseAddress!) }
        XCTAssertTrue(buffer[n...].allSatisfy { $0 == 0xEE }, "wrote past its count", file: file, line: line)
        return String(decoding: buffer[..<n], as: UTF8.self)
    }

    func testSizeLineIsLowercaseHexWithCRLF() {
        let cases: [(Int, String)] = [
            (1, "1\r\n"), (9, "9\r\n"), (10, "a\r\n"), (15, "f\r\n"), (16, "10\r\n"), (0x1a2, "1a2\r\n"),
            (4096, "1000\r\n"), (0xdeadbeef, "deadbeef\r\n"), (Int.max, "7fffffffffffffff\r\n"),
        ]
        for (n, expected) in cases {
            XCTAssertEqual(written { H1ChunkedEncoder.writeSizeLine(n, into: $0) }, expected, "\(n)")
            XCTAssertEqual(H1ChunkedEncoder.sizeLineLength(n), expected.utf8.count, "\(n)")
        }
        XCTAssertEqual(H1ChunkedEncoder.sizeLineLength(Int.max), H1ChunkedEncoder.maxSizeLineLength)
    }

    func testCRLFAndLastChunk() {
        XCTAssertEqual(written { H1ChunkedEncoder.writeCRLF(into: $0) }, "\r\n")
        XCTAssertEqual(written { H1ChunkedEncoder.writeLastChunk(into: $0) }, "0\r\n\r\n")
        XCTAssertEqual(H1ChunkedEncoder.lastChunkLength, 5)
        XCTAssertEqual(H1ChunkedEncoder.crlfLength, 2)
    }

    /// Encoding then decoding gives back the payload.
    func testEncodedBodyRoundTripsThroughTheDecoder() {
        let pieces: [[UInt8]] = [Array("hello"), [UInt8](repeating: 0x41, count: 300), [0x0D, 0x0A], [0]]
        var wire: [UInt8] = []
        for piece in pieces {
            var line = [UInt8](repeating: 0, count: H1ChunkedEncoder.sizeLineLength(piece.count))
            let n = line.withUnsafeMutableBytes { H1ChunkedEncoder.writeSizeLine(piece.count, into: $0.baseAddress!) }
            XCTAssertEqual(n, line.count)
            wire += line + piece + Array("\r\n")
        }
        wire += Array("0\r\n\r\n")
        XCTAssertEqual(decodeChunked(wire, cuts: []), ChunkedOutcome(body: pieces.flatMap { $0 }, verdict: .end(consumed: wire.count)))
    }
}
