/// The closing handshake (RFC 6455 §5.5.1, §7.1.2–§7.1.5) from the
/// server's side, as decisions for the driver.
///
/// Theory of operation. Four states; every transition is in the three
/// `switch`es below and nothing else can change the state:
///
///               sendClose                  receiveClose: close TCP
///     open ────────────────────> closeSent ───────────────────────> closed
///      │ │                            │  failConnection: close TCP    ▲
///      │ │                            └───────────────────────────────┤
///      │ │ receiveClose(code)           sendClose, failConnection:    │
///      │ └───────────────────> closeReceived ─────────────────────────┤
///      │   (reply: echo code)           write close, close TCP        │
///      └── failConnection(code): write close, close TCP ──────────────┘
///
/// - §5.5.1: "If an endpoint receives a Close frame and did not previously
///   send a Close frame, the endpoint MUST send a Close frame in response.
///   ... the endpoint typically echos the status code it received."
///   `receiveClose` in `open` returns `.replyWithClose(code)`; the driver
///   may finish a message it is sending (§5.5.1 allows the delay), then
///   calls `sendClose`. An empty close (no code) is answered with an empty one.
/// - §5.5.1: "after sending a Close frame, the endpoint MUST NOT send any
///   more data frames": `maySendData` is false from `closeSent` on.
/// - §1.4: "after receiving a control frame indicating the connection
///   should be closed, a peer discards any further data received":
///   `mayReceiveData` is false from `closeReceived` on (and once failed).
/// - §7.1.1: "the server SHOULD close [the TCP connection] first", so once
///   both close frames have passed the decision is `closeTransport`. While
///   in `closeSent` the driver arms its close timeout and closes the TCP
///   connection when it fires (not modelled here: this type has no clock).
/// - Failing the connection (§7.1.7: a protocol error, or an unexpected
///   condition such as a keepalive ping never answered) is
///   `failConnection(code)`: a close frame with the failure's code unless
///   one was already sent (§5.5.1 allows one), then the TCP connection is
///   closed without waiting for the peer's close; nothing more is read.
/// - Repeated or late inputs (a second `sendClose`, a close after `closed`)
///   answer `.nothing`.
///
/// Usage:
///
///     case .closeReceived(let code, _):
///         tell the application (code ?? 1005)
///         if case .replyWithClose(let echo) = close.receiveClose(code) {
///             act(close.sendClose(echo))   // .writeCloseThenCloseTransport
///         } else { close the connection }  // .closeTransport: our close was answered
///     application closes with code c: act(close.sendClose(c)); arm the close timeout
///     decoder throws e: act(close.failConnection(e.closeCode))
///     while close.mayReceiveData: decode the next frame
public struct CloseHandshake: Sendable, Equatable {
    private enum State: Sendable, Equatable {
        case open
        case closeSent
        case closeReceived(CloseCode?)
        case closed
    }

    private var state = State.open

    public init() {}

    /// Data frames may still be sent: before our close frame (including
    /// after the peer's, until we answer it).
    public var maySendData: Bool {
        switch state {
        case .open, .closeReceived: return true
        case .closeSent, .closed: return false
        }
    }

    /// The peer's frames are still read: before its close frame, and
    /// unless the connection failed.
    public var mayReceiveData: Bool {
        switch state {
        case .open, .closeSent: return true
        case .closeReceived, .closed: return false
        }
    }

    /// Both close frames have passed (or the connection failed).
    public var isClosed: Bool { state == .closed }

    /// We are about to write a close frame with `code`. Returns what to
    /// write; `.nothing` when a close frame was already sent.
    public mutating func sendClose(_ code: CloseCode?) -> CloseStep {
        switch state {
        case .open:
            state = .closeSent
            return .writeClose(code)
        case .closeReceived:
            state = .closed
            return .writeCloseThenCloseTransport(code)
        case .closeSent, .closed:
            return .nothing
        }
    }

    /// The decoder reported a close frame with `code` (nil: empty body).
    public mutating func receiveClose(_ code: CloseCode?) -> CloseStep {
        switch state {
        case .open:
            state = .closeReceived(code)
            return .replyWithClose(code)
        case .closeSent:
            state = .closed
            return .closeTransport
        case .closeReceived, .closed:
            return .nothing
        }
    }

    /// Fails the WebSocket connection (§7.1.7) with `code`: the peer broke
    /// the protocol (1002, 1007, 1009, ...) or the server gives up on it
    /// (1011). Nothing more is read and the TCP connection is closed without
    /// waiting for the peer's close.
    public mutating func failConnection(_ code: CloseCode) -> CloseStep {
        switch state {
        case .open, .closeReceived:
            // A close frame is still owed; the failure's code replaces an echo.
            state = .closed
            return .writeCloseThenCloseTransport(code)
        case .closeSent:
            // §5.5.1: our close is out already, and it is the last frame we send.
            state = .closed
            return .closeTransport
        case .closed:
            return .nothing
        }
    }
}

/// What the driver does next in the closing handshake.
public enum CloseStep: Equatable, Sendable {
    case nothing
    /// Write a close frame with this code and keep reading for the peer's.
    case writeClose(CloseCode?)
    /// Write a close frame with this code, flush, then close the TCP connection.
    case writeCloseThenCloseTransport(CloseCode?)
    /// The peer closed first: answer with a close frame echoing this code
    /// (via `sendClose`) once any message being sent is finished.
    case replyWithClose(CloseCode?)
    /// The handshake is complete: close the TCP connection.
    case closeTransport
}
