import CSys

/// Room for a batch of datagrams, received (`UDPSocket.receive`) or to send
/// (`UDPSocket.send`): the entries the kernel fills or reads, each pointing
/// at a slot of one buffer this batch owns, and the message headers, address
/// and control space `recvmmsg`/`sendmmsg` need, all allocated once here,
/// so no datagram allocates.
///
/// Receiving, with `handle` the caller's:
///
///     var batch = DatagramBatch(capacity: 64, slotSize: 1500)!
///     while let n = socket.receive(into: &batch), n > 0 {
///         for i in 0..<n where !batch.isTruncated(i) {
///             for datagram in batch.datagrams(i) { handle(datagram, batch.path(i)) }
///         }
///     }
///
/// An entry holds one datagram, or several of one sender when the socket
/// coalesces receives (`UDPSocket.enableReceiveCoalescing`, UDP GRO):
/// `datagrams(i)` cuts them apart again.
///
/// Sending: write each datagram into `slot(i)`, then `setOutgoing(i,
/// length:path:)`, and `send` entries `0..<count`; what the socket did not
/// take is sent when it is writable again. With `usesSegmentation`, runs of
/// consecutive datagrams to one peer leave as one message each (UDP GSO).
///
/// The bytes of a received datagram stay valid until the batch is received
/// into again. `~Copyable`: the batch owns its memory and frees it once.
public struct DatagramBatch: ~Copyable {
    @usableFromInline let raw: OpaquePointer
    @usableFromInline let entries: UnsafeMutablePointer<csys_datagram>
    public let capacity: Int
    public let slotSize: Int
    private let storage: UnsafeMutableRawPointer

    /// 64 KiB: what a coalesced receive (UDP GRO) may fill, above the
    /// largest single UDP payload (65,507 over IPv4).
    public static let maxSlotSize = 65_536

    /// Nil when `capacity` is outside 1...1024, `slotSize` outside
    /// 1...maxSlotSize, or memory is short.
    public init?(capacity: Int, slotSize: Int) {
        guard (1...1024).contains(capacity), (1...DatagramBatch.maxSlotSize).contains(slotSize),
              let raw = csys_udp_batch_create(Int32(capacity)) else { return nil }
        self.raw = raw
        self.capacity = capacity
        self.slotSize = slotSize
        entries = csys_udp_batch_entries(raw)
        storage = .allocate(byteCount: capacity * slotSize, alignment: 16)
        for i in 0..<capacity {
            entries[i].data = storage + i * slotSize
            entries[i].capacity = UInt32(slotSize)
        }
    }

    deinit {
        storage.deallocate()
        csys_udp_batch_destroy(raw)
    }

    // MARK: - Received datagrams

    /// Entry `i`'s bytes (after a receive that returned more than `i`): one
    /// datagram, or several coalesced (see `datagrams(i)`).
    @inlinable
    public func bytes(_ i: Int) -> UnsafeRawBufferPointer {
        let e = entries[i]
        return UnsafeRawBufferPointer(start: e.data, count: Int(min(e.length, e.capacity)))
    }

    /// The size of each datagram coalesced in entry `i` but the last, which
    /// may be shorter (UDP GRO); the entry's length when it is one datagram.
    @inlinable
    public func segmentSize(_ i: Int) -> Int {
        let e = entries[i]
        return e.segment_size == 0 ? Int(min(e.length, e.capacity)) : Int(e.segment_size)
    }

    /// The datagrams of entry `i`, in the order they arrived, all from
    /// `path(i)`.
    @inlinable
    public func datagrams(_ i: Int) -> Datagrams {
        Datagrams(bytes: bytes(i), segmentSize: segmentSize(i))
    }

    /// An entry cut into its datagrams: every `segmentSize` bytes, the last
    /// one possibly shorter. A value, no allocation.
    public struct Datagrams: Sequence, IteratorProtocol {
        @usableFromInline var rest: UnsafeRawBufferPointer
        @usableFromInline let segmentSize: Int

        @inlinable
        public init(bytes: UnsafeRawBufferPointer, segmentSize: Int) {
            rest = bytes
            self.segmentSize = Swift.max(segmentSize, 1)
        }

        @inlinable
        public mutating func next() -> UnsafeRawBufferPointer? {
            guard let base = rest.baseAddress, !rest.isEmpty else { return nil }
            let n = Swift.min(segmentSize, rest.count)
            defer { rest = UnsafeRawBufferPointer(start: base + n, count: rest.count - n) }
            return UnsafeRawBufferPointer(start: base, count: n)
        }
    }

    /// Datagram `i` was longer than a slot: its bytes are cut short and it
    /// cannot be a whole QUIC datagram (drop it).
    @inlinable
    public func isTruncated(_ i: Int) -> Bool { entries[i].status == 1 }

    /// Who sent datagram `i` and to which of our addresses. A datagram the
    /// kernel gave no packet info for has the unspecified address of the
    /// peer's family as `local` (replies then leave from whatever address
    /// the kernel picks).
    @inlinable
    public func path(_ i: Int) -> DatagramPath {
        let e = entries[i]
        let peer = SocketAddress(endpoint: e.peer) ?? SocketAddress(family: .ipv4, port: 0, high: 0, low: 0)
        let local = SocketAddress(endpoint: e.local)
            ?? SocketAddress(family: peer.family, port: e.local.port, high: 0, low: 0)
        return DatagramPath(peer: peer, local: local)
    }

    /// The ECN field of entry `i` (RFC 9000 §13.4.1): of every datagram
    /// coalesced in it (UDP GRO merges only datagrams of equal TOS), Not-ECT
    /// where the kernel reported none.
    @inlinable
    public func ecn(_ i: Int) -> ECNCodepoint { ECNCodepoint(field: entries[i].ecn) }

    // MARK: - Datagrams to send

    /// Slot `i`'s bytes, to write a datagram into (`slotSize` of them).
    @inlinable
    public func slot(_ i: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: entries[i].data, count: Int(entries[i].capacity))
    }

    /// Entry `i` is a datagram of `length` bytes (already in `slot(i)`) from
    /// `path.local` to `path.peer`, with `ecn` in its IP header (RFC 9000
    /// §13.4: ECT(0) while the path's ECN is being validated or works).
    /// `alone`: never sent as part of a segmented run (a path MTU probe,
    /// which may be larger than the device allows a run's segments).
    @inlinable
    public func setOutgoing(_ i: Int, length: Int, path: DatagramPath, ecn: ECNCodepoint = .notECT, alone: Bool = false) {
        precondition(length >= 0 && length <= Int(entries[i].capacity), "datagram larger than its slot")
        entries[i].length = UInt32(length)
        entries[i].ecn = ecn.rawValue
        entries[i].alone = alone ? 1 : 0
        entries[i].peer = path.peer.endpoint
        entries[i].local = path.local.endpoint
    }

    /// After a send: the errno of entry `i` if the kernel refused that one
    /// datagram (it was dropped; EMSGSIZE when over the path MTU), else 0.
    @inlinable
    public func sendError(_ i: Int) -> Int32 { entries[i].status }

    /// Sends put runs of datagrams to one peer, of one size but the last,
    /// in one message each (UDP_SEGMENT). Off when made: turn it on for a
    /// socket where `UDPSocket.supportsSegmentation`. A send the kernel
    /// refuses segmented (EIO, EINVAL) turns it off and goes out unsegmented.
    public var usesSegmentation: Bool {
        get { csys_udp_batch_segmentation(raw) != 0 }
        set { csys_udp_batch_set_segmentation(raw, newValue ? 1 : 0) }
    }

    /// Runs sent as one segmented message so far, and the datagrams in them.
    public var segmentedSends: (runs: Int, datagrams: Int) {
        var runs: UInt64 = 0, datagrams: UInt64 = 0
        csys_udp_batch_segmentation_counts(raw, &runs, &datagrams)
        return (Int(runs), Int(datagrams))
    }
}
