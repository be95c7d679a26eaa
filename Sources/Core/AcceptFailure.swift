import CSys

/// Why accept(2) gave no connection, sorted by what the accepting loop
/// should do next (see AcceptBackoff).
///
/// accept(2) fails for three kinds of reasons. The queue is empty (EAGAIN):
/// wait for the poller. The one connection at the head of the queue went
/// wrong (ECONNABORTED, or, on Linux, a network error already pending on
/// the new socket: the man page says to "treat them like EAGAIN by
/// retrying"): take the next. Or the process or the system is short of
/// something a new socket needs — descriptors (EMFILE per process, ENFILE
/// system-wide) or kernel memory (ENOMEM, ENOBUFS): the client stays in the
/// queue and, the listener being level-triggered, the poller reports it
/// again at once. Retrying then would spin at full CPU until the shortage
/// ends, so those pause accepting instead.
public enum AcceptFailure: Equatable, Sendable {
    /// EAGAIN: nobody is waiting.
    case queueEmpty
    /// The connection at the head of the queue is gone; the next may be fine.
    case connectionLost
    /// A shortage that lasts until descriptors or memory are given back.
    case exhausted(AcceptShortage)
    /// EINVAL: the socket no longer listens. The supervisor shuts the
    /// shared listener down when the server stops (SIGTERM reaches the
    /// workers a moment later): accepting from it is over, which is no
    /// shortage to log or retry.
    case listenerShutDown
    /// An errno accept(2) should not return on a listening socket (EBADF...):
    /// paused for alike, since retrying at once cannot help.
    case unexpected(errno: Int32)

    /// Classifies an errno from accept(2).
    public init(errno: Int32) {
        switch csys_accept_failure(errno) {
        case 0: self = .queueEmpty
        case 1: self = .connectionLost
        case 2: self = .exhausted(.processDescriptors)
        case 3: self = .exhausted(.systemDescriptors)
        case 4: self = .exhausted(.memory)
        case 5: self = .exhausted(.socketBuffers)
        case 7: self = .listenerShutDown
        default: self = .unexpected(errno: errno)
        }
    }

    /// Whether the accepting loop must pause (see AcceptBackoff).
    public var pausesAccepting: Bool {
        switch self {
        case .queueEmpty, .connectionLost: return false
        case .exhausted, .unexpected, .listenerShutDown: return true
        }
    }
}

/// What a new socket could not get.
public enum AcceptShortage: Equatable, Sendable {
    /// EMFILE: this process is at its descriptor limit (RLIMIT_NOFILE, `ulimit -n`).
    case processDescriptors
    /// ENFILE: the system is at its limit of open files (fs.file-max).
    case systemDescriptors
    /// ENOMEM: no kernel memory for the socket.
    case memory
    /// ENOBUFS: no socket buffer memory.
    case socketBuffers

    /// The errno's name, for the log line.
    public var errnoName: StaticString {
        switch self {
        case .processDescriptors: return "EMFILE"
        case .systemDescriptors: return "ENFILE"
        case .memory: return "ENOMEM"
        case .socketBuffers: return "ENOBUFS"
        }
    }
}
