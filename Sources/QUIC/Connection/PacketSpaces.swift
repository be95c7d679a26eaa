// A connection's three packet number spaces (RFC 9000 §12.3), indexed by
// `PacketNumberSpace.rawValue` as an array of them would be.
//
// The Initial and Handshake spaces live a few round trips (RFC 9001 §4.9:
// a server discards the Initial keys with the client's first Handshake
// packet and the Handshake keys when the handshake completes), the
// Application space as long as the connection. So the two share one block
// of CTLS's handshake heap, given back once both are discarded: an idle
// connection keeps about 0.8 KB less, and the block, not being malloc's,
// leaves no hole between the blocks the connection keeps (TRANSPORT.md,
// "What an idle HTTP/3 connection holds"). A discarded space then reads as
// an empty, discarded state shared by all connections.
//
// Addressors, not `_read`/`_modify`: an unoptimised build allocates a
// coroutine's frame, and a packet reaches its spaces a few dozen times
// (PacketBuildAllocationTests holds every build to no allocation per
// packet). A write to a space whose storage is gone (nothing more is sent
// or received in it, so nothing should write; a reset of a counter might)
// gets a fresh discarded pair, given back again by the next
// `dropDiscardedEarlySpaces`.

import CTLS

final class PacketSpaces {
    private let application: UnsafeMutablePointer<PacketSpaceState>
    /// The Initial and Handshake states; nil once both are discarded.
    private var early: UnsafeMutablePointer<PacketSpaceState>?

    /// What a discarded space reads as once its storage is gone: written
    /// once, then only read, from any thread.
    nonisolated(unsafe) private static let gone: UnsafeMutablePointer<PacketSpaceState> = {
        let p = UnsafeMutablePointer<PacketSpaceState>.allocate(capacity: 1)
        var s = PacketSpaceState()
        s.discard()
        p.initialize(to: s)
        return p
    }()

    init() {
        application = .allocate(capacity: 1)
        application.initialize(to: PacketSpaceState())
        early = Self.makeEarly()
    }

    deinit {
        application.deinitialize(count: 1)
        application.deallocate()
        if let early { Self.free(early) }
    }

    var indices: Range<Int> { 0..<3 }

    /// Whether the Initial and Handshake states still have storage (tests).
    var holdsEarlySpaces: Bool { early != nil }

    subscript(index: Int) -> PacketSpaceState {
        unsafeAddress {
            if index == 2 { return UnsafePointer(application) }
            if let early { return UnsafePointer(early + index) }
            return UnsafePointer(Self.gone)
        }
        unsafeMutableAddress {
            if index == 2 { return application }
            if let early { return early + index }
            let pair = Self.makeEarly()
            pair[0].discard()
            pair[1].discard()
            early = pair
            return pair + index
        }
    }

    func contains(where predicate: (PacketSpaceState) -> Bool) -> Bool {
        indices.contains { predicate(self[$0]) }
    }

    /// Gives the Initial and Handshake states' block back once both are
    /// discarded (QUICConnection.discardSpace, the idle release).
    func dropDiscardedEarlySpaces() {
        guard let e = early, e[0].discarded, e[1].discarded else { return }
        early = nil
        Self.free(e)
    }

    private static func makeEarly() -> UnsafeMutablePointer<PacketSpaceState> {
        let bytes = MemoryLayout<PacketSpaceState>.stride * 2
        ctls_handshake_heap_enter()
        let raw = ctls_handshake_heap_malloc(bytes)
        ctls_handshake_heap_leave()
        guard let raw else { preconditionFailure("out of memory for a connection's packet number spaces") }
        let states = raw.bindMemory(to: PacketSpaceState.self, capacity: 2)
        states.initialize(repeating: PacketSpaceState(), count: 2)
        return states
    }

    private static func free(_ states: UnsafeMutablePointer<PacketSpaceState>) {
        states.deinitialize(count: 2)
        ctls_handshake_heap_free(states)
    }
}
