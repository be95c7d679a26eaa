// A bounded first-in first-out queue of DATAGRAM payloads (RFC 9221).
//
// Datagrams are unreliable by design (§5: "... DATAGRAM frames are not
// retransmitted"), so a full queue drops instead of blocking: the receiver
// of a queue that overflows loses the newest arrivals, and the count of
// what was dropped is kept for the operator.

struct DatagramQueue {
    let maxCount: Int
    let maxBytes: Int
    private var items: [[UInt8]] = []
    private var head = 0
    private(set) var bytes = 0
    /// Payloads refused because the queue was full.
    private(set) var dropped: UInt64 = 0

    init(maxCount: Int, maxBytes: Int) {
        self.maxCount = maxCount
        self.maxBytes = maxBytes
    }

    var count: Int { items.count - head }
    var isEmpty: Bool { head == items.count }
    var first: [UInt8]? { isEmpty ? nil : items[head] }

    /// Appends `payload`, or counts it as dropped and returns false when it
    /// would pass either bound.
    mutating func push(_ payload: [UInt8]) -> Bool {
        guard count < maxCount, bytes + payload.count <= maxBytes else {
            dropped += 1
            return false
        }
        items.append(payload)
        bytes += payload.count
        return true
    }

    mutating func pop() -> [UInt8]? {
        guard !isEmpty else { return nil }
        let payload = items[head]
        items[head] = []
        head += 1
        bytes -= payload.count
        // Compact once the consumed prefix dominates, keeping the capacity.
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 32 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return payload
    }

    mutating func removeAll() {
        items.removeAll()
        head = 0
        bytes = 0
    }
}
