// A scripted TLS stand-in for connection tests: fixed secrets per level,
// a few fake handshake messages (type byte, 2-byte length, body).
//
//   client  --Initial: ClientHello(body = client transport parameters)-->  server
//   server  --Initial: ServerHello; Handshake: EncryptedExtensions+Certificate+Finished-->
//   client  --Handshake: Finished-->  server: complete (+ a NewSessionTicket at 1-RTT)
//
// A message of type `failType` makes `receive` fail with alert 40
// (handshake_failure), as a real TLS stack refusing a hello would.

import Core
@testable import QUIC

enum FakeTLS {
    static let clientHello: UInt8 = 1
    static let serverHello: UInt8 = 2
    static let newSessionTicket: UInt8 = 4
    static let encryptedExtensions: UInt8 = 8
    static let certificate: UInt8 = 11
    static let finished: UInt8 = 20
    static let failType: UInt8 = 0xee

    static let handshakeClientSecret = [UInt8](repeating: 0x11, count: 32)
    static let handshakeServerSecret = [UInt8](repeating: 0x22, count: 32)
    static let applicationClientSecret = [UInt8](repeating: 0x33, count: 32)
    static let applicationServerSecret = [UInt8](repeating: 0x44, count: 32)

    static func message(_ type: UInt8, _ body: [UInt8]) -> [UInt8] {
        [type, UInt8(body.count >> 8), UInt8(body.count & 0xff)] + body
    }
}

final class FakeCryptoHandshake: CryptoHandshake {
    private(set) var serverTransportParameters: [UInt8]
    /// How often `replaceLocalTransportParameters` was called.
    private(set) var replacedParameters = 0
    var suite = CipherSuite.aes128GCM
    /// Size of the fake Certificate message (large ones span packets).
    var certificateSize = 900
    var sendsTicket = true
    private var buffers: [EncryptionLevel: [UInt8]] = [:]
    private var events: [HandshakeEvent] = []
    private(set) var receivedLevels: [EncryptionLevel] = []
    private(set) var peerTransportParameters: [UInt8]?
    private(set) var negotiatedProtocol: [UInt8]?
    var isResumed: Bool { false }
    /// Whether the connection released the handshake, and whether events
    /// were still queued then (a bug: the tickets would be lost).
    private(set) var released = false
    private(set) var releasedWithEventsQueued = false

    init(serverTransportParameters: [UInt8]) {
        self.serverTransportParameters = serverTransportParameters
    }

    /// The fake ClientHello is type, 2-byte length, transport parameters.
    func peekHelloTransportParameters(_ bytes: UnsafeRawBufferPointer) -> ClientHelloPeek {
        guard bytes.count >= 3 else { return .needMoreBytes }
        guard bytes[0] == FakeTLS.clientHello else { return .notFound }
        let length = Int(bytes[1]) << 8 | Int(bytes[2])
        return bytes.count >= 3 + length ? .transportParameters(3..<(3 + length)) : .needMoreBytes
    }

    func replaceLocalTransportParameters(_ encoded: [UInt8]) {
        serverTransportParameters = encoded
        replacedParameters += 1
    }

    func releaseAfterHandshake() {
        if !events.isEmpty { releasedWithEventsQueued = true }
        released = true
    }

    func receive(_ bytes: UnsafeRawBufferPointer, at level: EncryptionLevel) throws(HandshakeFailure) {
        receivedLevels.append(level)
        // As QUICHandshakeSession after its release (RFC 9001 §4.1.3).
        if released { throw HandshakeFailure(alert: 10, reason: "CRYPTO data after the handshake") }
        buffers[level, default: []].append(contentsOf: bytes)
        while let b = buffers[level], b.count >= 3 {
            let length = Int(b[1]) << 8 | Int(b[2])
            guard b.count >= 3 + length else { return }
            let type = b[0]
            let body = Array(b[3..<(3 + length)])
            buffers[level] = Array(b[(3 + length)...])
            try handle(type, body, level)
        }
    }

    private func handle(_ type: UInt8, _ body: [UInt8], _ level: EncryptionLevel) throws(HandshakeFailure) {
        switch (level, type) {
        case (.initial, FakeTLS.clientHello):
            peerTransportParameters = body
            negotiatedProtocol = Array("h3".utf8)
            events.append(.send(.initial, FakeTLS.message(FakeTLS.serverHello, [UInt8](repeating: 0x5e, count: 90))))
            events.append(.secret(.handshake, .write, suite, FakeTLS.handshakeServerSecret))
            events.append(.secret(.handshake, .read, suite, FakeTLS.handshakeClientSecret))
            let flight = FakeTLS.message(FakeTLS.encryptedExtensions, serverTransportParameters)
                + FakeTLS.message(FakeTLS.certificate, [UInt8](repeating: 0xce, count: certificateSize))
                + FakeTLS.message(FakeTLS.finished, [UInt8](repeating: 0xf1, count: 32))
            events.append(.send(.handshake, flight))
            events.append(.secret(.application, .write, suite, FakeTLS.applicationServerSecret))
            events.append(.secret(.application, .read, suite, FakeTLS.applicationClientSecret))
        case (.handshake, FakeTLS.finished):
            events.append(.complete)
            if sendsTicket { events.append(.send(.application, FakeTLS.message(FakeTLS.newSessionTicket, [1, 2, 3, 4]))) }
        case (_, FakeTLS.failType):
            throw HandshakeFailure(alert: 40, reason: "scripted failure")
        default:
            throw HandshakeFailure(alert: 10, reason: "unexpected message")
        }
    }

    func nextEvent() -> HandshakeEvent? {
        events.isEmpty ? nil : events.removeFirst()
    }
}

/// Connection IDs 0x5e 0x00.. counting up, 8 bytes; reset tokens derived
/// from the ID (so a test can recompute them).
final class TestConnectionIDs: ConnectionIDSource {
    var length: Int { 8 }
    private var counter: UInt64 = 0

    func newConnectionID() -> ConnectionID {
        counter += 1
        let v = 0x5e00_0000_0000_0000 | counter
        return ConnectionID((0..<8).map { UInt8(truncatingIfNeeded: v >> (56 - 8 * UInt64($0))) })!
    }

    func resetToken(for id: ConnectionID) -> StatelessResetToken {
        let b = id.bytes
        var h: UInt64 = 0
        for x in b { h = h << 8 | UInt64(x) }
        return StatelessResetToken(high: h ^ 0xa5a5_a5a5_a5a5_a5a5, low: ~h)
    }
}
