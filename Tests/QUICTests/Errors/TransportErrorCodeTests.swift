// RFC 9000 §20.1 error codes and the CRYPTO_ERROR range (RFC 9001 §4.8).

import XCTest
@testable import QUIC

final class TransportErrorCodeTests: XCTestCase {
    func testRegistryValues() {
        let codes: [(TransportErrorCode, UInt64)] = [
            (.noError, 0x00), (.internalError, 0x01), (.connectionRefused, 0x02), (.flowControlError, 0x03),
            (.streamLimitError, 0x04), (.streamStateError, 0x05), (.finalSizeError, 0x06), (.frameEncodingError, 0x07),
            (.transportParameterError, 0x08), (.connectionIDLimitError, 0x09), (.protocolViolation, 0x0a),
            (.invalidToken, 0x0b), (.applicationError, 0x0c), (.cryptoBufferExceeded, 0x0d), (.keyUpdateError, 0x0e),
            (.aeadLimitReached, 0x0f), (.noViablePath, 0x10),
        ]
        for (code, raw) in codes { XCTAssertEqual(code.rawValue, raw) }
    }

    /// "0x0100-0x01ff: CRYPTO_ERROR ... the low byte is the TLS alert".
    func testCryptoErrorCarriesTheTLSAlert() {
        XCTAssertEqual(TransportErrorCode.cryptoError(alert: 120).rawValue, 0x178)  // no_application_protocol
        XCTAssertEqual(TransportErrorCode(rawValue: 0x128).tlsAlert, 40)           // handshake_failure
        XCTAssertNil(TransportErrorCode(rawValue: 0xff).tlsAlert)
        XCTAssertNil(TransportErrorCode(rawValue: 0x200).tlsAlert)
        // Unknown codes survive.
        XCTAssertEqual(TransportErrorCode(rawValue: 0x1234).rawValue, 0x1234)
    }

    func testErrorsCarryTheirFrameType() {
        let e = QUICError.frameTruncated.inFrame(0x06)
        XCTAssertEqual(e.code, .frameEncodingError)
        XCTAssertEqual(e.frameType, 0x06)
        XCTAssertNotEqual(e, QUICError.frameTruncated)
    }
}
