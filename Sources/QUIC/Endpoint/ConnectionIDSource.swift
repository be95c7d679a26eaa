// Where a server's connection IDs come from (RFC 9000 §5.1).

/// Mints this server's connection IDs (the worker encodes its routing in
/// them) and their stateless reset tokens (§10.3.2: derived with a static
/// key, so a token for an ID can be recomputed without state). The endpoint
/// asks for one at accept and one per NEW_CONNECTION_ID.
public protocol ConnectionIDSource: AnyObject {
    /// Every ID this source mints has this length (short headers need it).
    var length: Int { get }
    func newConnectionID() -> ConnectionID
    func resetToken(for id: ConnectionID) -> StatelessResetToken
}
