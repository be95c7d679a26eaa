import CPython

/// A Python object the process makes once and never replaces or releases:
/// a native type object, a stateless shared instance, the runtime module.
///
/// Why per process: there is one interpreter per process, and a type object
/// (or an immutable, stateless instance of one) carries no state of any
/// worker, so every worker context in the process may share it. Each is held
/// in a `static let`, whose first use runs under the Swift runtime's
/// once-lock (`swift_once`); the gateways touch theirs while being created on
/// the main thread, before any other worker thread exists, so the first use
/// never races a thread that holds the GIL. What belongs to one worker (its
/// gateway, its event loop, its caches) lives in that worker's instances,
/// never here.
public struct ProcessObject: @unchecked Sendable {
    public let ref: PyRef

    /// Takes over a new reference, kept for the life of the process.
    public init(_ ref: PyRef) { self.ref = ref }
}
