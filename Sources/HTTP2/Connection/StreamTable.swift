// The live streams of a connection, and a memory of recently closed ones.
//
// Live streams sit in one array searched linearly, newest last, with the
// last hit cached: SETTINGS_MAX_CONCURRENT_STREAMS keeps it short (100 by
// default), frames for one stream tend to come in runs, and an array of
// small records allocates once and then never again — a dictionary would
// hash per frame for no gain at this size.
//
// `ClosedStreams` is a ring of the last N closed ids with how they closed.
// §5.1 treats late frames differently after our RST_STREAM (ignore them:
// the peer may have sent them before it saw ours) than after END_STREAM or
// the peer's RST_STREAM (STREAM_CLOSED). An id that fell out of the ring is
// judged as "closed long ago" — a connection error, which §5.1 permits ("An
// endpoint MAY choose to limit the period over which it ignores frames").

/// One live stream.
struct H2Stream {
    let id: UInt32
    var state: StreamState
    var response: ResponsePhase = .awaitingHeaders
    var sendWindow: SendWindow
    var receiveWindow: ReceiveWindow
    /// Flow-controlled bytes of DATA events not yet reported consumed;
    /// returned to the connection window if the stream goes away first.
    var unconsumed = 0
    /// The request's content-length, checked against the DATA received.
    var expectedLength: Int64?
    var receivedLength: Int64 = 0
}

struct StreamTable {
    private(set) var streams: [H2Stream] = []
    private var lastHit = 0

    init(capacity: Int) { streams.reserveCapacity(min(capacity, 256)) }

    var count: Int { streams.count }

    func index(of id: UInt32) -> Int? {
        if lastHit < streams.count && streams[lastHit].id == id { return lastHit }
        var i = streams.count - 1
        while i >= 0 {
            if streams[i].id == id { return i }
            i -= 1
        }
        return nil
    }

    /// The stream's index, caching the hit for the next lookup.
    mutating func find(_ id: UInt32) -> Int? {
        guard let i = index(of: id) else { return nil }
        lastHit = i
        return i
    }

    // get/set, not `_modify { yield &streams[i] }`: a coroutine that yields
    // through Array's own coroutine mallocs the inner frame in an
    // unoptimised build (two mallocs per response, counted by
    // H2AllocationTests); copying the small record costs nothing that shows.
    subscript(i: Int) -> H2Stream {
        get { streams[i] }
        set { streams[i] = newValue }
    }

    mutating func insert(_ s: H2Stream) {
        streams.append(s)
        lastHit = streams.count - 1
    }

    @discardableResult
    mutating func remove(at i: Int) -> H2Stream {
        lastHit = 0
        return streams.remove(at: i)
    }

    mutating func removeAll() { streams.removeAll() }

    /// Shifts every stream's send window (SETTINGS_INITIAL_WINDOW_SIZE
    /// change); false if one would pass 2^31-1.
    mutating func shiftSendWindows(by delta: Int) -> Bool {
        for i in streams.indices where !streams[i].sendWindow.increase(by: delta) { return false }
        return true
    }

    mutating func rebaseReceiveWindows(to size: Int) {
        for i in streams.indices { streams[i].receiveWindow.rebase(to: size) }
    }
}

/// How a remembered stream closed.
enum ClosedHow: Equatable {
    /// We sent RST_STREAM: late frames are ignored.
    case resetByUs
    /// END_STREAM both ways, or the peer's RST_STREAM: late frames are errors.
    case closed
}

/// The last N closed stream ids, oldest overwritten first.
struct ClosedStreams {
    private var ids: [UInt32]
    private var resetByUs: [Bool]
    private var next = 0

    init(capacity: Int) {
        ids = Array(repeating: 0, count: capacity)
        resetByUs = Array(repeating: false, count: capacity)
    }

    mutating func remember(_ id: UInt32, _ how: ClosedHow) {
        ids[next] = id
        resetByUs[next] = how == .resetByUs
        next = next + 1 == ids.count ? 0 : next + 1
    }

    /// How `id` closed, if it is still remembered (0 is never a stream).
    func lookup(_ id: UInt32) -> ClosedHow? {
        // Newest first: an id is remembered once, but search the likely end first.
        var i = next
        for _ in 0 ..< ids.count {
            i = i == 0 ? ids.count - 1 : i - 1
            if ids[i] == id { return resetByUs[i] ? .resetByUs : .closed }
        }
        return nil
    }
}
