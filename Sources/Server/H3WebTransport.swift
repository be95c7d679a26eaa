import Core
import HTTP3

/// The WebTransport side of one HTTP/3 connection (ASGI applications
/// without --no-webtransport): the sans-I/O `WebTransportRegistry` and what
/// the glue keeps beside it — the sessions the application sees, the peer
/// streams handed over by `H3Session`, and our side of every data stream.
/// H3Connection+WebTransport.swift moves bytes and events between them.
final class H3WebTransport {
    let registry: WebTransportRegistry
    /// Sessions by CONNECT stream ID, from the CONNECT until they end.
    var sessions: [UInt64: H3WebTransportSession] = [:]
    /// Data streams of sessions (the peer's, handed over, and ours).
    var streams: [UInt64: H3WebTransportStream] = [:]
    /// Datagrams dropped on this connection, by `WebTransportDatagramDrop`
    /// — unreliable by contract, so only counted, here and in the worker's
    /// metrics (`peregrine_webtransport_datagrams_dropped_total`): the
    /// application's (too large, QUIC's send queue full, its session gone)
    /// and the peer's (its application's queue full, no session for it —
    /// these two also counted by the registry and QUIC, folded in by
    /// `collectDrops`).
    private(set) var droppedDatagrams = [Int](repeating: 0, count: WebTransportDatagramDrop.count)
    let metrics: WorkerMetrics
    /// What `collectDrops` already took of the registry's and QUIC's counters.
    private var collectedHeld = 0
    private var collectedGone = 0
    private var collectedQUIC: UInt64 = 0

    init(template: WebTransportTemplate, metrics: WorkerMetrics) {
        registry = WebTransportRegistry(template: template)
        self.metrics = metrics
    }

    func datagramsDropped(_ reason: WebTransportDatagramDrop, count: Int = 1) {
        guard count > 0 else { return }
        droppedDatagrams[reason.rawValue] += count
        metrics.webTransportDatagramsDropped(reason, count: count)
    }

    /// Counts what the registry dropped (held past its bound: a full queue;
    /// for a session gone: no session) and what QUIC's receive queue
    /// dropped (`quicReceived`, its running total) since the last call.
    func collectDrops(quicReceived: UInt64) {
        datagramsDropped(.queueFull, count: registry.heldDatagramsDropped - collectedHeld)
        collectedHeld = registry.heldDatagramsDropped
        datagramsDropped(.noSession, count: registry.goneDatagramsDropped - collectedGone)
        collectedGone = registry.goneDatagramsDropped
        datagramsDropped(.queueFull, count: Int(quicReceived - collectedQUIC))
        collectedQUIC = quicReceived
    }
}

/// One data stream of a session: whose it is, which sides are done, and
/// our bytes QUIC's send buffer has not taken yet.
final class H3WebTransportStream {
    let id: UInt64
    var session: UInt64?
    /// The peer's side ended (FIN read, or reset) — or there is none.
    var peerDone: Bool
    /// Our side ended (FIN in QUIC, or reset) — or there is none.
    var ourDone: Bool
    /// The application asked to end our side once `pending` is in QUIC.
    var finPending = false
    /// The peer sent STOP_SENDING: what the application sends is dropped.
    var stopped = false
    var pending = PendingBytes()
    /// For a peer unidirectional stream: the stream of ours paired with it
    /// (the aioquic-compatible echo rule).
    var paired: UInt64?
    /// The registry was told the stream finished (`streamFinished`).
    var released = false
    /// Not read while the session's application queue is full.
    var parked = false
    /// The length of our WebTransport header at the start of our side (a
    /// stream we opened; 0 otherwise), and how many bytes of our side QUIC
    /// has taken: a reset keeps the header (`resetWebTransportSendSide`),
    /// and the header is outside the session's flow control (current
    /// draft, "Data Limits": WT_MAX_DATA counts data "excluding the stream header").
    var headerLength = 0
    var written: UInt64 = 0

    init(id: UInt64, session: UInt64?, peerDone: Bool, ourDone: Bool) {
        self.id = id
        self.session = session
        self.peerDone = peerDone
        self.ourDone = ourDone
    }

    /// RFC 9000 §2.1: bit 0 is the initiator (1: server), bit 1 the direction.
    var openedByPeer: Bool { id & 0x1 == 0 }
    var unidirectional: Bool { id & 0x2 != 0 }
}

/// Bytes waiting for a QUIC stream's send buffer, taken from the front
/// without moving the rest each time (compacted once half is taken).
struct PendingBytes {
    private var bytes: [UInt8] = []
    private var start = 0

    var count: Int { bytes.count - start }
    var isEmpty: Bool { start == bytes.count }

    mutating func append(_ b: UnsafeRawBufferPointer) { bytes.append(contentsOf: b) }
    mutating func append(_ b: [UInt8]) { bytes.append(contentsOf: b) }

    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        bytes.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[start...])) }
    }

    mutating func consume(_ n: Int) {
        start += n
        if start == bytes.count {
            bytes.removeAll(keepingCapacity: bytes.capacity <= 64 * 1024)
            start = 0
        } else if start >= bytes.count / 2 {
            bytes.removeFirst(start)
            start = 0
        }
    }

    mutating func clear() {
        bytes = []
        start = 0
    }
}
