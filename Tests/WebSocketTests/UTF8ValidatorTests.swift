import XCTest

@testable import WebSocket

/// UTF-8 validation as RFC 6455 §8.1 requires it, checked against a table of
/// valid and invalid sequences in the style of Autobahn|Testsuite case 6
/// (Markus Kuhn's UTF-8 decoder stress test): boundaries, overlongs,
/// surrogates D800–DFFF, code points above U+10FFFF, stray and missing
/// continuation bytes. Each is validated whole and split at every byte.
final class UTF8ValidatorTests: XCTestCase {
    /// Valid sequences, each with what it encodes.
    static let valid: [(bytes: [UInt8], meaning: String)] = [
        ([], "empty"),
        (Array("Hello-µ@ßöäüàá-UTF-8!!"), "Autobahn 6.2.1 mixed text"),
        ([0xCE, 0xBA, 0xE1, 0xBD, 0xB9, 0xCF, 0x83, 0xCE, 0xBC, 0xCE, 0xB5], "κόσμε (Autobahn 6.1/6.3.1)"),
        ([0x00], "U+0000, first 1-byte"),
        ([0x7F], "U+007F, last 1-byte"),
        ([0xC2, 0x80], "U+0080, first 2-byte"),
        ([0xDF, 0xBF], "U+07FF, last 2-byte"),
        ([0xE0, 0xA0, 0x80], "U+0800, first 3-byte"),
        ([0xED, 0x9F, 0xBF], "U+D7FF, just below the surrogates"),
        ([0xEE, 0x80, 0x80], "U+E000, just above the surrogates"),
        ([0xEF, 0xBF, 0xBD], "U+FFFD replacement character"),
        ([0xEF, 0xBF, 0xBF], "U+FFFF, last 3-byte (a noncharacter, still valid)"),
        ([0xF0, 0x90, 0x80, 0x80], "U+10000, first 4-byte"),
        ([0xF4, 0x8F, 0xBF, 0xBF], "U+10FFFF, the last code point"),
        ([0xF0, 0x9F, 0x98, 0x80], "U+1F600 emoji"),
    ]

    /// Invalid sequences, each with the reason.
    static let invalid: [(bytes: [UInt8], meaning: String)] = [
        ([0x80], "lone continuation byte (Autobahn 6.4)"),
        ([0xBF], "lone last continuation byte"),
        ([0x41, 0x80, 0x41], "continuation byte after ASCII"),
        ([0xC0, 0x80], "overlong U+0000 in 2 bytes"),
        ([0xC0, 0xAF], "overlong '/' in 2 bytes (Autobahn 6.8)"),
        ([0xC1, 0xBF], "overlong U+007F in 2 bytes"),
        ([0xE0, 0x80, 0xAF], "overlong '/' in 3 bytes"),
        ([0xE0, 0x9F, 0xBF], "overlong U+07FF in 3 bytes"),
        ([0xF0, 0x80, 0x80, 0xAF], "overlong '/' in 4 bytes"),
        ([0xF0, 0x8F, 0xBF, 0xBF], "overlong U+FFFF in 4 bytes"),
        ([0xED, 0xA0, 0x80], "surrogate U+D800 (Autobahn 6.19)"),
        ([0xED, 0xAD, 0xBF], "surrogate U+DB7F"),
        ([0xED, 0xB0, 0x80], "surrogate U+DC00"),
        ([0xED, 0xBF, 0xBF], "surrogate U+DFFF"),
        ([0xED, 0xA0, 0x80, 0xED, 0xB0, 0x80], "surrogate pair U+D800 U+DC00 (Autobahn 6.20)"),
        ([0xF4, 0x90, 0x80, 0x80], "U+110000, above the last code point"),
        ([0xF5, 0x80, 0x80, 0x80], "F5 lead byte (> U+10FFFF)"),
        ([0xF7, 0xBF, 0xBF, 0xBF], "U+1FFFFF"),
        ([0xF8, 0x88, 0x80, 0x80, 0x80], "5-byte form"),
        ([0xFC, 0x84, 0x80, 0x80, 0x80, 0x80], "6-byte form"),
        ([0xFE], "FE never appears"),
        ([0xFF], "FF never appears"),
        ([0xC2, 0x41], "2-byte lead followed by ASCII"),
        ([0xE1, 0x80, 0x41], "3-byte sequence cut by ASCII"),
        ([0xF1, 0x80, 0x80, 0xC0], "4-byte sequence cut by a lead byte"),
        ([0xCE, 0xBA, 0xE1, 0xBD, 0xB9, 0xCF, 0x83, 0xCE, 0xBC, 0xCE, 0xB5, 0xED, 0xA0, 0x80, 0x65, 0x64, 0x69, 0x74, 0x65, 0x64],
         "κόσμε then a surrogate then 'edited' (Autobahn 6.3.2)"),
    ]

    /// Prefixes that are valid so far but end inside a character.
    static let truncated: [(bytes: [UInt8], meaning: String)] = [
        ([0xC2], "2-byte lead only"),
        ([0xE0, 0xA0], "3-byte missing last"),
        ([0xE1], "3-byte lead only"),
        ([0xF0, 0x90, 0x80], "4-byte missing last"),
        ([0xF4, 0x8F], "4-byte missing two"),
        (Array("abc") + [0xCE], "text ending in a lead byte"),
    ]

    func testValidSequencesAreAcceptedWholeAndSplitAtEveryByte() {
        for (bytes, meaning) in Self.valid {
            for cut in 0...bytes.count {
                var v = UTF8Validator()
                let ok = validate(&v, Array(bytes[..<cut])) && validate(&v, Array(bytes[cut...]))
                XCTAssertTrue(ok && v.isComplete, "\(meaning) split at \(cut)")
            }
        }
    }

    func testInvalidSequencesAreRefusedWholeAndSplitAtEveryByte() {
        for (bytes, meaning) in Self.invalid {
            for cut in 0...bytes.count {
                var v = UTF8Validator()
                let ok = validate(&v, Array(bytes[..<cut])) && validate(&v, Array(bytes[cut...]))
                XCTAssertFalse(ok && v.isComplete, "\(meaning) split at \(cut)")
            }
            XCTAssertFalse(bytes.withUnsafeBytes { UTF8Validator.isValid($0) }, meaning)
        }
    }

    func testSequencesEndingInsideACharacterAreIncomplete() {
        for (bytes, meaning) in Self.truncated {
            var v = UTF8Validator()
            XCTAssertTrue(validate(&v, bytes), meaning)
            XCTAssertFalse(v.isComplete, meaning)
            XCTAssertFalse(bytes.withUnsafeBytes { UTF8Validator.isValid($0) }, meaning)
        }
    }

    func testFailsFastOnTheFirstBadByte() {
        // Autobahn 6.x "fail fast": the stream is refused at the bad byte,
        // without waiting for the rest of the message.
        var v = UTF8Validator()
        XCTAssertFalse(validate(&v, [0xCE, 0xBA, 0xED, 0xA0]))
    }

    func testASCIIFastPathAgreesAtEveryAlignment() {
        for offset in 0..<9 {
            var bytes = [UInt8](repeating: 0x61, count: 40)
            bytes[offset + 20] = 0x80  // a stray continuation after the fast path's words
            XCTAssertFalse(bytes.withUnsafeBytes { UTF8Validator.isValid($0) }, "offset \(offset)")
            bytes[offset + 20] = 0x7F
            XCTAssertTrue(bytes.withUnsafeBytes { UTF8Validator.isValid($0) }, "offset \(offset)")
        }
    }

    func testAgreesWithTheStandardLibraryOnEveryTwoByteString() {
        // Exhaustive over 2-byte inputs, against Swift's own decoder.
        for a in 0...255 {
            for b in 0...255 {
                let bytes: [UInt8] = [UInt8(a), UInt8(b)]
                let ours = bytes.withUnsafeBytes { UTF8Validator.isValid($0) }
                var decoder = UTF8()
                var iterator = bytes.makeIterator()
                var theirs = true
                loop: while true {
                    switch decoder.decode(&iterator) {
                    case .scalarValue: continue
                    case .emptyInput: break loop
                    case .error: theirs = false; break loop
                    }
                }
                XCTAssertEqual(ours, theirs, "\(bytes)")
            }
        }
    }

    private func validate(_ v: inout UTF8Validator, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { v.validate($0) }
    }
}
