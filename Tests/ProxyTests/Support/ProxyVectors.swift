import Core
import Proxy

/// A v2 header: signature, version/command, family, length, then `body`.
func v2(command: UInt8 = 0x21, family: UInt8, body: [UInt8], length: Int? = nil) -> [UInt8] {
    let n = length ?? body.count
    return [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A, command, family,
            UInt8(n >> 8), UInt8(n & 0xFF)] + body
}

func tlv(_ type: UInt8, _ value: [UInt8]) -> [UInt8] {
    [type, UInt8(value.count >> 8), UInt8(value.count & 0xFF)] + value
}

func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }

func decode(_ bytes: [UInt8], endOfInput: Bool = false, maxV2Length: Int = 4096) -> ProxyHeaderResult {
    bytes.withUnsafeBytes { ProxyHeaderDecoder(maxV2Length: maxV2Length).decode($0, endOfInput: endOfInput) }
}

func header(_ bytes: [UInt8]) -> ProxyHeader? {
    if case .complete(let h) = decode(bytes) { return h }
    return nil
}

func text(_ bytes: [UInt8], _ span: ByteSpan) -> String {
    String(decoding: bytes[span.start..<span.end], as: UTF8.self)
}
