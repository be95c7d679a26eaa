import CSys
import Core
import Options

/// The supervisor's UDP sockets for `--http3`: one SO_REUSEPORT group on
/// the TCP listener's address, and the steering program that hands each
/// datagram to the worker owning its connection (ReuseportSteering;
/// ARCHITECTURE.md, "QUIC across workers").
///
/// Layout. A worker context (a worker process, or each of its threads) reads
/// a socket of its own, and a replacement must not read its predecessor's:
/// the draining worker keeps receiving its connections' datagrams, which
/// name its socket. So each worker slot has `generations` blocks of
/// sockets, one socket per context in a block:
///
///     socket index = (slot * generations + generation) * contexts + context
///
/// bound in index order, so the index is also the socket's position in the
/// kernel's group, what the program returns. A worker is given the first
/// free block of its slot (`--worker-udp BASE:FD,...`) and writes
/// `BASE + context` into every connection ID it issues.
///
/// Generations. A block is held from the worker's spawn until it is reaped.
/// New connections go to the blocks of the workers that are ready and not
/// draining (the "current" ones), so a replacement takes new connections
/// from the moment it reports ready, when its predecessor is told to drain;
/// the predecessor's block stays in the group and keeps receiving what
/// names it until the predecessor exits. Three generations let a slot be
/// replaced again while the previous one still drains (a second SIGHUP
/// within --graceful-timeout); should all three be held, the block of the
/// worker that has drained longest is reused, and a warning says its
/// remaining connections may break.
///
/// The supervisor holds every socket for its whole life: the kernel keeps
/// a group's order only while no socket leaves it (closing one moves the
/// last socket into its place), and workers close only their copies.
/// Datagrams that name a block nobody holds (an exited worker's stragglers)
/// wait in that socket's buffer, bounded by its size, until a later worker
/// of the slot reads and drops them as unknown connections.
final class DatagramGroup {
    static let generations = 3

    let fds: [Int32]
    let port: Int
    let slots: Int
    let contexts: Int
    /// Per block: the pid holding it.
    private var holders: [Int32?]
    private var steered: [Int] = []

    /// Why the group could not be bound, and whether the port was taken
    /// (EADDRINUSE), which a caller that let the kernel choose the TCP port
    /// can answer by choosing again.
    struct BindFailure: Error {
        let failure: StartupFailure
        let portTaken: Bool
    }

    init(listener: Listener, port: Int, slots: Int, contexts: Int) throws(BindFailure) {
        let count = slots * DatagramGroup.generations * contexts
        guard count <= QUICConnectionIDLayout.maxSocketIndex + 1 else {
            throw BindFailure(failure: StartupFailure("--http3: \(slots) workers of \(contexts) threads need \(count) UDP sockets, more than 65,536"),
                              portTaken: false)
        }
        switch UDPSocket.bindGroup(like: listener.fd, port: port, count: count) {
        case .failure(let f):
            throw BindFailure(failure: StartupFailure("cannot bind UDP \(listener.host):\(port) for HTTP/3 (\(f.reason))"),
                              portTaken: f.addressInUse)
        case .success(let (fds, bound)):
            self.fds = fds
            self.port = bound
        }
        self.slots = slots
        self.contexts = contexts
        holders = Array(repeating: nil, count: slots * DatagramGroup.generations)
    }

    /// Where a worker of `slot` reads: the block for its spawn, the
    /// `--worker-udp` value and the descriptors it keeps. `draining` lists
    /// the slot's draining workers, oldest first, for when every block is
    /// held.
    func assign(slot: Int, drainingOldestFirst: [Int32]) -> (block: Int, argument: String, fds: [Int32]) {
        let blocks = (0..<DatagramGroup.generations).map { slot * DatagramGroup.generations + $0 }
        var block = blocks.first { holders[$0] == nil }
        if block == nil {
            let victim = drainingOldestFirst.first { pid in blocks.contains { holders[$0] == pid } }
            block = blocks.first { holders[$0] == victim } ?? blocks[0]
            Log.warning("every UDP socket generation of worker slot \(slot) is in use: the new worker shares "
                        + "worker \(holders[block!].map(String.init) ?? "?")'s sockets, whose QUIC connections may break")
        }
        let base = block! * contexts
        let own = Array(fds[base..<(base + contexts)])
        return (block!, "\(base):" + own.map(String.init).joined(separator: ","), own)
    }

    /// The worker spawned with `block` (assign) is `pid`.
    func hold(_ block: Int, by pid: Int32) { holders[block] = pid }

    /// `pid` has exited: its block is free.
    func release(pid: Int32) {
        for i in holders.indices where holders[i] == pid { holders[i] = nil }
    }

    /// New connections go to the sockets of `blocks` (the ready, not
    /// draining, workers'); re-attaches the program when that changed.
    /// With none (before the first worker is ready) the program stays as
    /// it was: at startup, every new connection to the first block's
    /// sockets, which the first worker reads once it serves.
    func steerNewConnections(to blocks: [Int]) throws(StartupFailure) {
        var sockets = blocks.sorted().flatMap { b in (b * contexts)..<((b + 1) * contexts) }
        if sockets.isEmpty {
            guard steered.isEmpty else { return }
            sockets = Array(0..<contexts)
        }
        guard sockets != steered else { return }
        guard let program = ReuseportSteering.program(groupSize: fds.count, newConnectionSockets: sockets) else {
            throw StartupFailure("--http3: no steering program fits \(sockets.count) sockets")
        }
        let rc = program.withUnsafeBytes { csys_udp_attach_steering(fds[0], $0.baseAddress, Int32(program.count)) }
        guard rc == 0 else {
            throw StartupFailure("cannot attach the QUIC steering program (SO_ATTACH_REUSEPORT_CBPF): "
                                 + SystemError(call: "setsockopt", errno: csys_errno()).description)
        }
        steered = sockets
        Log.debug("QUIC: new connections go to UDP sockets \(sockets.map(String.init).joined(separator: ","))")
    }
}
