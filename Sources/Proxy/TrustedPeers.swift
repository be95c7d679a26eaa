/// A trusted-address list: `--forwarded-allow-ips` and `--proxy-allow-ips`.
///
/// Syntax (parsed once at start-up):
///
///     list = item *( "," item )        ; whitespace around items is ignored,
///                                      ; empty items are skipped
///     item = "*"                       ; every peer and every forwarded node
///          / "unix"                    ; Unix-domain socket peers
///          / IPv4address [ "/" 0-32 ]  ; RFC 3986 §3.2.2 dotted quad
///          / IPv6address [ "/" 0-128 ] ; any RFC 4291 §2.2 text form
///
/// An address without a prefix length is a /32 or /128. Bits past the
/// prefix are ignored (`10.1.2.3/8` is `10.0.0.0/8`), as Python's
/// `ip_network(strict=False)` does. A malformed item is a start-up error
/// that names the item.
///
/// Compact form: every block becomes a 128-bit prefix and mask, IPv4 blocks
/// inside `::ffff:0:0/96` (so an IPv4 rule matches a dual-stack socket's
/// mapped peer, and `::/0` covers IPv4 peers as well); a match is two ANDs
/// and two compares per block, with no parsing and no allocation.
public struct TrustedPeers: Equatable, Sendable {
    /// `*`: every peer, every forwarded node (`unknown` and obfuscated ones too).
    public private(set) var trustsEveryone = false
    /// `unix`: peers on a Unix-domain socket.
    public private(set) var trustsUnix = false
    private var blocks: [AddressBlock] = []

    struct AddressBlock: Equatable, Sendable {
        var prefixHigh: UInt64, prefixLow: UInt64
        var maskHigh: UInt64, maskLow: UInt64
    }

    /// Trusts nobody (the default of `--forwarded-allow-ips`).
    public init() {}

    /// Parses a list such as `"127.0.0.1, 10.0.0.0/8, ::1, unix"`.
    public init(parsing list: String) throws(TrustedPeersError) {
        var copy = list
        let bytes = copy.withUTF8 { Array($0) }
        var start = 0
        while start <= bytes.count {
            var end = start
            while end < bytes.count && bytes[end] != 0x2C { end += 1 }
            var a = start
            var b = end
            while a < b && Self.isSpace(bytes[a]) { a += 1 }
            while b > a && Self.isSpace(bytes[b - 1]) { b -= 1 }
            if a < b { try add(Array(bytes[a..<b])) }
            start = end + 1
        }
    }

    /// True when no peer is trusted.
    public var isEmpty: Bool { !trustsEveryone && !trustsUnix && blocks.isEmpty }

    /// The socket peer is on the list.
    @inlinable
    public func contains(_ peer: PeerAddress) -> Bool {
        switch peer {
        case .unix: return trustsUnix || trustsEveryone
        case .ip(let address): return contains(address)
        }
    }

    /// The address lies in a listed block (or the list is `*`).
    public func contains(_ address: IPAddress) -> Bool {
        if trustsEveryone { return true }
        for b in blocks where address.high & b.maskHigh == b.prefixHigh && address.low & b.maskLow == b.prefixLow {
            return true
        }
        return false
    }

    /// A textual address as it appears in a header: IPv4, IPv6, or IPv6 in
    /// brackets. Anything else is trusted only by `*`.
    public func contains(addressText text: UnsafeRawBufferPointer) -> Bool {
        if trustsEveryone { return true }
        var inner = text
        if text.count >= 2 && text[0] == 0x5B && text[text.count - 1] == 0x5D {
            inner = UnsafeRawBufferPointer(rebasing: text[1..<(text.count - 1)])
            guard let address = IPAddress.parseIPv6(inner) else { return false }
            return contains(address)
        }
        guard let address = IPAddress.parse(inner) else { return false }
        return contains(address)
    }

    private mutating func add(_ item: [UInt8]) throws(TrustedPeersError) {
        let text = String(decoding: item, as: UTF8.self)
        if item == [0x2A] {
            trustsEveryone = true
            return
        }
        if item.count == 4 && item.withUnsafeBytes({ $0.equalsIgnoringCase("unix") }) {
            trustsUnix = true
            return
        }
        let slash = item.firstIndex(of: 0x2F)
        let addressPart = Array(item[..<(slash ?? item.count)])
        guard let address = addressPart.withUnsafeBytes({ IPAddress.parse($0) }) else {
            throw TrustedPeersError(item: text, problem: .notAnAddress)
        }
        // IPv4 lengths count from the start of the IPv4 part of the mapped form.
        let family = address.isIPv4 ? 32 : 128
        var length = family
        if let slash {
            let digits = item[(slash + 1)...]
            guard !digits.isEmpty, digits.count <= 3, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  digits.count == 1 || digits.first != 0x30 else {
                throw TrustedPeersError(item: text, problem: .badPrefixLength)
            }
            length = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            guard length <= family else { throw TrustedPeersError(item: text, problem: .badPrefixLength) }
        }
        let bits = address.isIPv4 ? 96 + length : length
        let maskHigh: UInt64 = bits >= 64 ? ~0 : (bits == 0 ? 0 : ~0 << UInt64(64 - bits))
        let maskLow: UInt64 = bits <= 64 ? 0 : (bits == 128 ? ~0 : ~0 << UInt64(128 - bits))
        let block = AddressBlock(prefixHigh: address.high & maskHigh, prefixLow: address.low & maskLow,
                                 maskHigh: maskHigh, maskLow: maskLow)
        if !blocks.contains(block) { blocks.append(block) }
    }

    private static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }
}

/// A `--forwarded-allow-ips` / `--proxy-allow-ips` item that is not an
/// address, a CIDR block, `unix` or `*`.
public struct TrustedPeersError: Error, Equatable, CustomStringConvertible {
    public enum Problem: Equatable, Sendable {
        case notAnAddress
        case badPrefixLength
    }
    /// The item as written (whitespace trimmed).
    public let item: String
    public let problem: Problem

    public var description: String {
        switch problem {
        case .notAnAddress: return "'\(item)' is not an IP address, a CIDR block, 'unix' or '*'"
        case .badPrefixLength: return "'\(item)' has an invalid prefix length (0-32 for IPv4, 0-128 for IPv6)"
        }
    }
}
