/// Why a connection's PROXY header was refused. Every case means: close
/// the connection without calling the application.
public enum ProxyHeaderError: Equatable, Sendable, CustomStringConvertible {
    /// The connection does not start with `PROXY ` (v1) or the 12-byte v2
    /// signature (spec §2.1, §2.2).
    case missingSignature
    /// The connection ended before the header did.
    case truncated
    /// v1: no CRLF within 107 bytes (spec §2.1: "a receiver ... can read
    /// at most 107 bytes").
    case v1TooLong
    /// v1: a byte other than printable ASCII and SP in the line, a bare CR
    /// or LF, or a field that is not what its place requires (protocol,
    /// address of the protocol's family, canonical decimal port).
    case v1Malformed(V1Field)
    /// v2: the high nibble of the 13th byte is not 2 (spec §2.2).
    case v2BadVersion
    /// v2: the command is neither LOCAL nor PROXY (spec §2.2: "receivers
    /// must drop connections presenting unexpected values").
    case v2BadCommand
    /// v2: the family/protocol byte is not one of the seven defined values.
    case v2BadFamily
    /// v2: the length is over the configured cap.
    case v2TooLong
    /// v2: the length is shorter than the family's addresses (spec §2.2:
    /// 12 for INET, 36 for INET6, 216 for UNIX).
    case v2AddressLengthMismatch
    /// v2: a TLV's header or value runs past the end of the header (§2.2).
    case v2TLVOverrun
    /// v2: a PP2_TYPE_SSL TLV shorter than its fixed 5 bytes (§2.2.5).
    case v2MalformedSSL

    /// Which part of a v1 line was wrong.
    public enum V1Field: Equatable, Sendable {
        case character
        case lineEnding
        case protocolName
        case sourceAddress
        case destinationAddress
        case sourcePort
        case destinationPort
        case separator
    }

    public var description: String {
        switch self {
        case .missingSignature: return "no PROXY protocol signature"
        case .truncated: return "connection closed inside the PROXY header"
        case .v1TooLong: return "PROXY v1 line longer than 107 bytes"
        case .v1Malformed(let field): return "malformed PROXY v1 line (\(field))"
        case .v2BadVersion: return "PROXY v2 header with an unknown version"
        case .v2BadCommand: return "PROXY v2 header with an unknown command"
        case .v2BadFamily: return "PROXY v2 header with an unknown address family or protocol"
        case .v2TooLong: return "PROXY v2 header longer than allowed"
        case .v2AddressLengthMismatch: return "PROXY v2 length too short for its address family"
        case .v2TLVOverrun: return "PROXY v2 TLV runs past the header"
        case .v2MalformedSSL: return "PROXY v2 SSL TLV shorter than 5 bytes"
        }
    }
}
