// What the endpoint and its connections share: the routing table, the queue
// of events for the application, the queue of connections that may have
// something to send (served round-robin) and the deadline heap.
//
// A connection reaches the endpoint only through this object, so it can
// route a new connection ID, queue an event or ask to be served without
// knowing the endpoint's type. Queues hold strong references; a connection
// leaves all of them when it terminates.

import CTLS
import Core

final class EndpointContext {
    let configuration: QUICConfiguration
    let connectionIDs: ConnectionIDSource
    let addressTokens: AddressTokens
    /// Connections made and not yet handshake-complete nor terminated
    /// (§8.1 half-open), what Retry and the cap on them count.
    private(set) var halfOpenCount = 0

    var routes: [ConnectionID: QUICConnection] = [:]
    /// Every connection not yet terminated (closing and draining included).
    var connections: [ObjectIdentifier: QUICConnection] = [:]

    private var events: [(QUICConnection, QUICEvent)] = []
    private var eventHead = 0

    /// Connections that may have output, in service order.
    private var ready: [QUICConnection] = []
    private var readyHead = 0

    var deadlines = DeadlineHeap()
    /// ECN statistics of the connections (QUICConnection+ECN.swift).
    var ecnCongestionSignals = 0
    var ecnValidationFailures = 0
    /// Path MTU discovery statistics (QUICConnection+PMTU.swift).
    var pmtuRaises = 0
    var pmtuBlackHoles = 0
    /// qlog (QUICEndpoint+QLog.swift): a trace for each new connection, or nil.
    var makeQLogTrace: ((ConnectionID, Instant) -> QLogTrace?)?

    /// Scratch lists of an ACK's acknowledged and lost packet numbers and of
    /// the frames they carried, shared by the endpoint's connections (one ACK
    /// is processed at a time): a connection keeps none of them while idle,
    /// and an ACK allocates nothing once they have grown.
    var ackedScratch: [UInt64] = []
    var lostScratch: [(PacketNumberSpace, UInt64)] = []
    var frameScratch: [SentFrame] = []

    /// Random bytes for PATH_CHALLENGE data (RFC 9000 §8.2.1: "unpredictable"),
    /// drawn from OpenSSL's DRBG a block at a time.
    private var randomPool = [UInt64](repeating: 0, count: 32)
    private var randomNext = 32

    init(configuration: QUICConfiguration, connectionIDs: ConnectionIDSource, addressTokens: AddressTokens) {
        self.configuration = configuration
        self.connectionIDs = connectionIDs
        self.addressTokens = addressTokens
    }

    /// 8 unpredictable bytes (§8.2.1).
    func pathChallengeData() -> UInt64 {
        if randomNext == randomPool.count {
            let ok = randomPool.withUnsafeMutableBytes {
                ctls_quic_random($0.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.count) == 0
            }
            // OpenSSL's DRBG does not fail once seeded; should it, the
            // system generator still gives unpredictable data.
            if !ok { for i in randomPool.indices { randomPool[i] = UInt64.random(in: 0...UInt64.max) } }
            randomNext = 0
        }
        defer { randomNext += 1 }
        return randomPool[randomNext]
    }

    func connectionTerminated(_ connection: QUICConnection) {
        connections[ObjectIdentifier(connection)] = nil
        halfOpenEnded(connection)
    }

    func halfOpenStarted(_ connection: QUICConnection) {
        guard !connection.isHalfOpen else { return }
        connection.isHalfOpen = true
        halfOpenCount += 1
    }

    func halfOpenEnded(_ connection: QUICConnection) {
        guard connection.isHalfOpen else { return }
        connection.isHalfOpen = false
        halfOpenCount -= 1
    }

    func post(_ event: QUICEvent, from connection: QUICConnection) {
        events.append((connection, event))
    }

    func nextEvent() -> (QUICConnection, QUICEvent)? {
        guard eventHead < events.count else { return nil }
        let e = events[eventHead]
        eventHead += 1
        if eventHead == events.count {
            events.removeAll(keepingCapacity: true)
            eventHead = 0
        }
        return e
    }

    /// Queues `connection` to be asked for datagrams.
    func wantsToSend(_ connection: QUICConnection) {
        guard !connection.queuedForOutput else { return }
        connection.queuedForOutput = true
        ready.append(connection)
    }

    /// The next connection to serve, removed from the queue (the caller puts
    /// it back with `wantsToSend` after it produced a datagram).
    func nextReady() -> QUICConnection? {
        guard readyHead < ready.count else { return nil }
        let c = ready[readyHead]
        readyHead += 1
        if readyHead == ready.count {
            ready.removeAll(keepingCapacity: true)
            readyHead = 0
        } else if readyHead >= 64 && readyHead >= ready.count / 2 {
            ready.removeSubrange(0..<readyHead)
            readyHead = 0
        }
        c.queuedForOutput = false
        return c
    }
}

/// The earliest deadline of each connection, in a min-heap with lazy
/// deletion: re-arming pushes a new entry with the connection's new
/// generation and leaves the old one to be skipped when it surfaces. The
/// heap is rebuilt when stale entries outnumber live ones.
struct DeadlineHeap {
    private struct Entry {
        var deadline: Instant
        var generation: UInt64
        var connection: QUICConnection
    }

    private var heap: [Entry] = []
    private var live = 0

    /// Sets (or clears, with nil) `connection`'s deadline.
    mutating func arm(_ connection: QUICConnection, at deadline: Instant?) {
        guard connection.armedDeadline != deadline else { return }
        if connection.armedDeadline != nil { live -= 1 }
        connection.timerGeneration &+= 1
        connection.armedDeadline = deadline
        guard let deadline else { return }
        live += 1
        push(Entry(deadline: deadline, generation: connection.timerGeneration, connection: connection))
        if heap.count > 64 && heap.count > 4 * live { rebuild() }
    }

    private static func isStale(_ e: Entry) -> Bool {
        e.generation != e.connection.timerGeneration || e.connection.armedDeadline == nil
    }

    /// The earliest live deadline.
    mutating func peek() -> Instant? {
        while let top = heap.first, Self.isStale(top) { popTop() }
        return heap.first?.deadline
    }

    /// Removes and returns every connection whose deadline is ≤ `now`.
    mutating func popExpired(now: Instant, _ body: (QUICConnection) -> Void) {
        while let top = heap.first {
            if Self.isStale(top) { popTop(); continue }
            guard top.deadline <= now else { return }
            popTop()
            top.connection.armedDeadline = nil
            live -= 1
            body(top.connection)
        }
    }

    /// Drops the stale entries and restores the heap order, in place: no
    /// allocation (a sort takes a scratch buffer, a filter a new array),
    /// since this runs every few dozen packets a busy connection sends.
    private mutating func rebuild() {
        var kept = 0
        for i in heap.indices where !Self.isStale(heap[i]) {
            heap[kept] = heap[i]
            kept += 1
        }
        heap.removeLast(heap.count - kept)
        for i in stride(from: kept / 2 - 1, through: 0, by: -1) { siftDown(from: i) }
    }

    private mutating func push(_ e: Entry) {
        heap.append(e)
        var i = heap.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard heap[i].deadline < heap[parent].deadline else { break }
            swap(i, parent)
            i = parent
        }
    }

    private mutating func popTop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        siftDown(from: 0)
    }

    private mutating func siftDown(from start: Int) {
        var i = start
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            // Nested conditions, not `&&`: its autoclosure would capture `m`
            // and box it on the heap in unoptimised builds.
            if l < heap.count, heap[l].deadline < heap[m].deadline { m = l }
            if r < heap.count, heap[r].deadline < heap[m].deadline { m = r }
            if m == i { break }
            swap(i, m)
            i = m
        }
    }

    /// Not `swapAt`: the generic MutableCollection one allocates unoptimised.
    private mutating func swap(_ a: Int, _ b: Int) {
        let t = heap[a]
        heap[a] = heap[b]
        heap[b] = t
    }
}
