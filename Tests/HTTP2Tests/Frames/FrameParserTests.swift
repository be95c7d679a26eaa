// The parser fed three ways — whole, one byte at a time, and with trailing
// bytes — must produce the same events (STYLE §7).

import XCTest
@testable import HTTP2

final class FrameParserTests: XCTestCase {
    /// A client's opening: preface, SETTINGS, WINDOW_UPDATE, HEADERS, a
    /// padded DATA, an unknown frame, a stream-error PRIORITY, PING.
    private let stream: [UInt8] = ConnectionPreface.bytes
        + rawFrame(.settings, stream: 0, hex("0003 00000064 0004 0000ffff"))
        + rawFrame(.windowUpdate, stream: 0, hex("00ff0000"))
        + rawFrame(.headers, flags: [.endHeaders], stream: 1, hex("82 86 84"))
        + rawFrame(.data, flags: [.padded, .endStream], stream: 1, hex("02 6869 0000"))
        + rawFrame(FrameType(rawValue: 0x20), stream: 0, [1, 2, 3])
        + rawFrame(.priority, stream: 1, hex("00000001 00"))
        + rawFrame(.ping, stream: 0, hex("0102030405060708"))

    /// Feeds `input` in chunks of `chunk` bytes (appending to a buffer, as a
    /// connection would) and returns every non-needMoreData event with the
    /// offset its spans are relative to.
    private func events(_ input: [UInt8], chunk: Int) throws -> [FrameParser.Event] {
        var p = FrameParser()
        var buffer: [UInt8] = []
        var read = 0
        var fed = 0
        var out: [FrameParser.Event] = []
        while fed < input.count || read < buffer.count {
            if fed < input.count {
                let n = min(chunk, input.count - fed)
                buffer += input[fed ..< fed + n]
                fed += n
            }
            while true {
                let e = try buffer[read...].withUnsafeBytes { try p.nextEvent(in: $0) }
                switch e {
                case .needMoreData: break
                case .prefaceReceived(let n), .frame(_, let n), .streamError(_, let n):
                    out.append(e)
                    read += n
                    continue
                }
                break
            }
            if fed == input.count { break }
        }
        return out
    }

    func testWholeByteAtATimeAndOddChunksGiveTheSameEvents() throws {
        let whole = try events(stream, chunk: stream.count)
        XCTAssertEqual(whole.count, 8)
        XCTAssertEqual(whole.first, .prefaceReceived(consumed: 24))
        XCTAssertEqual(whole[5], .frame(.unknown(UnknownFrame(
            header: FrameHeader(length: 3, type: FrameType(rawValue: 0x20), flags: [], streamID: 0),
            payload: .init(offset: 9, length: 3))), consumed: 12))
        XCTAssertEqual(whole[6], .streamError(FrameError.selfDependency.onStream(1), consumed: 14))
        XCTAssertEqual(try events(stream, chunk: 1), whole)
        XCTAssertEqual(try events(stream, chunk: 7), whole)
    }

    func testTrailingPartialFrameIsLeftUnconsumed() throws {
        let whole = try events(stream, chunk: stream.count)
        let withTail = stream + Array(rawFrame(.ping, stream: 0, [0, 0, 0, 0, 0, 0, 0, 0])[..<12])
        XCTAssertEqual(try events(withTail, chunk: withTail.count), whole)
        XCTAssertEqual(try events(withTail, chunk: 1), whole)
    }

    func testSpansPointAtThePayloadInTheCallersBytes() throws {
        let wire = rawFrame(.data, flags: .padded, stream: 1, hex("01 616263 00"))
        var p = FrameParser(expectPreface: false)
        let e = try wire.withUnsafeBytes { try p.nextEvent(in: $0) }
        guard case .frame(.data(let d), 14) = e else { return XCTFail("\(e)") }
        XCTAssertEqual(slice(wire, d.data), bytes("abc"))
    }

    func testMaxFrameSizeCanBeRaisedAfterSettingsAck() throws {
        var p = FrameParser(expectPreface: false)
        let big = rawFrame(.data, stream: 1, [UInt8](repeating: 0, count: 20_000))
        XCTAssertThrowsFrame(.frameTooLarge) { _ = try big.withUnsafeBytes { try p.nextEvent(in: $0) } }
        var q = FrameParser(expectPreface: false)
        q.maxFrameSize = 32_768
        guard case .frame = try big.withUnsafeBytes({ try q.nextEvent(in: $0) }) else { return XCTFail() }
    }
}
