import Core

/// The transport side of one WebTransport session (an HTTP/3 extended
/// CONNECT, draft-ietf-webtrans-http3 and draft-02), as the ASGI gateway
/// sees it: the application answers the CONNECT (accept, close, reject),
/// then streams and datagrams go both ways. Nothing here blocks; progress
/// comes back through `WebTransportDelegate`. Stream IDs are QUIC's.
public protocol WebTransportExchange: AnyObject {
    func attachWebTransport(_ delegate: WebTransportDelegate)
    /// 200 (with `sec-webtransport-http3-draft: draft02` for draft-02
    /// clients), the subprotocol if any, and the application's fields.
    func acceptSession(subprotocol: UnsafeRawBufferPointer?, fields: UnsafeBufferPointer<ResponseField>) -> SendOutcome
    /// Refuses the CONNECT with `status` (before accept only); the stream ends.
    func rejectSession(status: Int, fields: UnsafeBufferPointer<ResponseField>) -> SendOutcome
    /// After accept: the close capsule with `code` and `reason`, then FIN.
    func closeSession(code: UInt32, reason: UnsafeRawBufferPointer) -> SendOutcome
    /// Bytes on our side of stream `id` (a peer-opened unidirectional
    /// stream: on the server stream paired with it); `end` finishes it.
    /// nil: `id` is no stream of this session.
    func sendStream(_ id: UInt64, _ bytes: UnsafeRawBufferPointer, end: Bool) -> SendOutcome?
    /// RESET_STREAM / STOP_SENDING with a WebTransport application code;
    /// false: `id` is no stream of this session.
    func resetStream(_ id: UInt64, code: UInt32) -> Bool
    func stopStream(_ id: UInt64, code: UInt32) -> Bool
    /// Opens a server stream; the answer comes as `streamOpened` (now or
    /// once the peer allows more streams). False: the session cannot open
    /// streams (not accepted, or over).
    func openStream(unidirectional: Bool, token: Int) -> Bool
    /// A datagram; false if it was dropped (too large, queue full, not
    /// negotiated) — datagrams are unreliable, so that is no error.
    func sendDatagram(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// The largest datagram payload the application may send now.
    var maxDatagramSize: Int { get }
    /// Flow control from the application's side: stop reading the
    /// session's streams while its queue is full, resume when it has room.
    func pauseReading()
    func resumeReading()
}

public protocol WebTransportDelegate: AnyObject {
    /// Bytes of stream `id` in order (valid for the call); `end` with the last.
    func streamReceived(_ id: UInt64, _ bytes: UnsafeRawBufferPointer, end: Bool, unidirectional: Bool, openedByPeer: Bool)
    /// The peer reset its side (RESET_STREAM) or asked us to stop
    /// (STOP_SENDING); `code` is the WebTransport application code.
    func streamReset(_ id: UInt64, code: UInt32)
    func streamStopped(_ id: UInt64, code: UInt32)
    /// A stream asked for with `openStream` is open.
    func streamOpened(_ id: UInt64, unidirectional: Bool, token: Int)
    /// A datagram; false if it was dropped (the application's queue is
    /// full: datagrams are unreliable, so they are not held).
    func datagramReceived(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// The peer or the server asks the session to finish up.
    func sessionDraining()
    /// Pending output drained below the low-water mark.
    func outputDrained()
    /// The session is over (the peer's close capsule, its FIN or reset, or
    /// the connection's end); the transport never calls again.
    func sessionEnded(code: UInt32, reason: UnsafeRawBufferPointer)
}
