import CPython
import PyBridge

/// The request fields a reusable environ was given, as (key, value)
/// objects by position, so the next request on it can tell whether its
/// fields are the same objects (a client repeating its headers, which
/// `RecentFields` turns into the same strs) and leave them, or take the old
/// ones out before putting its own in.
///
/// The recorded values are borrowed (the environ holding them keeps them
/// alive, so an equal pointer is the same object); the recorded keys are
/// strong references, since taking a repeated field's key out of the
/// environ may free it before its second position is reached. The scratch
/// pairs are borrowed from `RecentFields` for the length of one request.
struct GivenFields: ~Copyable {
    /// As many as `RecentFields` keeps positions for.
    static let capacity = 32
    private let recordedKeys: UnsafeMutablePointer<PyRef?>
    private let recordedValues: UnsafeMutablePointer<PyRef?>
    private let scratchKeys: UnsafeMutablePointer<PyRef?>
    private let scratchValues: UnsafeMutablePointer<PyRef?>
    private var recorded = 0

    init() {
        recordedKeys = .allocate(capacity: Self.capacity)
        recordedKeys.initialize(repeating: nil, count: Self.capacity)
        recordedValues = .allocate(capacity: Self.capacity)
        recordedValues.initialize(repeating: nil, count: Self.capacity)
        scratchKeys = .allocate(capacity: Self.capacity)
        scratchKeys.initialize(repeating: nil, count: Self.capacity)
        scratchValues = .allocate(capacity: Self.capacity)
        scratchValues.initialize(repeating: nil, count: Self.capacity)
    }

    deinit {
        for i in 0..<recorded { Py.xdecref(recordedKeys[i]) }
        recordedKeys.deallocate(); recordedValues.deallocate()
        scratchKeys.deallocate(); scratchValues.deallocate()
    }

    func setPair(_ i: Int, _ key: PyRef, _ value: PyRef) {
        scratchKeys[i] = key
        scratchValues[i] = value
    }

    func pair(_ i: Int) -> (PyRef, PyRef) { (scratchKeys[i]!, scratchValues[i]!) }

    /// The first `count` scratch pairs are the recorded ones.
    func matchesPairs(_ count: Int) -> Bool {
        guard count == recorded else { return false }
        for i in 0..<count where scratchKeys[i] != recordedKeys[i] || scratchValues[i] != recordedValues[i] {
            return false
        }
        return true
    }

    /// Takes the recorded fields' keys out of `env` (a repeated field's key
    /// is found only the first time).
    mutating func remove(from env: PyRef) {
        for i in 0..<recorded {
            if let key = recordedKeys[i], PyDict_DelItem(env, key) != 0 { PyErr_Clear() }
        }
        forget()
    }

    /// The first `count` scratch pairs are what the environ now holds.
    mutating func recordPairs(_ count: Int) {
        forget()
        for i in 0..<count { Py.incref(scratchKeys[i]!) }
        recordedKeys.update(from: scratchKeys, count: count)
        recordedValues.update(from: scratchValues, count: count)
        recorded = count
    }

    /// The environ holds no recorded fields (a fresh copy of the template).
    mutating func forget() {
        for i in 0..<recorded { Py.xdecref(recordedKeys[i]) }
        recorded = 0
    }
}
