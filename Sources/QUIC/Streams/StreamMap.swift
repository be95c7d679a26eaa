// The streams of a connection and the limits on opening them (RFC 9000
// §2.1, §3.2, §4.6).
//
// Peer streams open implicitly: the first frame for a stream opens it and
// every lower-numbered stream of its type (§3.2: "Before a stream is
// created, all streams of the same type with lower-numbered stream IDs MUST
// be created"). A frame for a peer stream above the limit we advertised is a
// STREAM_LIMIT_ERROR; for a stream of ours not yet opened, a
// STREAM_STATE_ERROR. A closed stream is forgotten; since stream IDs are
// never reused, a later frame for it (a retransmission) finds nothing and is
// ignored. Each peer stream that closes lets the peer open one more: the
// limit we advertise is the initial one plus the streams closed so far,
// and MAX_STREAMS is sent when it has grown by a tenth of the initial limit
// (or by one for small limits).

import Core

struct StreamMap {
    private(set) var streams: [UInt64: QUICStream] = [:]

    /// Peer streams opened so far, per type (index 0 bidi, 1 uni).
    private(set) var peerOpened = PerStreamType<UInt64>(0, 0)
    /// Peer streams closed so far, per type.
    private(set) var peerClosed = PerStreamType<UInt64>(0, 0)
    /// The peer-stream limits we advertised (initial_max_streams, MAX_STREAMS).
    private(set) var peerLimit: PerStreamType<UInt64>
    let initialPeerLimit: PerStreamType<UInt64>
    /// MAX_STREAMS owed per type.
    var maxStreamsPending = PerStreamType(false, false)

    /// Our unidirectional streams opened so far and the peer's limit on them.
    private(set) var localUniOpened: UInt64 = 0
    private(set) var localUniLimit: UInt64 = 0
    /// STREAMS_BLOCKED (uni) owed at this limit.
    var streamsBlockedPending: UInt64?
    private var streamsBlockedSentAt: UInt64?
    /// Our bidirectional streams (an extension's: HTTP/3 opens none, §6.1 of
    /// RFC 9114; WebTransport's server streams do), likewise.
    private(set) var localBidiOpened: UInt64 = 0
    private(set) var localBidiLimit: UInt64 = 0
    var streamsBlockedBidiPending: UInt64?
    private var streamsBlockedBidiSentAt: UInt64?

    init(maxBidi: UInt64, maxUni: UInt64) {
        peerLimit = PerStreamType(maxBidi, maxUni)
        initialPeerLimit = PerStreamType(maxBidi, maxUni)
    }

    subscript(id: UInt64) -> QUICStream? { streams[id] }

    var count: Int { streams.count }
    var capacity: Int { streams.capacity }

    /// The table lives as long as the connection, and grows only now and
    /// then: its storage goes where the connection's blocks are
    /// (AllocationZone), not between a burst's transient ones.
    private mutating func insert(_ s: QUICStream) {
        let zone = AllocationZone.connection.enter()
        streams[s.id] = s
        AllocationZone.restore(zone)
    }

    /// The idle release: the table at the size of what it holds. Requests
    /// come and go and a dictionary never shrinks, while an HTTP/3
    /// connection keeps six streams for its life (its control and QPACK
    /// streams and the client's): the seventh, a request, doubles the
    /// table (200 to 328 bytes), for good but for this.
    mutating func releaseIdleCapacity() {
        guard streams.capacity >= 2 * max(streams.count, 1) else { return }
        let zone = AllocationZone.connection.enter()
        var fitted = [UInt64: QUICStream](minimumCapacity: streams.count)
        for (id, s) in streams { fitted[id] = s }
        streams = fitted
        AllocationZone.restore(zone)
    }

    /// The stream a received frame is about, opening peer streams as needed.
    /// `opened` is called for each stream this opens. nil: a stream that is
    /// closed and forgotten (ignore the frame).
    mutating func streamForFrame(_ id: UInt64, make: (UInt64) -> QUICStream,
                                 opened: (QUICStream) -> Void) throws(QUICError) -> QUICStream? {
        let index = StreamID.index(id)
        guard StreamID.isClientInitiated(id) else {
            // Ours: only those already opened exist (§19.8: STREAM_STATE_ERROR).
            if index >= (StreamID.isBidirectional(id) ? localBidiOpened : localUniOpened) { throw .streamNotCreated }
            return streams[id]
        }
        let type = StreamID.isBidirectional(id) ? 0 : 1
        guard index < peerLimit[type] else { throw .streamLimitExceeded }
        if index < peerOpened[type] { return streams[id] }
        var opening = peerOpened[type]
        while opening <= index {
            // A client's unidirectional streams (HTTP/3's control and QPACK
            // streams) live as long as the connection; its requests do not
            // (AllocationZone).
            let zone = AllocationZone.connection.enter(if: type == 1)
            let s = make(StreamID.make(index: opening, clientInitiated: true, bidirectional: type == 0))
            AllocationZone.restore(zone)
            insert(s)
            opened(s)
            opening += 1
        }
        peerOpened[type] = opening
        return streams[id]
    }

    /// Opens one of our unidirectional streams, or nil at the peer's limit
    /// (a STREAMS_BLOCKED is then owed, §4.6).
    mutating func openLocalUni(make: (UInt64) -> QUICStream) -> QUICStream? {
        guard localUniOpened < localUniLimit else {
            if streamsBlockedSentAt != localUniLimit {
                streamsBlockedSentAt = localUniLimit
                streamsBlockedPending = localUniLimit
            }
            return nil
        }
        let s = make(StreamID.make(index: localUniOpened, clientInitiated: false, bidirectional: false))
        localUniOpened += 1
        insert(s)
        return s
    }

    /// The peer's initial_max_streams_uni or a MAX_STREAMS (uni) frame:
    /// limits only grow (§19.11).
    mutating func raiseLocalUniLimit(_ limit: UInt64) {
        localUniLimit = max(localUniLimit, limit)
    }

    /// Opens one of our bidirectional streams, or nil at the peer's limit
    /// (a STREAMS_BLOCKED is then owed, §4.6).
    mutating func openLocalBidi(make: (UInt64) -> QUICStream) -> QUICStream? {
        guard localBidiOpened < localBidiLimit else {
            if streamsBlockedBidiSentAt != localBidiLimit {
                streamsBlockedBidiSentAt = localBidiLimit
                streamsBlockedBidiPending = localBidiLimit
            }
            return nil
        }
        let s = make(StreamID.make(index: localBidiOpened, clientInitiated: false, bidirectional: true))
        localBidiOpened += 1
        insert(s)
        return s
    }

    /// The peer's initial_max_streams_bidi or a MAX_STREAMS (bidi) frame.
    mutating func raiseLocalBidiLimit(_ limit: UInt64) {
        localBidiLimit = max(localBidiLimit, limit)
    }

    /// Forgets a closed stream; a peer's stream frees a slot (MAX_STREAMS).
    mutating func remove(_ id: UInt64) {
        guard streams.removeValue(forKey: id) != nil else { return }
        guard StreamID.isClientInitiated(id) else { return }
        let type = StreamID.isBidirectional(id) ? 0 : 1
        peerClosed[type] += 1
        let target = initialPeerLimit[type] + peerClosed[type]
        let step = max(1, initialPeerLimit[type] / 10)
        if target >= peerLimit[type] + step { maxStreamsPending[type] = true }
    }

    /// The limit to put in a MAX_STREAMS frame now (never a stale one).
    func currentPeerLimitTarget(_ type: Int) -> UInt64 {
        min(initialPeerLimit[type] + peerClosed[type], Frame.maxStreamCount)
    }

    mutating func advertisePeerLimit(_ type: Int, _ limit: UInt64) {
        peerLimit[type] = max(peerLimit[type], limit)
    }

    /// Every stream, for connection-wide operations (close).
    var all: Dictionary<UInt64, QUICStream>.Values { streams.values }
}

/// Two values, bidirectional streams' (index 0) and unidirectional
/// streams' (1), held inline (an array of two would be a heap block kept
/// for the connection's life).
struct PerStreamType<Element> {
    private var bidirectional: Element
    private var unidirectional: Element

    init(_ bidirectional: Element, _ unidirectional: Element) {
        self.bidirectional = bidirectional
        self.unidirectional = unidirectional
    }

    subscript(type: Int) -> Element {
        get { type == 0 ? bidirectional : unidirectional }
        set { if type == 0 { bidirectional = newValue } else { unidirectional = newValue } }
    }
}
