import XCTest

@testable import HTTP1

final class H1ErrorTests: XCTestCase {
    func testEqualityComparesStatusAndReasonText() {
        XCTAssertEqual(H1Error.bareLF, H1Error.bareLF)
        XCTAssertEqual(H1Error(status: 400, reason: "bare LF in head"), H1Error.bareLF)
        XCTAssertNotEqual(H1Error(status: 431, reason: "bare LF in head"), H1Error.bareLF)
        XCTAssertNotEqual(H1Error.bareLF, H1Error.bareCR)
    }

    func testCatalogueStatusesAreFromTheDesignSet() {
        let all: [H1Error] = [
            .bareLF, .bareCR, .tooManyEmptyLines, .headTooLarge, .tooManyFields, .invalidMethod, .methodTooLong, .emptyTarget,
            .invalidTargetByte, .invalidTargetForm, .invalidTargetAuthority, .targetTooLong, .malformedVersion,
            .unsupportedVersion, .obsFold, .whitespaceBeforeColon, .invalidFieldName, .missingColon, .invalidFieldValue,
            .missingHost, .multipleHost, .invalidHost, .invalidContentLength, .contentLengthList, .repeatedContentLength,
            .contentLengthWithTransferEncoding, .transferEncodingInHTTP10, .repeatedTransferEncoding,
            .invalidTransferEncoding, .chunkedNotLast, .chunkedRepeated, .unsupportedTransferCoding,
            .unsupportedExpectation, .invalidChunkSize, .chunkSizeOverflow, .invalidChunkExtension,
            .chunkExtensionTooLong, .chunkBareLF, .missingChunkDataCRLF, .trailerTooLarge,
        ]
        for error in all {
            XCTAssertTrue([400, 413, 414, 417, 431, 501, 505].contains(error.status), "\(error)")
        }
        for i in all.indices {
            for j in all.indices where i != j {
                XCTAssertNotEqual(all[i], all[j], "reasons are distinct")
            }
        }
        XCTAssertEqual(H1Error.targetTooLong.description, "414 request-target too long")
    }
}
