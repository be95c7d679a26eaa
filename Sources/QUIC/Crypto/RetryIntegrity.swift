// Retry packets and their integrity tag (RFC 9000 §17.2.5; RFC 9001 §5.8;
// RFC 9369 §3.3.3).
//
// The tag is AEAD_AES_128_GCM with a fixed key and nonce per version over
// the Retry Pseudo-Packet — the client's original Destination Connection ID
// (length-prefixed) followed by the Retry packet without its tag — with an
// empty plaintext: it proves the Retry came from someone who saw the Initial.
// Retries are rare, so the key context is made per call (a shared one would
// need a lock under free-threaded workers).

import Core
import CTLS

public enum RetryPacket {
    static func keyAndNonce(_ version: QUICVersion) -> (key: [UInt8], nonce: [UInt8]) {
        if version == .v2 {
            return ([0x8f, 0xb4, 0xb0, 0x1b, 0x56, 0xac, 0x48, 0xe2, 0x60, 0xfb, 0xcb, 0xce, 0xad, 0x7c, 0xcc, 0x92],
                    [0xd8, 0x69, 0x69, 0xbc, 0x2d, 0x7c, 0x6d, 0x99, 0x90, 0xef, 0xb0, 0x4a])
        }
        return ([0xbe, 0x0c, 0x69, 0x0b, 0x9f, 0x66, 0x57, 0x5a, 0x1d, 0x76, 0x6b, 0x54, 0xe3, 0x68, 0xc8, 0x4e],
                [0x46, 0x15, 0x99, 0xd3, 0x5d, 0x63, 0x2b, 0xf2, 0x23, 0x98, 0x25, 0xbb])
    }

    public static func size(destinationID: ConnectionID, sourceID: ConnectionID, tokenLength: Int) -> Int {
        1 + 4 + 1 + destinationID.count + 1 + sourceID.count + tokenLength + PacketProtection.tagLength
    }

    /// Writes a Retry packet with its integrity tag and returns its size.
    /// `destinationID` is the client's Source Connection ID, `sourceID` the
    /// connection ID the server chose, `originalDestinationID` the
    /// Destination Connection ID of the client's Initial.
    @discardableResult
    public static func encode(version: QUICVersion, destinationID: ConnectionID, sourceID: ConnectionID,
                              token: UnsafeRawBufferPointer, originalDestinationID: ConnectionID, unusedBits: UInt8 = 0,
                              into out: UnsafeMutableRawBufferPointer) -> Int {
        let n = size(destinationID: destinationID, sourceID: sourceID, tokenLength: token.count)
        var w = WireWriter(out, size: n)
        // §17.2.5: the four low bits are unused.
        w.uint8(0xc0 | version.typeBits(.retry) << 4 | (unusedBits & 0x0f))
        w.uint32(version.rawValue)
        w.connectionID(destinationID)
        w.connectionID(sourceID)
        w.bytes(token)
        let body = UnsafeRawBufferPointer(rebasing: out[0..<(n - PacketProtection.tagLength)])
        let tag = integrityTag(retryWithoutTag: body, originalDestinationID: originalDestinationID, version: version)
        tag.withUnsafeBytes { w.bytes($0) }
        return w.finish()
    }

    /// Whether the tag of the Retry `header` (in `datagram`) verifies for
    /// the Initial the client sent to `originalDestinationID`.
    public static func verify(_ header: RetryHeader, in datagram: UnsafeRawBufferPointer,
                              originalDestinationID: ConnectionID) -> Bool {
        let body = UnsafeRawBufferPointer(rebasing: datagram[header.packet.start..<header.integrityTag.start])
        let tag = integrityTag(retryWithoutTag: body, originalDestinationID: originalDestinationID, version: header.version)
        return tag.elementsEqual(datagram.slice(header.integrityTag))
    }

    /// The 16-byte tag over the Retry Pseudo-Packet (RFC 9001 §5.8).
    public static func integrityTag(retryWithoutTag body: UnsafeRawBufferPointer, originalDestinationID odcid: ConnectionID,
                                    version: QUICVersion) -> [UInt8] {
        let (key, nonce) = keyAndNonce(version)
        guard let aead = AEADKey(suite: .aes128GCM, key: key, iv: nonce) else {
            preconditionFailure("libcrypto refused the Retry integrity key")
        }
        var tag = [UInt8](repeating: 0, count: PacketProtection.tagLength)
        let pseudoLength = 1 + odcid.count + body.count
        withUnsafeTemporaryAllocation(byteCount: pseudoLength, alignment: 1) { pseudo in
            pseudo[0] = UInt8(odcid.count)
            odcid.withUnsafeBytes { if $0.count > 0 { (pseudo.baseAddress! + 1).copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
            if body.count > 0 { (pseudo.baseAddress! + 1 + odcid.count).copyMemory(from: body.baseAddress!, byteCount: body.count) }
            let rc = tag.withUnsafeMutableBufferPointer { t in
                aead.iv.withUnsafeBufferPointer { n in
                    var empty: UInt8 = 0
                    return ctls_quic_aead_seal(aead.handle, n.baseAddress!, pseudo.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                               pseudoLength, &empty, 0, t.baseAddress!)
                }
            }
            precondition(rc == 0, "Retry integrity tag failed in libcrypto")
        }
        return tag
    }
}
