import CSys

/// One UDP socket of the server's SO_REUSEPORT group, as a worker holds it:
/// its descriptor, its index in the group (which the connection IDs the
/// worker issues carry, see QUICConnectionIDLayout), its family and port.
/// The socket is non-blocking; the worker's poller says when to read it
/// and, after a send that did not take everything, when to write.
public struct UDPSocket: Sendable {
    public let fd: Int32
    /// The index the steering program returns for this socket.
    public let index: Int
    /// 6 for an IPv6 socket (dual-stack or not), 4 for IPv4.
    public let family: Int32
    public let port: UInt16

    /// A socket inherited from the supervisor (or bound by a test).
    public init?(fd: Int32, index: Int) {
        let family = csys_udp_family(fd)
        let port = csys_local_port(fd)
        guard family > 0, port >= 0 else { return nil }
        self.fd = fd
        self.index = index
        self.family = family
        self.port = UInt16(port)
    }

    /// Reads the datagrams waiting, up to the batch's capacity, into its
    /// entries 0..<n (`recvmmsg`). 0: none is waiting (wait for readable).
    /// Nil: the socket itself failed (logged by the caller; errno says why).
    /// Errors left by earlier datagrams (an ICMP port unreachable, a send
    /// over the path MTU) are taken and skipped, and EINTR retried, inside.
    @inlinable
    public func receive(into batch: inout DatagramBatch) -> Int? {
        let n = csys_udp_receive(fd, batch.raw, Int32(batch.capacity), Int32(port))
        return n < 0 ? nil : Int(n)
    }

    /// Sends entries `range` of the batch (`sendmmsg`, runs segmented when
    /// `batch.usesSegmentation`) and returns how many
    /// leading ones the socket dealt with: sent, or dropped because the
    /// kernel refused that datagram (`batch.sendError(i)` says why). Less
    /// than `range.count`: the socket's buffer is full; send the rest when
    /// it is writable. Nil: the socket itself failed.
    @inlinable
    public func send(_ batch: inout DatagramBatch, _ range: Range<Int>) -> Int? {
        precondition(range.lowerBound >= 0 && range.upperBound <= batch.capacity)
        let n = csys_udp_send(fd, family, batch.raw, Int32(range.lowerBound), Int32(range.count))
        return n < 0 ? nil : Int(n)
    }

    /// Binds `count` sockets of one group on the local address of the
    /// listening socket `likeFD`, at `port` (0: a free one), in index
    /// order. Returns the descriptors and the port, or the reason.
    public static func bindGroup(like likeFD: Int32, port: Int, count: Int) -> Result<(fds: [Int32], port: Int), BindFailure> {
        var fds = [Int32](repeating: -1, count: count)
        var err = [CChar](repeating: 0, count: 256)
        let bound = csys_udp_bind_group(likeFD, Int32(port), Int32(count), &fds, &err, 256)
        guard bound >= 0 else {
            let inUse = csys_eaddrinuse(csys_errno()) != 0
            return .failure(BindFailure(reason: String(decoding: err.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
                                        addressInUse: inUse))
        }
        return .success((fds, Int(bound)))
    }

    public struct BindFailure: Error, Sendable {
        public let reason: String
        /// EADDRINUSE: another socket holds the port.
        public let addressInUse: Bool
    }

    /// The kernel knows UDP_SEGMENT (GSO): a batch sent on this socket may
    /// use it (`DatagramBatch.usesSegmentation`). Whether the route's device
    /// takes it shows only on the first send, which falls back if not.
    public var supportsSegmentation: Bool { csys_udp_segmentation_supported(fd) != 0 }

    /// Turns UDP GRO on for this socket: a receive may then coalesce
    /// datagrams of one sender into one entry, up to 64 KiB, so every batch
    /// received on it needs slots of `DatagramBatch.maxSlotSize`. False
    /// where the kernel has no UDP GRO (nothing changed).
    public func enableReceiveCoalescing() -> Bool { csys_udp_enable_gro(fd) == 0 }

    /// The receive and send buffer sizes the kernel granted.
    public var bufferSizes: (receive: Int, send: Int) {
        var r: Int32 = 0, s: Int32 = 0
        _ = csys_udp_buffer_sizes(fd, &r, &s)
        return (Int(r), Int(s))
    }
}
