import Core
import XCTest

@testable import HTTP1

/// RFC 9112 §7.1 chunked bodies, every input fed whole, split at every
/// boundary, one byte at a time and followed by extra bytes.
final class H1ChunkedDecoderTests: XCTestCase {
    // MARK: Accepted bodies

    /// The shape of the example in RFC 9112 §7.1 / RFC 2616 §19.4.6.
    func testRFCShapedBodyDecodes() {
        assertChunkedBody("4\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\n\r\n",
                          decodesTo: "Wikipedia in\r\n\r\nchunks.")
    }

    func testEmptyBodyIsJustTheLastChunk() {
        assertChunkedBody("0\r\n\r\n", decodesTo: "")
    }

    func testUppercaseAndLowercaseHexSizesAreAccepted() {
        assertChunkedBody("a\r\n0123456789\r\nB\r\nabcdefghijk\r\n0\r\n\r\n", decodesTo: "0123456789abcdefghijk")
    }

    func testLeadingZerosInSizeAreAccepted() {
        assertChunkedBody("0003\r\nabc\r\n000\r\n\r\n", decodesTo: "abc")
    }

    func testSixteenHexDigitsAreAccepted() {
        assertChunkedBody("0000000000000003\r\nabc\r\n0\r\n\r\n", decodesTo: "abc")
    }

    func testChunkDataMayContainCRLFAndAnyByte() {
        assertChunkedBody("7\r\n\r\n0\r\n\r\n\r\n0\r\n\r\n", decodesTo: "\r\n0\r\n\r\n")
        let bytes: [UInt8] = Array("3\r\n") + [0x00, 0xFF, 0x0A] + Array("\r\n0\r\n\r\n")
        XCTAssertEqual(decodeThreeWays(bytes), ChunkedOutcome(body: [0x00, 0xFF, 0x0A], verdict: .end(consumed: bytes.count)))
    }

    func testLargeChunkSplitAcrossCallsReconstructsTheBody() {
        let payload = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let bytes = Array("bb8\r\n") + payload + Array("\r\n1\r\nz\r\n0\r\n\r\n")
        let expected = ChunkedOutcome(body: payload + [0x7A], verdict: .end(consumed: bytes.count))
        XCTAssertEqual(decodeChunked(bytes, cuts: []), expected)
        XCTAssertEqual(decodeChunked(bytes, cuts: Array(stride(from: 0, to: bytes.count, by: 7))), expected)
        XCTAssertEqual(decodeChunked(bytes, cuts: Array(0...bytes.count)), expected)
    }

    // MARK: Extensions (RFC 9112 §7.1.1)

    func testChunkExtensionsAreValidatedAndIgnored() {
        assertChunkedBody("3;name\r\nabc\r\n0\r\n\r\n", decodesTo: "abc")
        assertChunkedBody("3;name=value\r\nabc\r\n0\r\n\r\n", decodesTo: "abc")
        assertChunkedBody("3;a=1;b;c=\"quoted; \\\"string\\\"\"\r\nabc\r\n0;last\r\n\r\n", decodesTo: "abc")
        assertChunkedBody("3 ; a = 1 ;\tb\r\nabc\r\n0\r\n\r\n", decodesTo: "abc")
    }

    func testInvalidChunkExtensionIsRejected() {
        for ext in [";", "; ", ";=v", ";a=", ";a=\"open", ";a=b c", ";a b", "x", ";a=(b)", ";a=\"\u{1}\"", " ", ";a ", ";a=b ", "\r"] {
            let outcome = decodeThreeWays(Array("3\(ext)\r\nabc\r\n0\r\n\r\n"))
            XCTAssertEqual(outcome.verdict, .failed(.invalidChunkExtension), "extension \(ext.debugDescription)")
        }
    }

    func testChunkExtensionAtMaxLengthIsAccepted() {
        var limits = H1Limits()
        limits.maxChunkExtensionBytes = 10
        assertChunkedBody("3;abcdefghi\r\nabc\r\n0\r\n\r\n", decodesTo: "abc", limits: limits)
    }

    func testOverlongChunkExtensionIsRejected() {
        var limits = H1Limits()
        limits.maxChunkExtensionBytes = 10
        assertChunkedRejected("3;abcdefghij\r\nabc\r\n0\r\n\r\n", 400, .chunkExtensionTooLong, limits: limits)
    }

    func testOverlongChunkExtensionIsRejectedBeforeTheLineEnds() {
        var limits = H1Limits()
        limits.maxChunkExtensionBytes = 10
        assertChunkedRejected("3;" + String(repeating: "a", count: 50), 400, .chunkExtensionTooLong, limits: limits)
    }

    // MARK: Trailers (RFC 9112 §7.1.2)

    func testTrailerFieldsAreParsedAndDiscarded() {
        assertChunkedBody("3\r\nabc\r\n0\r\nX-Checksum: 1234\r\nExpires: never\r\n\r\n", decodesTo: "abc")
    }

    func testInvalidTrailerFieldIsRejected() {
        assertChunkedRejected("0\r\nX : 1\r\n\r\n", 400, .whitespaceBeforeColon)
        assertChunkedRejected("0\r\nX: 1\r\n folded\r\n\r\n", 400, .obsFold)
        assertChunkedRejected("0\r\nNoColon\r\n\r\n", 400, .missingColon)
        assertChunkedRejected("0\r\nX: a\u{0}b\r\n\r\n", 400, .invalidFieldValue)
        assertChunkedRejected("0\r\n: v\r\n\r\n", 400, .invalidFieldName)
    }

    func testBareLFInTrailerIsRejected() {
        assertChunkedRejected("0\r\nX: 1\n\r\n", 400, .chunkBareLF)
        assertChunkedRejected("0\r\n\n", 400, .chunkBareLF)
    }

    func testTrailerSectionAtMaxTrailerBytesIsAccepted() {
        var limits = H1Limits()
        limits.maxTrailerBytes = 12
        assertChunkedBody("0\r\nX: 12345\r\n\r\n", decodesTo: "", limits: limits)
    }

    func testOversizedTrailerSectionIsRejectedWith431() {
        var limits = H1Limits()
        limits.maxTrailerBytes = 12
        assertChunkedRejected("0\r\nX: 123456\r\n\r\n", 431, .trailerTooLarge, limits: limits)
        assertChunkedRejected("0\r\nX: 1\r\nY: 2\r\n\r\n", 431, .trailerTooLarge, limits: limits)
        assertChunkedRejected("0\r\nX: " + String(repeating: "v", count: 100), 431, .trailerTooLarge, limits: limits)
    }

    // MARK: Framing errors

    func testEmptyChunkSizeIsRejected() {
        assertChunkedRejected("\r\nabc\r\n0\r\n\r\n", 400, .invalidChunkSize)
        assertChunkedRejected(";ext\r\n", 400, .invalidChunkSize)
    }

    func testNonHexChunkSizeIsRejected() {
        assertChunkedRejected("g\r\n", 400, .invalidChunkSize)
        assertChunkedRejected("-1\r\n", 400, .invalidChunkSize)
        assertChunkedRejected("+1\r\n", 400, .invalidChunkSize)
        assertChunkedRejected(" 1\r\n", 400, .invalidChunkSize)
        assertChunkedRejected("0x10\r\n", 400, .invalidChunkExtension)
    }

    func testMoreThanSixteenHexDigitsAreRejected() {
        assertChunkedRejected("00000000000000001\r\na\r\n0\r\n\r\n", 400, .chunkSizeOverflow)
    }

    func testChunkSizeOverflowingInt64IsRejected() {
        assertChunkedRejected("8000000000000000\r\n", 400, .chunkSizeOverflow)
        assertChunkedRejected("ffffffffffffffff\r\n", 400, .chunkSizeOverflow)
    }

    func testLargestChunkSizeIsAccepted() {
        let outcome = decodeChunked(Array("7fffffffffffffff\r\nabc"), cuts: [])
        XCTAssertEqual(outcome, ChunkedOutcome(body: Array("abc"), verdict: .incomplete))
    }

    func testBareLFAfterChunkSizeIsRejected() {
        assertChunkedRejected("3\nabc\r\n0\r\n\r\n", 400, .chunkBareLF)
        assertChunkedRejected("3;a=b\nabc\r\n0\r\n\r\n", 400, .chunkBareLF)
        assertChunkedRejected("0\n\r\n", 400, .chunkBareLF)
    }

    func testBareCRAfterChunkSizeIsRejected() {
        assertChunkedRejected("3\rabc\r\n0\r\n\r\n", 400, .invalidChunkExtension)
    }

    func testChunkDataNotFollowedByCRLFIsRejected() {
        assertChunkedRejected("3\r\nabcd\r\n0\r\n\r\n", 400, .missingChunkDataCRLF)
        assertChunkedRejected("3\r\nabc\n0\r\n\r\n", 400, .missingChunkDataCRLF)
        assertChunkedRejected("3\r\nabc\r0\r\n\r\n", 400, .missingChunkDataCRLF)
        assertChunkedRejected("3\r\nab\r\n0\r\n\r\n", 400, .missingChunkDataCRLF)
    }

    func testDataDeliveredBeforeAFramingErrorIsTheSameEveryWay() {
        let outcome = decodeThreeWays(Array("3\r\nabc\r\n2\r\nde\r\nzz\r\n"))
        XCTAssertEqual(outcome, ChunkedOutcome(body: Array("abcde"), verdict: .failed(.invalidChunkSize)))
    }

    func testTruncatedBodyStaysIncomplete() {
        let outcome = decodeThreeWays(Array("5\r\nab"))
        XCTAssertEqual(outcome, ChunkedOutcome(body: Array("ab"), verdict: .incomplete))
        XCTAssertEqual(decodeThreeWays(Array("0\r\nX: 1\r\n")).verdict, .incomplete)
    }

    // MARK: The call contract

    func testFailureIsSticky() {
        var decoder = H1ChunkedDecoder(limits: H1Limits())
        let bad = Array("z\r\n")
        XCTAssertEqual(bad.withUnsafeBytes { decoder.decode($0) }, .failed(.invalidChunkSize))
        XCTAssertEqual(Array("0\r\n\r\n").withUnsafeBytes { decoder.decode($0) }, .failed(.invalidChunkSize))
        XCTAssertFalse(decoder.isFinished)
    }

    func testAfterTheEndNothingMoreIsConsumed() {
        var decoder = H1ChunkedDecoder(limits: H1Limits())
        XCTAssertEqual(Array("0\r\n\r\nGET").withUnsafeBytes { decoder.decode($0) }, .end(consumed: 5))
        XCTAssertTrue(decoder.isFinished)
        XCTAssertEqual(Array("GET").withUnsafeBytes { decoder.decode($0) }, .end(consumed: 0))
    }

    func testSizeLineAndPayloadComeInOneStep() {
        var decoder = H1ChunkedDecoder(limits: H1Limits())
        let bytes = Array("3\r\nabc\r\n0\r\n\r\n")
        XCTAssertEqual(bytes.withUnsafeBytes { decoder.decode($0) }, .data(ByteSpan(offset: 3, length: 3), consumed: 6))
        let rest = Array(bytes[6...])
        XCTAssertEqual(rest.withUnsafeBytes { decoder.decode($0) }, .end(consumed: 7))
    }

    func testPartialSizeLineConsumesNothing() {
        var decoder = H1ChunkedDecoder(limits: H1Limits())
        XCTAssertEqual(Array("3;a=").withUnsafeBytes { decoder.decode($0) }, .needMoreData(consumed: 0))
        XCTAssertEqual(Array("").withUnsafeBytes { decoder.decode($0) }, .needMoreData(consumed: 0))
    }

    func testCompletedTrailerLinesAreConsumed() {
        var decoder = H1ChunkedDecoder(limits: H1Limits())
        XCTAssertEqual(Array("0\r\nA: 1\r\nB:").withUnsafeBytes { decoder.decode($0) }, .needMoreData(consumed: 9))
        XCTAssertEqual(Array("B: 2\r\n\r\n").withUnsafeBytes { decoder.decode($0) }, .end(consumed: 8))
    }
}
