// Address-validation tokens (RFC 9000 §8.1.2, §8.1.3, §8.1.4):
// Sources/QUIC/Endpoint/AddressTokens.swift.

import XCTest
import Core
@testable import QUIC

final class AddressTokensTests: XCTestCase {
    let secret = [UInt8](repeating: 7, count: 32)
    let client = SocketAddress.ipv4(0x0a00_0001, port: 50_000)
    let odcid = cid("8394c8f03e515708")
    let rscid = cid("5e00000000000001")
    let t0 = Instant(nanoseconds: 1_000_000_000_000)

    func later(_ ns: Int64) -> Instant { Instant(nanoseconds: t0.nanoseconds + ns) }

    func validate(_ tokens: AddressTokens, _ token: [UInt8], address: SocketAddress? = nil, destination: ConnectionID? = nil,
                  at now: Instant? = nil) -> AddressTokens.Validation {
        token.withUnsafeBytes { tokens.validate($0, address: address ?? client, destinationID: destination ?? rscid, now: now ?? t0) }
    }

    /// §8.1.2: a Retry token round-trips the original DCID and the Retry's SCID.
    func testRetryTokenRoundTrip() {
        let tokens = AddressTokens(secret: secret)
        let token = tokens.mintRetry(address: client, originalDestinationID: odcid, retrySourceID: rscid, now: t0)
        XCTAssertLessThanOrEqual(token.count, AddressTokens.maxLength)
        XCTAssertEqual(token[0], AddressTokens.Kind.retry.rawValue)
        XCTAssertEqual(validate(tokens, token), .retry(originalDestinationID: odcid, retrySourceID: rscid))
        // Another AddressTokens from the same secret (another worker) accepts it.
        XCTAssertEqual(validate(AddressTokens(secret: secret), token), .retry(originalDestinationID: odcid, retrySourceID: rscid))
    }

    /// §8.1.4: tokens of another secret (another supervisor generation) are invalid.
    func testTokenFromAnotherSecretIsInvalid() {
        let token = AddressTokens(secret: secret).mintRetry(address: client, originalDestinationID: odcid, retrySourceID: rscid, now: t0)
        XCTAssertEqual(validate(AddressTokens(secret: [UInt8](repeating: 8, count: 32)), token), .invalid)
    }

    /// §8.1.2 "... SHOULD ... expire": a Retry token lives seconds, up to the boundary.
    func testRetryTokenExpires() {
        let tokens = AddressTokens(secret: secret)
        let token = tokens.mintRetry(address: client, originalDestinationID: odcid, retrySourceID: rscid, now: t0)
        XCTAssertNotEqual(validate(tokens, token, at: later(AddressTokens.retryLifetime)), .invalid)
        XCTAssertEqual(validate(tokens, token, at: later(AddressTokens.retryLifetime + 1)), .invalid)
        XCTAssertEqual(validate(tokens, token, at: later(-1)), .invalid, "a token from the future")
    }

    /// §8.1.3: a NEW_TOKEN token lives 24 hours.
    func testNewTokenExpires() {
        let tokens = AddressTokens(secret: secret)
        let token = tokens.mintNewToken(address: client, now: t0)
        guard case .newToken = validate(tokens, token, at: later(AddressTokens.newTokenLifetime)) else { return XCTFail() }
        XCTAssertEqual(validate(tokens, token, at: later(AddressTokens.newTokenLifetime + 1)), .invalid)
    }

    /// §8.1.2: a Retry token is bound to the client's address and port.
    func testRetryTokenFromAnotherAddressIsInvalid() {
        let tokens = AddressTokens(secret: secret)
        let token = tokens.mintRetry(address: client, originalDestinationID: odcid, retrySourceID: rscid, now: t0)
        XCTAssertEqual(validate(tokens, token, address: .ipv4(0x0a00_0009, port: 50_000)), .invalid)
        XCTAssertEqual(validate(tokens, token, address: .ipv4(0x0a00_0001, port: 50_001)), .invalid)
        let v6 = SocketAddress(family: .ipv6, port: 50_000, high: 0x0a00_0001 << 32, low: 0)
        XCTAssertEqual(validate(tokens, token, address: v6), .invalid)
    }

    /// §17.2.5.2: the Initial after a Retry is addressed to the Retry's SCID.
    func testRetryTokenForAnotherDestinationIsInvalid() {
        let tokens = AddressTokens(secret: secret)
        let token = tokens.mintRetry(address: client, originalDestinationID: odcid, retrySourceID: rscid, now: t0)
        XCTAssertEqual(validate(tokens, token, destination: odcid), .invalid)
    }

    /// §8.1.3: "a client is likely to use a different port": a NEW_TOKEN
    /// token binds the address only.
    func testNewTokenBindsAddressNotPort() {
        let tokens = AddressTokens(secret: secret)
        let token = tokens.mintNewToken(address: client, now: t0)
        XCTAssertEqual(token[0], AddressTokens.Kind.newToken.rawValue)
        guard case .newToken = validate(tokens, token, address: .ipv4(0x0a00_0001, port: 1), destination: cid("0102030405060708"))
        else { return XCTFail("port must not matter") }
        XCTAssertEqual(validate(tokens, token, address: .ipv4(0x0a00_0002, port: 50_000)), .invalid)
    }

    /// Each token has its own nonce (reuse is tracked by it).
    func testTokensHaveDistinctNonces() {
        let tokens = AddressTokens(secret: secret)
        let a = tokens.mintNewToken(address: client, now: t0), b = tokens.mintNewToken(address: client, now: t0)
        XCTAssertNotEqual(a, b)
        XCTAssertNotEqual(validate(tokens, a), validate(tokens, b))
    }

    /// §8.1.4 integrity: flipping any byte, truncating, or extending fails.
    func testTamperedTokensAreInvalid() {
        let tokens = AddressTokens(secret: secret)
        let token = tokens.mintRetry(address: client, originalDestinationID: odcid, retrySourceID: rscid, now: t0)
        for i in token.indices {
            var t = token
            t[i] ^= 0x01
            XCTAssertEqual(validate(tokens, t), .invalid, "byte \(i)")
        }
        for n in 0..<token.count { XCTAssertEqual(validate(tokens, Array(token.prefix(n))), .invalid, "prefix \(n)") }
        XCTAssertEqual(validate(tokens, token + [0]), .invalid)
        XCTAssertEqual(validate(tokens, [UInt8](repeating: 0x52, count: AddressTokens.maxLength + 1)), .invalid)
    }

    /// Validation reads the token without changing it (it is part of the
    /// Initial's header, authenticated by packet protection).
    func testValidationLeavesTokenBytesAlone() {
        let tokens = AddressTokens(secret: secret)
        let token = tokens.mintNewToken(address: client, now: t0)
        var copy = token
        _ = copy.withUnsafeMutableBytes { tokens.validate(UnsafeRawBufferPointer($0), address: client, destinationID: rscid, now: t0) }
        XCTAssertEqual(copy, token)
    }
}
