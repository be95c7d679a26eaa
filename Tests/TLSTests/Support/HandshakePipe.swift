// Test helpers: a client and a server handshake joined in memory, CRYPTO
// bytes handed across per encryption level as a QUIC connection would
// (in order, reassembled), optionally cut into pieces.

import XCTest
import QUIC
import TLS

/// The certificate fixtures (self-signed P-256, valid for a century):
/// a: `a.example`, `*.a.test`; b: `b.example`, `*.b.test`;
/// c: `c.example` and 700 more names, a Certificate message over 16 KiB.
enum Fixture {
    static let directory: String = {
        var path = Array(#filePath.utf8)
        path.removeLast(path.count - (path.lastIndex(of: UInt8(ascii: "/"))! + 1))  // .../Support/
        path.removeLast()
        path.removeLast(path.count - (path.lastIndex(of: UInt8(ascii: "/"))! + 1))  // .../TLSTests/
        return String(decoding: path, as: UTF8.self) + "Fixtures/"
    }()

    static func path(_ name: String) -> String { directory + name }
    static func pair(_ name: String) -> TLSCertificatePair {
        TLSCertificatePair(certificate: path(name + ".pem"), key: path(name + ".key"))
    }
    static let secret: [UInt8] = Array(0..<32)
}

/// Distinct transport parameter bodies, so each side can be seen to get
/// the other's (their content is QUIC's business, not TLS's).
let clientParameters: [UInt8] = [0x01, 0x02, 0x43, 0x21, 0x0f, 0x04, 0xc1, 0x1e, 0x47, 0x00]
let serverParameters: [UInt8] = [0x00, 0x08, 0x5e, 0x4b, 0xe4, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x02, 0x45, 0xc0]

/// How CRYPTO bytes cross: whole, one byte per `receive`, or every piece
/// cut in two at `at` (when it is longer than that).
enum Cut {
    case whole
    case everyByte
    case at(Int)

    func pieces(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        switch self {
        case .whole: return [bytes[...]]
        case .everyByte: return bytes.indices.map { bytes[$0...$0] }
        case .at(let k): return k > 0 && k < bytes.count ? [bytes[..<k], bytes[k...]] : [bytes[...]]
        }
    }
}

enum Side: Equatable { case client, server }

/// What a run ended with.
enum Outcome: Equatable {
    case completed
    case failed(Side, HandshakeFailure)
}

/// A handshake message as TLS frames it (RFC 9846 §4): type and body.
struct Message: Equatable {
    var type: UInt8
    var body: [UInt8]
}

/// The messages in a level's CRYPTO bytes (whole messages only).
func messages(_ bytes: [UInt8]) -> [Message] {
    var out: [Message] = []
    var i = 0
    while i + 4 <= bytes.count {
        let n = Int(bytes[i + 1]) << 16 | Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
        guard i + 4 + n <= bytes.count else { break }
        out.append(Message(type: bytes[i], body: Array(bytes[(i + 4)..<(i + 4 + n)])))
        i += 4 + n
    }
    return out
}

/// TLS handshake message types (RFC 9846 §4).
enum HandshakeType {
    static let clientHello: UInt8 = 1
    static let serverHello: UInt8 = 2
    static let newSessionTicket: UInt8 = 4
    static let encryptedExtensions: UInt8 = 8
    static let certificate: UInt8 = 11
    static let certificateVerify: UInt8 = 15
    static let finished: UInt8 = 20
    static let keyUpdate: UInt8 = 24
}

final class HandshakePipe {
    let client: QUICHandshakeSession
    let server: QUICHandshakeSession
    /// Every event each side produced, in order.
    private(set) var clientEvents: [HandshakeEvent] = []
    private(set) var serverEvents: [HandshakeEvent] = []

    init(client: QUICHandshakeSession, server: QUICHandshakeSession) {
        self.client = client
        self.server = server
    }

    /// A client of `clientContext` against a fresh session of `serverContext`.
    convenience init(_ serverContext: QUICTLSContext, _ clientContext: QUICTLSClientContext,
                     serverName: String? = "a.example", alpn: [String] = ["h3"],
                     transportParameters: [UInt8]? = clientParameters, resuming: [UInt8]? = nil) throws {
        let client = try clientContext.makeSession(serverName: serverName, alpn: alpn,
                                                   transportParameters: transportParameters, resuming: resuming)
        self.init(client: client, server: serverContext.makeSession(transportParameters: serverParameters)!)
    }

    /// Hands each side's output to the other until neither has any.
    @discardableResult
    func run(cut: Cut = .whole) -> Outcome {
        while true {
            var moved = false
            while let event = client.nextEvent() {
                clientEvents.append(event)
                moved = true
                if case .send(let level, let bytes) = event {
                    do throws(HandshakeFailure) { try deliver(bytes, at: level, to: server, cut: cut) } catch { return .failed(.server, error) }
                }
            }
            while let event = server.nextEvent() {
                serverEvents.append(event)
                moved = true
                if case .send(let level, let bytes) = event {
                    do throws(HandshakeFailure) { try deliver(bytes, at: level, to: client, cut: cut) } catch { return .failed(.client, error) }
                }
            }
            if !moved { return .completed }
        }
    }

    private func deliver(_ bytes: [UInt8], at level: EncryptionLevel, to peer: QUICHandshakeSession,
                         cut: Cut) throws(HandshakeFailure) {
        for piece in cut.pieces(bytes) { try peer.receive(Array(piece), at: level) }
    }

    /// The bytes a side sent at `level`, concatenated.
    func sent(by side: Side, at level: EncryptionLevel) -> [UInt8] {
        var out: [UInt8] = []
        for case .send(let l, let bytes) in side == .client ? clientEvents : serverEvents where l == level {
            out += bytes
        }
        return out
    }

    /// The secret a side announced for `level` and `direction`.
    func secret(of side: Side, _ level: EncryptionLevel, _ direction: SecretDirection) -> (CipherSuite, [UInt8])? {
        for case .secret(let l, let d, let suite, let bytes) in side == .client ? clientEvents : serverEvents
        where l == level && d == direction {
            return (suite, bytes)
        }
        return nil
    }

    func completed(_ side: Side) -> Bool {
        (side == .client ? clientEvents : serverEvents).contains(.complete)
    }
}

extension QUICHandshakeSession {
    func receive(_ bytes: [UInt8], at level: EncryptionLevel) throws(HandshakeFailure) {
        var failure: HandshakeFailure?
        bytes.withUnsafeBytes { b in
            do throws(HandshakeFailure) { try receive(b, at: level) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Every event still queued.
    func drain() -> [HandshakeEvent] {
        var out: [HandshakeEvent] = []
        while let e = nextEvent() { out.append(e) }
        return out
    }
}
