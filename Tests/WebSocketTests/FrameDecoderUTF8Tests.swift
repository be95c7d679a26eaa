import XCTest

@testable import WebSocket

/// The same table through the frame decoder: text messages split into
/// fragments at every byte boundary, so sequences are cut at each fragment
/// boundary (Autobahn 6.x fragmented variants).
final class FrameDecoderUTF8Tests: XCTestCase {
    func testValidTextSplitIntoFragmentsAtEveryByteIsAccepted() {
        for (bytes, meaning) in UTF8ValidatorTests.valid where !bytes.isEmpty {
            for cut in 1..<max(2, bytes.count) where cut < bytes.count {
                let input = clientFrame(0x1, Array(bytes[..<cut]), fin: false) + clientFrame(0x0, Array(bytes[cut...]))
                XCTAssertEqual(decode([input]), DecodeOutcome(events: [.text(bytes)]), "\(meaning) cut at \(cut)")
            }
            assertDecodes(clientFrame(0x1, bytes), to: [.text(bytes)])
        }
    }

    func testInvalidTextFailsWith1007WholeAndInFragments() {
        for (bytes, meaning) in UTF8ValidatorTests.invalid {
            assertFails(clientFrame(0x1, bytes), with: .invalidUTF8)
            for cut in 1..<bytes.count {
                let input = clientFrame(0x1, Array(bytes[..<cut]), fin: false) + clientFrame(0x0, Array(bytes[cut...]))
                XCTAssertEqual(decode([input]), DecodeOutcome(error: .invalidUTF8), "\(meaning) cut at \(cut)")
            }
        }
    }

    func testTextMessageEndingInsideACharacterFailsWith1007() {
        for (bytes, _) in UTF8ValidatorTests.truncated {
            assertFails(clientFrame(0x1, bytes), with: .invalidUTF8)
            assertFails(clientFrame(0x1, bytes, fin: false) + clientFrame(0x0, []), with: .invalidUTF8)
        }
    }

    func testATruncatedCharacterMayBeCompletedByTheNextFragment() {
        let input = clientFrame(0x1, [0xF0, 0x9F], fin: false) + clientFrame(0x9, []) + clientFrame(0x0, [0x98, 0x80])
        assertDecodes(input, to: [.ping([]), .text([0xF0, 0x9F, 0x98, 0x80])])
    }

    func testBinaryMessagesAreNotValidated() {
        assertDecodes(clientFrame(0x2, [0xFF, 0xED, 0xA0, 0x80, 0xC2]), to: [.binary([0xFF, 0xED, 0xA0, 0x80, 0xC2])])
    }
}
