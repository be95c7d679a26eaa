// What each packet we sent carried, so that an acknowledgment or a loss can
// be turned into actions on what the frames were about (RFC 9000 §13.3:
// lost information is sent again in new frames, never the packet itself;
// values that have changed since — flow-control limits — are sent as they
// are now, not as they were).
//
// Loss recovery (Sources/QUIC/Recovery) knows packets by number, size and
// time only; this log knows their frames. Records are appended in packet
// number order into two reusable arrays — the packets and a flat list of
// their frames — so sending allocates nothing in steady state; a packet
// acknowledged or lost is marked resolved and the resolved front is dropped
// in chunks.

import Core

/// One frame of a sent packet, as far as its fate matters.
enum SentFrame: Equatable, Sendable {
    /// An ACK frame with this Largest Acknowledged (§13.2.4).
    case ack(largest: UInt64)
    case crypto(offset: UInt64, length: Int)
    case stream(id: UInt64, offset: UInt64, length: Int, fin: Bool)
    case resetStream(id: UInt64)
    case stopSending(id: UInt64)
    case maxData(UInt64)
    case maxStreamData(id: UInt64, UInt64)
    case maxStreams(bidirectional: Bool, UInt64)
    case dataBlocked(UInt64)
    case streamDataBlocked(id: UInt64, UInt64)
    case streamsBlocked(bidirectional: Bool, UInt64)
    case newConnectionID(sequence: UInt64)
    case retireConnectionID(sequence: UInt64)
    case handshakeDone
    case newToken
    case ping
}

struct SentPacketLog {
    struct Packet {
        var packetNumber: UInt64
        /// Index of the first frame in `frames` (absolute, see `framesBase`).
        var firstFrame: Int
        var frameCount: Int
        var resolved: Bool
    }

    private var packets: [Packet] = []
    private var head = 0
    private var frames: [SentFrame] = []
    /// Absolute index of `frames[0]`.
    private var framesBase = 0
    private var open: Packet?

    var outstandingCount: Int { packets.count - head }

    /// Starts recording packet `pn` (numbers only grow).
    mutating func begin(_ pn: UInt64) {
        precondition(open == nil)
        open = Packet(packetNumber: pn, firstFrame: framesBase + frames.count, frameCount: 0, resolved: false)
    }

    mutating func add(_ frame: SentFrame) {
        frames.append(frame)
        open!.frameCount += 1
    }

    /// Ends the packet begun last; `keep` false drops it (a packet with
    /// nothing worth tracking, or one that was not sent after all).
    mutating func commit(keep: Bool = true) {
        guard let p = open else { return }
        open = nil
        if keep && p.frameCount > 0 {
            packets.append(p)
        } else {
            frames.removeLast(p.frameCount)
        }
    }

    /// Resolves packet `pn` (acknowledged or lost) and appends its frames to
    /// `frames`; nothing when it is unknown or already resolved.
    mutating func resolve(_ pn: UInt64, into out: inout [SentFrame]) {
        var lo = head, hi = packets.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if packets[mid].packetNumber < pn { lo = mid + 1 } else { hi = mid }
        }
        guard lo < packets.count, packets[lo].packetNumber == pn, !packets[lo].resolved else { return }
        packets[lo].resolved = true
        let p = packets[lo]
        for i in p.firstFrame..<(p.firstFrame + p.frameCount) { out.append(frames[i - framesBase]) }
        compact()
    }

    /// Every unresolved packet's frames, oldest first, resolving them (key
    /// discard: the space's packets will never be acknowledged).
    mutating func resolveAll(_ body: (SentFrame) -> Void) {
        for i in head..<packets.count where !packets[i].resolved {
            packets[i].resolved = true
            let p = packets[i]
            for f in p.firstFrame..<(p.firstFrame + p.frameCount) { body(frames[f - framesBase]) }
        }
        compact()
    }

    /// Gives back the arrays' capacity while no packet is outstanding (an
    /// idle connection; a busy one keeps them grown, so recording a packet
    /// allocates nothing).
    mutating func releaseIdleCapacity() {
        guard open == nil, head == packets.count else { return }
        framesBase += frames.count
        packets = []
        frames = []
        head = 0
    }

    private mutating func compact() {
        while head < packets.count && packets[head].resolved { head += 1 }
        if head == packets.count {
            packets.removeAll(keepingCapacity: true)
            head = 0
            if open == nil {
                framesBase += frames.count
                frames.removeAll(keepingCapacity: true)
            }
        } else if head >= 64 && head >= packets.count / 2 {
            let dropFrames = packets[head].firstFrame - framesBase
            packets.removeSubrange(0..<head)
            head = 0
            frames.removeSubrange(0..<dropFrames)
            framesBase += dropFrames
        }
    }
}
