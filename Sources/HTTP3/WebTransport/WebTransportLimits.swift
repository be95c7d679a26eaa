// What a server enforces and advertises for WebTransport over HTTP/3 on one
// connection (draft-ietf-webtrans-http3-02 and the current draft). Each
// limit's doc says what happens when it is hit (DESIGN principle 6).

import Core

/// Bounds and initial flow-control limits of WebTransport on one connection.
public struct WebTransportLimits: Sendable, Equatable {
    /// Sessions at once: CONNECTs held for the client's SETTINGS, waiting for
    /// the application's answer, or accepted. One more → its CONNECT stream
    /// is reset with H3_REQUEST_REJECTED (current draft §5.2, draft-02 §3.4:
    /// "indicates to the receiving HTTP/3 stack that the request was not
    /// processed in any way" — the client may retry elsewhere).
    public var maxSessions = 16
    /// Peer streams whose session is not (yet) established, held with their
    /// bytes unread in QUIC. One more → that stream is reset and stopped
    /// with WT_BUFFERED_STREAM_REJECTED (current draft §4.6, draft-02 §4.5).
    public var maxBufferedStreams = 16
    /// Datagrams for sessions not (yet) established. One more → the oldest
    /// is dropped and counted (§4.6: "a datagram MUST be dropped").
    public var maxBufferedDatagrams = 32
    /// Bytes a client sends on a CONNECT stream before we accepted it (§3.2:
    /// "A server MUST NOT process these bytes as capsules until it sends a
    /// 2xx"). More → the CONNECT stream is reset with H3_EXCESSIVE_LOAD.
    public var maxEarlyConnectBytes = 16 * 1024
    /// SETTINGS_WT_INITIAL_MAX_STREAMS_BIDI / _UNI: streams of each kind a
    /// client may open in one session (current draft §5.5); given back as
    /// they finish (WT_MAX_STREAMS). One more → the session is closed
    /// (CONNECT stream reset) with WT_FLOW_CONTROL_ERROR (§5.6.2).
    public var initialMaxStreamsBidi: UInt64 = 100
    public var initialMaxStreamsUni: UInt64 = 100
    /// SETTINGS_WT_INITIAL_MAX_DATA: stream body bytes a client may send in
    /// one session before more credit (WT_MAX_DATA, sent as the application
    /// consumes). More → WT_FLOW_CONTROL_ERROR (§5.6.4).
    public var initialMaxData: UInt64 = 1 << 20
    /// Session IDs remembered after their session ended, so late streams and
    /// datagrams for them are refused (WT_SESSION_GONE) or dropped instead of
    /// being buffered.
    public var closedSessionMemory = 64

    public init() {}

    var clamped: WebTransportLimits {
        var l = self
        l.maxSessions = max(1, l.maxSessions)
        l.maxBufferedStreams = max(0, l.maxBufferedStreams)
        l.maxBufferedDatagrams = max(0, l.maxBufferedDatagrams)
        l.maxEarlyConnectBytes = max(0, l.maxEarlyConnectBytes)
        // At least one of them non-zero: we always offer flow control (§5.1).
        l.initialMaxStreamsBidi = min(max(1, l.initialMaxStreamsBidi), WebTransportCapsule.maxStreamCount)
        l.initialMaxStreamsUni = min(l.initialMaxStreamsUni, WebTransportCapsule.maxStreamCount)
        l.initialMaxData = min(l.initialMaxData, QUICVarInt.maxValue)
        l.closedSessionMemory = max(1, l.closedSessionMemory)
        return l
    }

    /// What our SETTINGS say (both drafts at once; the client's SETTINGS and
    /// its `:protocol` pick one per session).
    var advertised: H3WebTransportSettings {
        var s = H3WebTransportSettings()
        s.h3Datagram = true
        s.enableWebTransportDraft02 = true
        s.wtEnabled = true
        s.initialMaxStreamsBidi = initialMaxStreamsBidi
        s.initialMaxStreamsUni = initialMaxStreamsUni
        s.initialMaxData = initialMaxData
        return s
    }
}
