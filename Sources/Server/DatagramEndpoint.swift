import CSys
import Core

/// What a worker does with the datagrams its UDP socket receives, and when
/// that socket has room again. The QUIC layer implements it (finding each
/// datagram's connection by its destination connection ID, or starting one
/// for an Initial); until then `DroppingDatagramHandler` reads and drops.
///
/// Called on the worker's loop thread, with the worker's `now`. The
/// batch's bytes are valid only during the call (the next receive reuses
/// them); a handler keeps what it needs by copying or decrypting in place
/// into its own buffers.
protocol DatagramHandler: AnyObject {
    /// Entries `0..<count` of `batch` arrived on `socket`, each one
    /// datagram or several coalesced (`batch.datagrams(i)`). Truncated ones
    /// (`batch.isTruncated(i)`: longer than a slot) are among them, to be
    /// dropped.
    func datagramsReceived(_ batch: borrowing DatagramBatch, count: Int, on socket: UDPSocket, now: Instant)
    /// The socket can take datagrams again after a `send` that did not take
    /// them all (reported only while `DatagramEndpoint.wantsWritable`).
    func datagramSocketWritable(_ socket: UDPSocket, now: Instant)
}

/// The handler of a worker that has a UDP socket but no QUIC layer yet:
/// every datagram costs the receive and is dropped.
final class DroppingDatagramHandler: DatagramHandler {
    private(set) var dropped = 0

    func datagramsReceived(_ batch: borrowing DatagramBatch, count: Int, on socket: UDPSocket, now: Instant) {
        for i in 0..<count { for _ in batch.datagrams(i) { dropped &+= 1 } }
    }

    func datagramSocketWritable(_ socket: UDPSocket, now: Instant) {}
}

/// A worker's UDP socket (`--http3`), in the worker's poller beside the TCP
/// listener: on readiness it receives in batches (`recvmmsg`, into one
/// batch allocated here once) and passes each batch to the handler. Where
/// the kernel has UDP GRO the socket coalesces: an entry may hold several
/// datagrams of one sender (`batch.datagrams(i)` cuts them apart). The
/// socket is the one the supervisor bound for this worker context
/// (`--worker-udp`); `socket.index` is what the connection IDs this worker
/// issues must carry (QUICConnectionIDLayout), so that the kernel's
/// steering program brings their datagrams here.
///
/// Sending is the handler's: it fills a `DatagramBatch` of its own and
/// calls `socket.send`; when the socket takes less than everything, it sets
/// `wantsWritable` and is called back when there is room.
final class DatagramEndpoint {
    let socket: UDPSocket
    var handler: DatagramHandler
    private var batch: DatagramBatch
    /// The socket is in the poller for writability too.
    private(set) var interest: IOEvents = .readable

    /// Entries in one receive without UDP GRO: 64 datagrams of 2 KiB, 128
    /// KiB per worker.
    static let batchCapacity = 64
    /// Bytes per received datagram without UDP GRO: an Ethernet-MTU datagram
    /// and margin, the most a client sends before it learns our
    /// max_udp_payload_size (RFC 9000 §18.2), which the QUIC layer must
    /// advertise at most this. Longer datagrams arrive truncated and are
    /// dropped.
    static let slotSize = 2048
    /// Entries in one receive with UDP GRO, each of 64 KiB (a coalesced
    /// receive fills up to that): 1 MiB per worker, holding up to 16 runs
    /// of one sender's datagrams each, or 16 single datagrams when nothing
    /// coalesces (many clients); `batchesPerWakeup` still bounds a wakeup.
    static let coalescingBatchCapacity = 16
    /// Batches received per readiness before the loop serves the rest of its
    /// events (level-triggered: what is left is reported again).
    static let batchesPerWakeup = 16

    /// Receives coalesce datagrams (UDP GRO), where the kernel has it.
    let coalesces: Bool

    init(socket: UDPSocket, handler: DatagramHandler) {
        self.socket = socket
        self.handler = handler
        coalesces = socket.enableReceiveCoalescing()
        batch = coalesces
            ? DatagramBatch(capacity: DatagramEndpoint.coalescingBatchCapacity, slotSize: DatagramBatch.maxSlotSize)!
            : DatagramBatch(capacity: DatagramEndpoint.batchCapacity, slotSize: DatagramEndpoint.slotSize)!
    }

    /// Readiness from the poller.
    func onEvents(_ events: IOEvents, now: Instant) {
        if events.contains(.writable) { handler.datagramSocketWritable(socket, now: now) }
        if events.contains(.readable) || events.contains(.error) { receive(now: now) }
    }

    private func receive(now: Instant) {
        for _ in 0..<DatagramEndpoint.batchesPerWakeup {
            guard let n = socket.receive(into: &batch) else {
                // The socket itself failed (not a datagram's error): say so
                // once per readiness; the loop goes on with TCP.
                Log.error("UDP socket \(socket.index): \(SystemError(call: "recvmmsg", errno: csys_errno()))")
                return
            }
            if n == 0 { return }
            Log.debug("UDP socket \(socket.index): \(n) datagram\(n == 1 ? "" : "s")")
            handler.datagramsReceived(batch, count: n, on: socket, now: now)
            if n < batch.capacity { return }
        }
    }

    /// Whether the handler wants to hear when the socket has room; returns
    /// the interest to give the poller if it changed.
    func setWantsWritable(_ on: Bool) -> IOEvents? {
        let wanted: IOEvents = on ? [.readable, .writable] : .readable
        guard wanted != interest else { return nil }
        interest = wanted
        return wanted
    }
}
