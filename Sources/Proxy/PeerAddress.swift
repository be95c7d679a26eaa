/// The immediate peer of a connection, as the socket reports it: an IP
/// address (from `sockaddr_in`/`sockaddr_in6`, see `IPAddress(ipv4Bytes:)`
/// and `IPAddress(ipv6Bytes:)`) or a Unix-domain socket.
public enum PeerAddress: Hashable, Sendable {
    case ip(IPAddress)
    /// An `AF_UNIX` peer: trusted only through the `unix` item of a list.
    case unix
}
