// Session-level flow control of the current WebTransport draft
// (draft-ietf-webtrans-http3 §5), both directions, for one session.
//
// Receive side (what the client may send us): streams of each kind it opens
// and stream body bytes (headers and capsules excluded, §5.4) count against
// our limits, which start at our SETTINGS_WT_INITIAL_* values. Crossing one
// "MUST close the WebTransport session with a WT_FLOW_CONTROL_ERROR"
// (§5.6.2, §5.6.4). Credit comes back as the application consumes bytes and
// as streams finish: a new WT_MAX_DATA / WT_MAX_STREAMS once half a window
// was used (as QUIC does, RFC 9000 §4.2; §5.6: "SHOULD send ... as they
// consume data or close streams").
//
// Send side (what we may send): the client's initial SETTINGS, raised by its
// WT_MAX_DATA / WT_MAX_STREAMS capsules, which must each increase on the
// last one received ("does not increase the ... value previously received"
// → WT_FLOW_CONTROL_ERROR). When blocked we say so once per limit
// (WT_DATA_BLOCKED, WT_STREAMS_BLOCKED).
//
// Without flow control (draft-02, or a client that offered none, §5.1) the
// session has no such struct and flow-control capsules are ignored ("MUST
// ignore receipt of any flow control capsules").

struct WebTransportFlowControl {
    struct Violation: Error {}

    // MARK: receive
    private(set) var localMaxData: UInt64
    private let dataWindow: UInt64
    private(set) var received: UInt64 = 0
    private var consumed: UInt64 = 0
    private(set) var localMaxStreams: (bidi: UInt64, uni: UInt64)
    private let streamWindow: (bidi: UInt64, uni: UInt64)
    private(set) var peerOpened: (bidi: UInt64, uni: UInt64) = (0, 0)
    private var peerClosed: (bidi: UInt64, uni: UInt64) = (0, 0)

    // MARK: send
    private(set) var peerMaxData: UInt64
    private(set) var sent: UInt64 = 0
    private(set) var peerMaxStreams: (bidi: UInt64, uni: UInt64)
    private(set) var opened: (bidi: UInt64, uni: UInt64) = (0, 0)
    private var lastMaxDataCapsule: UInt64?
    private var lastMaxStreamsCapsule: (bidi: UInt64?, uni: UInt64?) = (nil, nil)
    private var reportedDataBlocked: UInt64?
    private var reportedStreamsBlocked: (bidi: UInt64?, uni: UInt64?) = (nil, nil)

    init(local: H3WebTransportSettings, peer: H3WebTransportSettings) {
        localMaxData = local.initialMaxData
        dataWindow = local.initialMaxData
        localMaxStreams = (local.initialMaxStreamsBidi, local.initialMaxStreamsUni)
        streamWindow = localMaxStreams
        peerMaxData = peer.initialMaxData
        peerMaxStreams = (peer.initialMaxStreamsBidi, peer.initialMaxStreamsUni)
    }

    // MARK: receive side

    /// The client opened a stream of the session. Over the limit → violation.
    mutating func peerOpenedStream(bidirectional: Bool) throws(Violation) {
        if bidirectional {
            guard peerOpened.bidi < localMaxStreams.bidi else { throw Violation() }
            peerOpened.bidi += 1
        } else {
            guard peerOpened.uni < localMaxStreams.uni else { throw Violation() }
            peerOpened.uni += 1
        }
    }

    /// How many more stream body bytes the peer may send now.
    var receiveAllowance: UInt64 { localMaxData - received }

    /// Stream body bytes arrived. Over the limit → violation.
    mutating func receivedData(_ n: Int) throws(Violation) {
        let total = received + UInt64(n)
        guard total <= localMaxData else { throw Violation() }
        received = total
    }

    /// The application took `n` bytes. - Returns: a new WT_MAX_DATA to send.
    mutating func consumedData(_ n: Int) -> UInt64? {
        consumed = min(received, consumed + UInt64(n))
        guard let raised = Self.raise(localMaxData, base: consumed, window: dataWindow) else { return nil }
        localMaxData = raised
        return raised
    }

    /// A client stream finished. - Returns: a new WT_MAX_STREAMS to send.
    mutating func peerStreamFinished(bidirectional: Bool) -> UInt64? {
        if bidirectional {
            peerClosed.bidi += 1
            guard let raised = Self.raise(localMaxStreams.bidi, base: peerClosed.bidi, window: streamWindow.bidi) else { return nil }
            localMaxStreams.bidi = raised
            return raised
        }
        peerClosed.uni += 1
        guard let raised = Self.raise(localMaxStreams.uni, base: peerClosed.uni, window: streamWindow.uni) else { return nil }
        localMaxStreams.uni = raised
        return raised
    }

    /// The limit `base + window` (capped at 2^60, §5.6.2), if it is at least
    /// half a window above `current`: updates go out in steps, not per byte.
    private static func raise(_ current: UInt64, base: UInt64, window: UInt64) -> UInt64? {
        let target = min(base + window, WebTransportCapsule.maxStreamCount)
        guard window > 0, target >= current + max(1, window / 2) else { return nil }
        return target
    }

    // MARK: send side

    /// The client's WT_MAX_DATA.
    mutating func receiveMaxData(_ n: UInt64) throws(Violation) {
        if let last = lastMaxDataCapsule, n <= last { throw Violation() }
        lastMaxDataCapsule = n
        peerMaxData = max(peerMaxData, n)
    }

    /// The client's WT_MAX_STREAMS (values over 2^60 were refused by the decoder).
    mutating func receiveMaxStreams(bidirectional: Bool, _ n: UInt64) throws(Violation) {
        if bidirectional {
            if let last = lastMaxStreamsCapsule.bidi, n <= last { throw Violation() }
            lastMaxStreamsCapsule.bidi = n
            peerMaxStreams.bidi = max(peerMaxStreams.bidi, n)
        } else {
            if let last = lastMaxStreamsCapsule.uni, n <= last { throw Violation() }
            lastMaxStreamsCapsule.uni = n
            peerMaxStreams.uni = max(peerMaxStreams.uni, n)
        }
    }

    /// Stream body bytes we may still send.
    var sendAllowance: UInt64 { peerMaxData - sent }

    mutating func didSend(_ n: Int) {
        precondition(UInt64(n) <= sendAllowance, "sent past WT_MAX_DATA")
        sent += UInt64(n)
    }

    /// Blocked on data: the WT_DATA_BLOCKED value to send, once per limit.
    mutating func dataBlocked() -> UInt64? {
        guard sendAllowance == 0, reportedDataBlocked != peerMaxData else { return nil }
        reportedDataBlocked = peerMaxData
        return peerMaxData
    }

    /// Opens a stream if the client's limit allows it.
    mutating func openStream(bidirectional: Bool) -> Bool {
        if bidirectional {
            guard opened.bidi < peerMaxStreams.bidi else { return false }
            opened.bidi += 1
        } else {
            guard opened.uni < peerMaxStreams.uni else { return false }
            opened.uni += 1
        }
        return true
    }

    /// Blocked on streams: the WT_STREAMS_BLOCKED value to send, once per limit.
    mutating func streamsBlocked(bidirectional: Bool) -> UInt64? {
        if bidirectional {
            guard reportedStreamsBlocked.bidi != peerMaxStreams.bidi else { return nil }
            reportedStreamsBlocked.bidi = peerMaxStreams.bidi
            return peerMaxStreams.bidi
        }
        guard reportedStreamsBlocked.uni != peerMaxStreams.uni else { return nil }
        reportedStreamsBlocked.uni = peerMaxStreams.uni
        return peerMaxStreams.uni
    }
}
