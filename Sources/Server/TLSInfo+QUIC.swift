import Gateway
import QUIC
import TLS

extension TLSInfo {
    /// What the application learns of a QUIC connection's TLS (always TLS
    /// 1.3, RFC 9001 §4.2): the version and the negotiated suite. Client
    /// certificates are not requested over QUIC.
    static func quic(_ connection: QUICConnection) -> TLSInfo {
        let suite = (connection.cryptoHandshake as? QUICHandshakeSession)?.cipherSuite ?? .aes128GCM
        let name: String
        switch suite {
        case .aes128GCM: name = "TLS_AES_128_GCM_SHA256"
        case .aes256GCM: name = "TLS_AES_256_GCM_SHA384"
        case .chacha20Poly1305: name = "TLS_CHACHA20_POLY1305_SHA256"
        }
        return TLSInfo(version: 0x0304, versionName: "TLSv1.3", cipherSuite: Int(suite.rawValue), cipherName: name,
                       serverCertificatePEM: nil, client: nil)
    }
}
