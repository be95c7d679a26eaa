/// The classic BPF program the supervisor attaches to its SO_REUSEPORT
/// group of UDP sockets (SO_ATTACH_REUSEPORT_CBPF) so that every datagram
/// of a QUIC connection reaches the socket, and so the worker, that owns
/// the connection. The kernel runs it for each datagram with the UDP
/// payload at offset 0; its return value is the index of the socket in the
/// group (the order the sockets were bound in). An index outside the group
/// would make the kernel fall back to its own 4-tuple hash over every
/// socket, old generations included, so the program never returns one.
///
/// Theory of operation (ARCHITECTURE.md, "QUIC across workers"):
///
///     byte 0 has 0x80 (long header, RFC 9000 §17.2)?
///       no  - short header (§17.3): DCID at 1, our length (8). Its bytes
///             1-2 (payload 2-3) name the socket if the DCID looks like
///             ours (QUICConnectionIDLayout) and the index is in the
///             group; otherwise hash
///       yes - DCID length at 5, DCID at 6. Length 8 and ours: bytes 1-2
///             (payload 7-8) name the socket. Otherwise it is the DCID a
///             client chose for its first Initial (or 0-RTT), at least 8
///             unpredictable bytes (§7.2): its first 4 bytes are the hash,
///             the same for every datagram of that connection attempt
///     hash  - when no DCID is long enough, the kernel's flow hash
///             (SKF_AD_RXHASH; 0 on loopback, which only unbalances)
///     pick  - hash % m selects one of the m sockets of the workers that
///             take new connections (`newConnectionSockets`)
///
/// A client's random 8-byte DCID passes for ours when its top 3 bits are
/// 0 and its bytes 1-2 are below the group size: a chance of
/// 1/8 x size/65536 (1 in 131,072 with 4 sockets). The Initial then goes to
/// the socket it names, consistently for the whole attempt, which serves it
/// when that worker takes new connections; otherwise the attempt times out
/// and the client's retry (with a new DCID) lands normally.
public enum ReuseportSteering {
    /// A `struct sock_filter` (linux/filter.h), 8 bytes.
    public struct Instruction: Equatable, Sendable {
        public var code: UInt16
        public var jt: UInt8
        public var jf: UInt8
        public var k: UInt32

        public init(code: UInt16, jt: UInt8 = 0, jf: UInt8 = 0, k: UInt32 = 0) {
            self.code = code
            self.jt = jt
            self.jf = jf
            self.k = k
        }
    }

    // linux/bpf_common.h and linux/filter.h
    public static let ldW: UInt16 = 0x00 | 0x00 | 0x20    // BPF_LD | BPF_W | BPF_ABS
    public static let ldH: UInt16 = 0x00 | 0x08 | 0x20    // BPF_LD | BPF_H | BPF_ABS
    public static let ldB: UInt16 = 0x00 | 0x10 | 0x20    // BPF_LD | BPF_B | BPF_ABS
    public static let ldLen: UInt16 = 0x00 | 0x00 | 0x80  // BPF_LD | BPF_W | BPF_LEN
    public static let modK: UInt16 = 0x04 | 0x90 | 0x00   // BPF_ALU | BPF_MOD | BPF_K
    public static let ja: UInt16 = 0x05 | 0x00            // BPF_JMP | BPF_JA
    public static let jeqK: UInt16 = 0x05 | 0x10 | 0x00   // BPF_JMP | BPF_JEQ | BPF_K
    public static let jgeK: UInt16 = 0x05 | 0x30 | 0x00   // BPF_JMP | BPF_JGE | BPF_K
    public static let jsetK: UInt16 = 0x05 | 0x40 | 0x00  // BPF_JMP | BPF_JSET | BPF_K
    public static let retK: UInt16 = 0x06 | 0x00          // BPF_RET | BPF_K
    public static let retA: UInt16 = 0x06 | 0x10          // BPF_RET | BPF_A
    /// SKF_AD_OFF + SKF_AD_RXHASH: an absolute load of it reads skb->hash.
    public static let rxhashOffset: UInt32 = 0xFFFF_F000 &+ 32
    /// BPF_MAXINSNS.
    public static let maxInstructions = 4096

    /// The program for a group of `groupSize` sockets whose new
    /// connections go to `newConnectionSockets` (indices in the group, at
    /// least one). Nil if the sizes do not fit (group over 65,536 sockets,
    /// an index outside it, or more sockets than the 4,096 instructions hold).
    public static func program(groupSize: Int, newConnectionSockets: [Int]) -> [Instruction]? {
        guard groupSize >= 1, groupSize <= QUICConnectionIDLayout.maxSocketIndex + 1, !newConnectionSockets.isEmpty,
              newConnectionSockets.allSatisfy({ $0 >= 0 && $0 < groupSize }) else { return nil }
        let id = QUICConnectionIDLayout.self
        let g = UInt32(groupSize)
        let rotation = UInt32(id.configRotationMask)
        // Fixed part; jump offsets count from the next instruction.
        let hash = 26, hashLong = 20, pick = 27
        func to(_ target: Int, from at: Int) -> UInt8 { UInt8(target - (at + 1)) }
        var p: [Instruction] = [
            /* 0 */ Instruction(code: ldLen),
            /* 1 */ Instruction(code: jgeK, jt: 0, jf: to(hash, from: 1), k: 1),
            /* 2 */ Instruction(code: ldB, k: 0),
            /* 3 */ Instruction(code: jsetK, jt: to(11, from: 3), jf: 0, k: 0x80),
            // Short header: DCID at 1.
            /* 4 */ Instruction(code: ldLen),
            /* 5 */ Instruction(code: jgeK, jt: 0, jf: to(hash, from: 5), k: UInt32(1 + id.length)),
            /* 6 */ Instruction(code: ldB, k: 1),
            /* 7 */ Instruction(code: jsetK, jt: to(hash, from: 7), jf: 0, k: rotation),
            /* 8 */ Instruction(code: ldH, k: 2),
            /* 9 */ Instruction(code: jgeK, jt: to(hash, from: 9), jf: 0, k: g),
            /* 10 */ Instruction(code: retA),
            // Long header: version 1-4, DCID length at 5, DCID at 6.
            /* 11 */ Instruction(code: ldLen),
            /* 12 */ Instruction(code: jgeK, jt: 0, jf: to(hashLong, from: 12), k: UInt32(6 + id.length)),
            /* 13 */ Instruction(code: ldB, k: 5),
            /* 14 */ Instruction(code: jeqK, jt: 0, jf: to(hashLong, from: 14), k: UInt32(id.length)),
            /* 15 */ Instruction(code: ldB, k: 6),
            /* 16 */ Instruction(code: jsetK, jt: to(hashLong, from: 16), jf: 0, k: rotation),
            /* 17 */ Instruction(code: ldH, k: 7),
            /* 18 */ Instruction(code: jgeK, jt: to(hashLong, from: 18), jf: 0, k: g),
            /* 19 */ Instruction(code: retA),
            // A client-chosen DCID: its first 4 bytes, if it has them.
            /* 20 */ Instruction(code: ldLen),
            /* 21 */ Instruction(code: jgeK, jt: 0, jf: to(hash, from: 21), k: 10),
            /* 22 */ Instruction(code: ldB, k: 5),
            /* 23 */ Instruction(code: jgeK, jt: 0, jf: to(hash, from: 23), k: 4),
            /* 24 */ Instruction(code: ldW, k: 6),
            /* 25 */ Instruction(code: ja, k: UInt32(pick - 26)),
            /* 26 */ Instruction(code: ldW, k: rxhashOffset),
            /* 27 */ Instruction(code: modK, k: UInt32(newConnectionSockets.count)),
        ]
        precondition(p.count == pick + 1)
        // hash % m -> the socket: a chain of tests, the last one implied.
        for (j, socket) in newConnectionSockets.enumerated() {
            if j < newConnectionSockets.count - 1 {
                p.append(Instruction(code: jeqK, jt: 0, jf: 1, k: UInt32(j)))
            }
            p.append(Instruction(code: retK, k: UInt32(socket)))
        }
        return p.count <= maxInstructions ? p : nil
    }
}
