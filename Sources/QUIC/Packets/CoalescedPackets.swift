// Splitting a datagram into its coalesced packets (RFC 9000 §12.2).
//
// "The receiver of coalesced QUIC packets MUST individually process each
// QUIC packet and separately acknowledge them ... If any QUIC packet in a
// datagram is discarded ... it MUST NOT discard other packets." Long headers
// of Initial, 0-RTT and Handshake packets carry a Length, so the next packet
// starts after it; every other kind (short header, Retry, Version
// Negotiation, an unknown version) runs to the end of the datagram. When a
// header cannot be parsed its end is unknown, so the rest of the datagram is
// dropped. "Senders MUST NOT coalesce QUIC packets with different connection
// IDs into a single UDP datagram. Receivers SHOULD ignore any subsequent
// packets with a different Destination Connection ID than the first packet in
// the datagram": such packets are reported as dropped.
//
//     var packets = CoalescedPackets(datagram, shortHeaderIDLength: 8)
//     while let item = packets.next() {
//         switch item {
//         case .packet(let header): ...   // unprotect header.packet
//         case .dropped(let why, let bytes): ...
//         }
//     }

import Core

/// Iterates the packets of one datagram; see the file comment.
public struct CoalescedPackets {
    public enum Item: Equatable, Sendable {
        case packet(PacketHeader)
        /// `bytes` of the datagram are not processed, for `reason`.
        case dropped(PacketDrop, ByteSpan)
    }

    public let datagram: UnsafeRawBufferPointer
    public let shortHeaderIDLength: Int
    private var position = 0
    private var firstDestination: ConnectionID?

    public init(_ datagram: UnsafeRawBufferPointer, shortHeaderIDLength: Int) {
        self.datagram = datagram
        self.shortHeaderIDLength = shortHeaderIDLength
    }

    /// Bytes not yet split off.
    public var remaining: Int { datagram.count - position }

    public mutating func next() -> Item? {
        guard position < datagram.count else { return nil }
        let header: PacketHeader
        do {
            header = try PacketHeader.decode(datagram, at: position, shortHeaderIDLength: shortHeaderIDLength)
        } catch {
            let rest = ByteSpan(offset: position, length: datagram.count - position)
            position = datagram.count
            return .dropped(error, rest)
        }
        let span = header.packet
        position = span.end
        let destination: ConnectionID? = switch header {
        case .long(let h): h.destinationID
        case .short(let h): h.destinationID
        case .retry(let h): h.destinationID
        case .versionNegotiation, .unsupportedVersion: nil
        }
        if let destination {
            if let firstDestination, firstDestination != destination {
                return .dropped(.differentDestinationID, span)
            }
            firstDestination = destination
        }
        return .packet(header)
    }
}
