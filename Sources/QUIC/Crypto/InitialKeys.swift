// Initial packet protection (RFC 9001 §5.2; RFC 9369 §3.3.1).
//
// Initial packets are protected with keys anyone can derive from the
// client's first Destination Connection ID — they hide nothing from an
// observer but keep the handshake from being tampered with off-path:
//
//   initial_secret = HKDF-Extract(initial_salt, client_dst_connection_id)
//   client_initial_secret = HKDF-Expand-Label(initial_secret, "client in", "", 32)
//   server_initial_secret = HKDF-Expand-Label(initial_secret, "server in", "", 32)
//
// with AEAD_AES_128_GCM and SHA-256, and a salt per version.

public enum InitialKeys {
    /// RFC 9001 §5.2.
    public static let saltV1: [UInt8] = [
        0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17,
        0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a,
    ]
    /// RFC 9369 §3.3.1.
    public static let saltV2: [UInt8] = [
        0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93,
        0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb, 0xf9, 0xbd, 0x2e, 0xd9,
    ]

    public static func salt(_ version: QUICVersion) -> [UInt8] { version == .v2 ? saltV2 : saltV1 }

    /// The client's and the server's Initial secrets.
    public static func secrets(destinationID: ConnectionID, version: QUICVersion) -> (client: [UInt8], server: [UInt8]) {
        let initial = destinationID.withUnsafeBytes { HKDF.extract(.sha256, salt: salt(version), inputKeyingMaterial: $0) }
        return (HKDF.expandLabel(.sha256, secret: initial, label: "client in", length: 32),
                HKDF.expandLabel(.sha256, secret: initial, label: "server in", length: 32))
    }

    /// The Initial keys of both directions for the client's first
    /// Destination Connection ID.
    public static func derive(destinationID: ConnectionID, version: QUICVersion) -> (client: PacketKeys, server: PacketKeys) {
        let s = secrets(destinationID: destinationID, version: version)
        // Discarded with the Initial space (RFC 9001 §4.9.1): on the handshake heap.
        return (PacketKeys(suite: .aes128GCM, secret: s.client, version: version, updatable: false),
                PacketKeys(suite: .aes128GCM, secret: s.server, version: version, updatable: false))
    }
}
