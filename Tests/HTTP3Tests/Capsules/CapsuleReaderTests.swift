// The Capsule Protocol reader (RFC 9297 §3.2, §3.3): whole and split input,
// unknown types skipped without buffering, the value bound, truncation.

import XCTest
import Core
@testable import HTTP3

final class CapsuleReaderTests: XCTestCase {
    private func capsule(_ type: UInt64, _ value: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        value.withUnsafeBytes { CapsuleWriter.append(type: type, value: $0, to: &out) }
        return out
    }

    /// Reads `input` in pieces cut at `cuts`; returns the delivered capsules.
    private func read(_ input: [UInt8], cuts: [Int] = [], reader: CapsuleReader? = nil,
                      finish: Bool = true) throws -> [(UInt64, [UInt8])] {
        var r = reader ?? CapsuleReader(delivers: CapsuleType.isWebTransport)
        var got: [(UInt64, [UInt8])] = []
        var start = 0
        for end in cuts + [input.count] where end >= start {
            try input[start..<end].withUnsafeBytes { piece in
                try r.read(piece) { got.append(($0, Array($1))) }
            }
            start = end
        }
        if finish { try r.finish() }
        return got
    }

    /// Four delivered capsules with an unknown one among them, as pieces.
    private let pieces: [[UInt8]] = {
        func one(_ c: WebTransportCapsule) -> [UInt8] {
            var s: [UInt8] = []
            c.append(to: &s)
            return s
        }
        return [one(.maxData(1 << 20)), [0x17, 0x03, 1, 2, 3],  // an unknown type (0x17), skipped
                one(.datagram(Array("hello".utf8))), one(.closeSession(code: 0x0102_0304, message: Array("bye".utf8))),
                one(.drainSession)]
    }()
    private var stream: [UInt8] { pieces.flatMap { $0 } }

    func testWholeStream() throws {
        let got = try read(stream)
        XCTAssertEqual(got.map(\.0), [CapsuleType.maxData, CapsuleType.datagram, CapsuleType.closeSession, CapsuleType.drainSession])
        XCTAssertEqual(got[1].1, Array("hello".utf8))
        XCTAssertEqual(got[2].1, [1, 2, 3, 4] + Array("bye".utf8))
        XCTAssertEqual(got[3].1, [])
    }

    /// The same capsules whatever the split, at one point or byte by byte.
    func testEverySplitGivesTheSameCapsules() throws {
        let whole = try read(stream)
        for cut in 0...stream.count {
            let split = try read(stream, cuts: [cut])
            XCTAssertEqual(split.map(\.0), whole.map(\.0), "cut at \(cut)")
            XCTAssertEqual(split.map(\.1), whole.map(\.1), "cut at \(cut)")
        }
        let bytewise = try read(stream, cuts: Array(1..<stream.count))
        XCTAssertEqual(bytewise.map(\.1), whole.map(\.1))
    }

    /// §3.2: unknown types are dropped and skipped, with 8-byte varints in
    /// the header and a value far above the delivered bound.
    func testUnknownCapsulesAreSkippedWithoutBuffering() throws {
        var input: [UInt8] = [0xc0, 0, 0, 0, 0, 0, 0, 0x21]  // type 0x21, 8-byte varint
        input += [0x80, 0x01, 0x00, 0x00]  // length 65536, 4-byte varint
        input += [UInt8](repeating: 9, count: 65_536)
        input += capsule(CapsuleType.drainSession, [])
        let reader = CapsuleReader(maxValueLength: 16, delivers: CapsuleType.isWebTransport)
        XCTAssertEqual(try read(input, reader: reader).map(\.0), [CapsuleType.drainSession])
        XCTAssertEqual(try read(input, cuts: Array(stride(from: 1, to: input.count, by: 997)), reader: reader).map(\.0),
                       [CapsuleType.drainSession])
    }

    /// A delivered capsule above the bound is refused when its header is read.
    func testValueBoundIsEnforced() throws {
        let reader = CapsuleReader(maxValueLength: 8, delivers: CapsuleType.isWebTransport)
        XCTAssertEqual(try read(capsule(CapsuleType.datagram, Array(repeating: 1, count: 8)), reader: reader).count, 1)
        XCTAssertThrowsError(try read(capsule(CapsuleType.datagram, Array(repeating: 1, count: 9)), reader: reader)) {
            XCTAssertEqual($0 as? CapsuleError, .valueTooLarge)
        }
        // Split so the value would have to be buffered: still refused.
        XCTAssertThrowsError(try read(capsule(CapsuleType.datagram, Array(repeating: 1, count: 9)), cuts: [2], reader: reader))
    }

    /// §3.3: a stream that ends inside a capsule (in its header or value) is
    /// malformed; one that ends between capsules is not.
    func testTruncationAtTheEndOfTheStream() throws {
        for end in 1..<stream.count {
            var r = CapsuleReader(delivers: CapsuleType.isWebTransport)
            try stream[0..<end].withUnsafeBytes { b in try r.read(b) { _, _ in } }
            let ends = pieces.indices.map { pieces[0...$0].reduce(0) { $0 + $1.count } }
            let boundary = ends.contains(end)  // after each whole capsule
            XCTAssertEqual(r.isAtCapsuleBoundary, boundary, "end \(end)")
            if boundary {
                XCTAssertNoThrow(try r.finish())
            } else {
                XCTAssertThrowsError(try r.finish()) { XCTAssertEqual($0 as? CapsuleError, .truncated) }
            }
        }
    }

    func testEmptyInputAndZeroLengthValues() throws {
        XCTAssertTrue(try read([]).isEmpty)
        let got = try read(capsule(CapsuleType.datagram, []) + capsule(0x3f, []) + capsule(CapsuleType.datagram, []))
        XCTAssertEqual(got.map(\.1), [[], []])
    }
}
