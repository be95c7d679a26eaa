import XCTest

@testable import HTTP1

final class H1ChunkedEncoderTrailersTests: XCTestCase {
    private func written(_ fields: [StaticField]) -> String {
        withFields(fields) { fields in
            writtenText(length: H1ChunkedEncoder.lastChunkLength(trailers: fields)) {
                H1ChunkedEncoder.writeLastChunk(trailers: fields, into: $0)
            }
        }
    }

    /// RFC 9112 §7.1: chunked-body = *chunk last-chunk trailer-section CRLF.
    func testLastChunkWithTrailerFields() {
        XCTAssertEqual(written([StaticField("x-checksum", "abc"), StaticField("server-timing", "app;dur=1")]),
                       "0\r\nx-checksum: abc\r\nserver-timing: app;dur=1\r\n\r\n")
    }

    func testNoTrailersIsThePlainLastChunk() {
        XCTAssertEqual(written([]), "0\r\n\r\n")
        XCTAssertEqual(H1ChunkedEncoder.lastChunkLength(trailers: UnsafeBufferPointer<StaticField>(start: nil, count: 0)),
                       H1ChunkedEncoder.lastChunkLength)
    }

    /// The trailer section ends the body the decoder reads.
    func testEndWithTrailersRoundTripsThroughTheDecoder() {
        let wire = Array("5\r\nhello\r\n" + written([StaticField("x-t", "1")]))
        XCTAssertEqual(decodeChunked(wire, cuts: []), ChunkedOutcome(body: Array("hello"), verdict: .end(consumed: wire.count)))
    }
}
