// One value per packet number space, indexed like `PerSpace` (`ledgers[s]`,
// `.contains`, `.indices`), whose Initial and Handshake values go once both
// spaces are discarded (RFC 9001 §4.9), as a server's are when its
// handshake completes: an idle connection keeps none of them (issue 15).
//
// The Application space's value is inline; the early two share a block that
// `dropEarlySpaces` gives back. It goes during the burst of handshakes that
// made it, where the next connections' blocks take its place, rather than
// being left a hole in malloc's heap by a later release. After that the
// early spaces read as `Element.dropped`, and a write to one (none is
// expected: nothing is sent, received or acknowledged in a discarded space)
// makes a fresh block rather than trap.
//
// Used for the sent-packet ledgers (LossRecovery, 112 B a space) and the ECN
// counters (ECNValidation, 80 B a space).

/// A packet number space's state that `DroppablePerSpace` can hold.
protocol EarlySpaceState {
    /// A new space's state; `early`: the Initial or Handshake space's,
    /// which carry a handful of packets (a server's first flight).
    static func fresh(early: Bool) -> Self
    /// What an early space reads as once its state was given back.
    static var dropped: Self { get }
}

struct DroppablePerSpace<Element: EarlySpaceState> {
    /// The two early values behind a pointer: a write reaches them without
    /// the dynamic exclusivity check of a class property, which would make
    /// `_modify`'s coroutine frame too large for its inline buffer (a debug
    /// build would allocate one per access: PacketBuildAllocationTests).
    private final class Early {
        let values: UnsafeMutablePointer<Element>

        init(initial: Element = .fresh(early: true), handshake: Element = .fresh(early: true)) {
            values = .allocate(capacity: 2)
            values.initialize(to: initial)
            (values + 1).initialize(to: handshake)
        }

        deinit {
            values.deinitialize(count: 2)
            values.deallocate()
        }
    }

    private var early: Early?
    private var application: Element

    /// `earlySpacesDropped`: for a state made once the early spaces are gone.
    init(earlySpacesDropped: Bool = false) {
        early = earlySpacesDropped ? nil : Early()
        application = .fresh(early: false)
    }

    /// Whether the Initial and Handshake values are still held.
    var holdsEarlySpaces: Bool { early != nil }

    /// Gives back the Initial and Handshake values (both spaces discarded).
    mutating func dropEarlySpaces() { early = nil }

    /// The block, made unique before a write (copies of the struct share it).
    private mutating func uniqueEarly() -> Early {
        guard let box = early else {
            let fresh = Early()
            early = fresh
            return fresh
        }
        if isKnownUniquelyReferenced(&early!) { return box }
        let copy = Early(initial: box.values[0], handshake: box.values[1])
        early = copy
        return copy
    }
}

extension DroppablePerSpace: MutableCollection, RandomAccessCollection {
    var startIndex: Int { 0 }
    var endIndex: Int { 3 }
    func index(after i: Int) -> Int { i + 1 }
    func index(before i: Int) -> Int { i - 1 }
    /// A plain range (see PerSpace.indices).
    var indices: Range<Int> { 0..<3 }

    subscript(index: Int) -> Element {
        get {
            switch index {
            case 0, 1: early?.values[index] ?? Element.dropped
            case 2: application
            default: preconditionFailure("packet number space index out of range")
            }
        }
        _modify {
            switch index {
            case 0, 1: yield &uniqueEarly().values[index]
            case 2: yield &application
            default: preconditionFailure("packet number space index out of range")
            }
        }
    }
}

// Copy-on-write, as Array is: copies share the block only to read it, and a
// write first makes the writer's copy unique (`uniqueEarly`).
extension DroppablePerSpace: @unchecked Sendable where Element: Sendable {}

extension SentPacketLedger: EarlySpaceState {
    /// An early space's ring starts at 4 records (a server's Initial and
    /// Handshake flights and their ACKs rarely need more; it doubles if
    /// they do): less to hold for every handshake under way at once, which
    /// is what a burst of them leaves the heap's size at (issue 15).
    static func fresh(early: Bool) -> SentPacketLedger { SentPacketLedger(initialCapacity: early ? 4 : 8) }
    static let dropped = SentPacketLedger(initialCapacity: 1)
}
