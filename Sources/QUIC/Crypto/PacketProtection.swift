// Packet protection (RFC 9001 §5.3, §5.4), in place.
//
// Sending: the caller writes the header (packet number in clear, see
// PacketHeaderEncoder) and the plaintext payload, leaving `tagLength` bytes
// after it; `seal` encrypts the payload with the header as associated data,
// appends the tag, then masks the first byte's low bits and the packet
// number with a mask computed from a sample of the ciphertext (§5.4.1):
//
//   pn_offset = header length - pn_length; sample_offset = pn_offset + 4
//   mask = header_protection(hp_key, ciphertext sample of 16 bytes)
//   first byte ^= mask[0] & (long header ? 0x0f : 0x1f)
//   packet number bytes ^= mask[1 ... pn_length]
//
// Receiving goes the other way in two steps, because the key phase bit of a
// 1-RTT packet (under header protection) decides which AEAD key to try
// (§6.3): `removeHeaderProtection` recovers the first byte and the full
// packet number (Appendix A.3), then `decryptPayload` authenticates and
// decrypts. Either failing drops the packet (§5.5: "... MUST NOT generate a
// connection error"); decryption works in place, so a failed attempt leaves
// the payload unusable. Reserved bits that are not zero once both
// protections are off are a PROTOCOL_VIOLATION (RFC 9000 §17.2, §17.3.1).
// The nonce is the IV XORed with the packet number, left-padded (§5.3).

import Core
import CTLS

public enum PacketProtection {
    /// The AEAD tag length of every QUIC suite (§5.3).
    public static let tagLength = 16
    /// §5.4.2: the sample starts 4 bytes after the packet number offset.
    public static let sampleOffset = 4
    public static let sampleLength = 16

    /// The smallest payload (frames) that leaves room for the sample with a
    /// `packetNumberLength`-byte packet number (§5.4.2: pad when shorter).
    public static func minimumPayloadLength(packetNumberLength: Int) -> Int {
        max(0, sampleOffset - packetNumberLength)
    }

    /// Encrypts `packet[headerLength ..< headerLength + payloadLength]` in
    /// place, writes the tag after it and applies header protection.
    /// - Returns: the protected packet's length.
    @discardableResult
    public static func seal(_ packet: UnsafeMutableRawBufferPointer, headerLength: Int, payloadLength: Int,
                            packetNumber: UInt64, keys: PacketKeys) -> Int {
        let total = headerLength + payloadLength + tagLength
        precondition(packet.count >= total, "no room for the AEAD tag")
        let first = packet[0]
        let pnLength = Int(first & 0x03) + 1
        let pnOffset = headerLength - pnLength
        precondition(pnOffset + sampleOffset + sampleLength <= total, "payload too short for the header protection sample")
        let base = packet.baseAddress!.assumingMemoryBound(to: UInt8.self)
        var nonce = keys.aead.nonce(packetNumber)
        let rc = withUnsafeBytes(of: &nonce) { n in
            ctls_quic_aead_seal(keys.aead.handle, n.baseAddress!.assumingMemoryBound(to: UInt8.self), base, headerLength,
                                base + headerLength, payloadLength, base + headerLength + payloadLength)
        }
        precondition(rc == 0, "AEAD seal failed in libcrypto")
        applyMask(packet, pnOffset: pnOffset, pnLength: pnLength, keys.headerProtection)
        return total
    }

    /// The header of a received packet once header protection is off.
    public struct UnprotectedHeader: Equatable, Sendable {
        public var firstByte: UInt8
        public var packetNumber: UInt64
        public var packetNumberLength: Int
        /// Offset of the ciphertext in the packet (= AAD length).
        public var payloadOffset: Int

        public var isLongHeader: Bool { firstByte & 0x80 != 0 }
        /// 1-RTT only (§17.3.1).
        public var keyPhase: Bool { firstByte & 0x04 != 0 }
        /// §17.2: long header bits 0x0c; §17.3.1: short header bits 0x18.
        public var reservedBitsAreZero: Bool { firstByte & (isLongHeader ? 0x0c : 0x18) == 0 }
    }

    /// Removes header protection from `packet` (which starts at the first
    /// byte and ends where the packet ends) and recovers the packet number.
    public static func removeHeaderProtection(_ packet: UnsafeMutableRawBufferPointer, packetNumberOffset pnOffset: Int,
                                              largestReceived: UInt64?, key: HeaderProtectionKey) throws(PacketDrop) -> UnprotectedHeader {
        // §5.4.2: a packet too short to sample is dropped; it also needs a
        // whole tag after the packet number.
        // (Which also leaves room for the tag after any packet number length.)
        guard pnOffset >= 1, pnOffset + sampleOffset + sampleLength <= packet.count else { throw .sampleTooShort }
        let mask = key.mask(sample: packet.baseAddress! + pnOffset + sampleOffset)
        let first = packet[0] ^ (mask.0 & (packet[0] & 0x80 != 0 ? 0x0f : 0x1f))
        packet[0] = first
        let pnLength = Int(first & 0x03) + 1
        var truncated: UInt64 = 0
        withUnsafeBytes(of: mask) { m in
            for i in 0..<pnLength {
                packet[pnOffset + i] ^= m[1 + i]
                truncated = truncated << 8 | UInt64(packet[pnOffset + i])
            }
        }
        let pn = PacketNumber.decode(truncated: truncated, length: pnLength, largestReceived: largestReceived)
        return UnprotectedHeader(firstByte: first, packetNumber: pn, packetNumberLength: pnLength,
                                 payloadOffset: pnOffset + pnLength)
    }

    /// Authenticates and decrypts the payload in place.
    /// - Returns: the plaintext frames' span in `packet`.
    public static func decryptPayload(_ packet: UnsafeMutableRawBufferPointer, header: UnprotectedHeader,
                                      key: AEADKey) throws(PacketDrop) -> ByteSpan {
        let ciphertextLength = packet.count - header.payloadOffset - tagLength
        guard ciphertextLength >= 0 else { throw .sampleTooShort }
        let base = packet.baseAddress!.assumingMemoryBound(to: UInt8.self)
        var nonce = key.nonce(header.packetNumber)
        let rc = withUnsafeBytes(of: &nonce) { n in
            ctls_quic_aead_open(key.handle, n.baseAddress!.assumingMemoryBound(to: UInt8.self), base, header.payloadOffset,
                                base + header.payloadOffset, ciphertextLength, base + header.payloadOffset + ciphertextLength)
        }
        guard rc == 0 else { throw .decryptionFailed }
        return ByteSpan(offset: header.payloadOffset, length: ciphertextLength)
    }

    /// Why `open` did not produce frames.
    public enum OpenError: Error, Equatable, Sendable {
        /// Drop the packet silently.
        case dropped(PacketDrop)
        /// Close the connection (reserved bits set, §17.2).
        case connection(QUICError)
    }

    /// A received, authenticated packet.
    public struct Opened: Equatable, Sendable {
        public var header: UnprotectedHeader
        /// The frames, in `packet`.
        public var payload: ByteSpan
    }

    /// Both steps with one set of keys (Initial, Handshake, or 1-RTT when
    /// the caller already knows the key phase).
    public static func open(_ packet: UnsafeMutableRawBufferPointer, packetNumberOffset: Int, largestReceived: UInt64?,
                            keys: PacketKeys) throws(OpenError) -> Opened {
        let header: UnprotectedHeader
        let payload: ByteSpan
        do {
            header = try removeHeaderProtection(packet, packetNumberOffset: packetNumberOffset,
                                                largestReceived: largestReceived, key: keys.headerProtection)
            payload = try decryptPayload(packet, header: header, key: keys.aead)
        } catch {
            throw .dropped(error)
        }
        // RFC 9000 §17.2: "An endpoint MUST treat receipt of a packet that
        // has a non-zero value for these bits after removing both packet and
        // header protection as a connection error of type PROTOCOL_VIOLATION."
        guard header.reservedBitsAreZero else { throw .connection(.reservedBitsSet) }
        return Opened(header: header, payload: payload)
    }

    private static func applyMask(_ packet: UnsafeMutableRawBufferPointer, pnOffset: Int, pnLength: Int,
                                  _ key: HeaderProtectionKey) {
        let mask = key.mask(sample: packet.baseAddress! + pnOffset + sampleOffset)
        packet[0] ^= mask.0 & (packet[0] & 0x80 != 0 ? 0x0f : 0x1f)
        withUnsafeBytes(of: mask) { m in
            for i in 0..<pnLength { packet[pnOffset + i] ^= m[1 + i] }
        }
    }
}
