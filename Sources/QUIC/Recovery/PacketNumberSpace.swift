// Packet number spaces (RFC 9000 §12.3; RFC 9002 §3, A.2 kPacketNumberSpace).
//
// Loss detection runs per space because acknowledgments can only be read
// with the keys of the space; RTT and congestion control are per path and
// shared by all three (RFC 9002 §6). 0-RTT packets would share the
// application space, but this server never sends them.

public enum PacketNumberSpace: Int, Sendable, CaseIterable {
    case initial = 0, handshake = 1, application = 2
}
