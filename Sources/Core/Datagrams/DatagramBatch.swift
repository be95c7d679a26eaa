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
///             handle(batch.bytes(i), batch.path(i))
///         }
///     }
///
/// Sending: write each datagram into `slot(i)`, then `setOutgoing(i,
/// length:path:)`, and `send` entries `0..<count`; what the socket did not
/// take is sent when it is writable again.
///
/// The bytes of a received datagram stay valid until the batch is received
/// into again. `~Copyable`: the batch owns its memory and frees it once.
public struct DatagramBatch: ~Copyable {
    @usableFromInline let raw: OpaquePointer
    @usableFromInline let entries: UnsafeMutablePointer<csys_datagram>
    public let capacity: Int
    public let slotSize: Int
    private let storage: UnsafeMutableRawPointer

    /// The largest UDP payload (RFC 768 over IPv4: 65,535 - 8 - 20); a slot
    /// larger than this is never filled.
    public static let maxSlotSize = 65_507

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

    /// Datagram `i`'s bytes (after a receive that returned more than `i`).
    @inlinable
    public func bytes(_ i: Int) -> UnsafeRawBufferPointer {
        let e = entries[i]
        return UnsafeRawBufferPointer(start: e.data, count: Int(min(e.length, e.capacity)))
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

    // MARK: - Datagrams to send

    /// Slot `i`'s bytes, to write a datagram into (`slotSize` of them).
    @inlinable
    public func slot(_ i: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: entries[i].data, count: Int(entries[i].capacity))
    }

    /// Entry `i` is a datagram of `length` bytes (already in `slot(i)`) from
    /// `path.local` to `path.peer`.
    @inlinable
    public func setOutgoing(_ i: Int, length: Int, path: DatagramPath) {
        precondition(length >= 0 && length <= Int(entries[i].capacity), "datagram larger than its slot")
        entries[i].length = UInt32(length)
        entries[i].peer = path.peer.endpoint
        entries[i].local = path.local.endpoint
    }

    /// After a send: the errno of entry `i` if the kernel refused that one
    /// datagram (it was dropped; EMSGSIZE when over the path MTU), else 0.
    @inlinable
    public func sendError(_ i: Int) -> Int32 { entries[i].status }
}
