// qlog on request (`--quic-log DIR`): the worker gives the endpoint a
// factory, and each connection made afterwards asks it for its trace (the
// original Destination Connection ID names the trace, RFC 9000 §7.3). No
// factory, no trace: the connection's hooks see nil.

import Core

extension QUICEndpoint {
    /// Makes the qlog trace of a new connection (its original Destination
    /// Connection ID, the time), or nil for none.
    public var makeQLogTrace: ((ConnectionID, Instant) -> QLogTrace?)? {
        get { context.makeQLogTrace }
        set { context.makeQLogTrace = newValue }
    }
}
