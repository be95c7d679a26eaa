import Core
import QUIC

/// The connection IDs a worker issues: 8 bytes naming its UDP socket in the
/// SO_REUSEPORT group (QUICConnectionIDLayout), so the kernel's steering
/// program brings every datagram of the connection to this worker, with
/// random bits from the system's generator.
///
/// Stateless reset tokens (RFC 9000 §10.3.2) are HMAC-SHA256 of the ID
/// under a key derived from the secret all workers of a supervisor
/// generation share, so a token can be recomputed from the ID alone by any
/// of them: a worker that receives a packet for a connection it does not
/// know (another worker's, after a restart, or a connection long gone)
/// answers with the reset the client will recognise (QUICEndpoint).
final class ServerConnectionIDs: ConnectionIDSource {
    let socketIndex: Int
    private let resetKey: [UInt8]

    init(socketIndex: Int, secret: [UInt8]) {
        self.socketIndex = socketIndex
        let prk = secret.withUnsafeBytes { HKDF.extract(.sha256, salt: Array("peregrine stateless reset".utf8), inputKeyingMaterial: $0) }
        resetKey = HKDF.expandLabel(.sha256, secret: prk, label: "peregrine reset key", length: 32)
    }

    var length: Int { QUICConnectionIDLayout.length }

    func newConnectionID() -> ConnectionID {
        var bytes: (UInt64, UInt64) = (0, 0)
        return withUnsafeMutableBytes(of: &bytes) { b in
            QUICConnectionIDLayout.write(socketIndex: socketIndex, random: UInt64.random(in: 0...UInt64.max), into: b)
            return ConnectionID(UnsafeRawBufferPointer(rebasing: b[0..<QUICConnectionIDLayout.length]))!
        }
    }

    func resetToken(for id: ConnectionID) -> StatelessResetToken {
        let mac = id.withUnsafeBytes { HKDF.extract(.sha256, salt: resetKey, inputKeyingMaterial: $0) }
        return mac.withUnsafeBytes { StatelessResetToken(UnsafeRawBufferPointer(rebasing: $0[0..<16])) }
    }
}
