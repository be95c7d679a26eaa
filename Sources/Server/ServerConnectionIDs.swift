import Core
import QUIC

/// The connection IDs a worker issues: 8 bytes naming its UDP socket in the
/// SO_REUSEPORT group (QUICConnectionIDLayout), so the kernel's steering
/// program brings every datagram of the connection to this worker, with
/// random bits from the system's generator.
///
/// Stateless reset tokens (RFC 9000 §10.3.2) are HMAC-SHA256 of the ID
/// under a key drawn once per worker, so a token can be recomputed from the
/// ID alone. The key is per worker: a stateless reset sent by another
/// worker (for a connection it never saw) would not match; sending them is
/// issue "HTTP/3 at speed"'s, and the key will then come from the secret the
/// workers share for session tickets.
final class ServerConnectionIDs: ConnectionIDSource {
    let socketIndex: Int
    private let resetKey: [UInt8]

    init(socketIndex: Int) {
        self.socketIndex = socketIndex
        resetKey = (0..<32).map { _ in UInt8.random(in: 0...255) }
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
