import CSys
import Core
import Gateway
import HTTP1

/// The worker's staging buffer for response bytes (status line, fields,
/// chunk framing, small body blocks) on their way to `transmit`. It is
/// empty between calls: nothing staged waits across an application's turn.
struct OutputBuffer: ~Copyable {
    private(set) var base: UnsafeMutableRawPointer
    private(set) var capacity: Int
    var count = 0

    init(capacity: Int = 64 * 1024) {
        self.capacity = capacity
        base = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit { base.deallocate() }

    var free: Int { capacity - count }

    mutating func reserve(_ n: Int) {
        guard count + n > capacity else { return }
        var c = capacity
        while c < count + n { c *= 2 }
        let nb = UnsafeMutableRawPointer.allocate(byteCount: c, alignment: 16)
        nb.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = nb
        capacity = c
    }

    /// Returns to the normal size after an unusually large head.
    mutating func shrinkIfLarge() {
        guard capacity > 256 * 1024, count == 0 else { return }
        base.deallocate()
        capacity = 64 * 1024
        base = .allocate(byteCount: capacity, alignment: 16)
    }

    @inline(__always)
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        reserve(bytes.count)
        if bytes.count > 0 { (base + count).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
        count += bytes.count
    }

    @inline(__always)
    mutating func append(_ s: StaticString) {
        append(UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    mutating func append(decimal value: Int64) {
        reserve(20)
        var v = value
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes of scratch on the stack
        let n = withUnsafeMutableBytes(of: &digits) { d -> Int in
            var i = 24
            repeat {
                i -= 1
                d[i] = UInt8(truncatingIfNeeded: 0x30 + v % 10)
                v /= 10
            } while v > 0
            let len = 24 - i
            (base + count).copyMemory(from: d.baseAddress! + i, byteCount: len)
            return len
        }
        count += n
    }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// Reserves `length` bytes and has `write` fill them from the end of
    /// what is staged (size first, write once: the HTTP/1 writers say their
    /// length, then write without checking capacity).
    @inline(__always)
    mutating func write(_ length: Int, _ write: (UnsafeMutableRawPointer) -> Int) {
        reserve(length)
        count += write(base + count)
    }
}

/// Non-blocking writes of two buffers (staged bytes and a body block).
enum SocketWriter {
    /// Writes as much of `a` then `b` as the socket takes now: returns the
    /// bytes written, and whether the connection failed (EPIPE, reset...).
    static func writeSome(fd: Int32, _ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> (Int, Bool) {
        var aOff = 0, bOff = 0
        while aOff < a.count || bOff < b.count {
            let n: Int
            if aOff < a.count {
                n = csys_write2(fd, a.baseAddress! + aOff, a.count - aOff,
                                b.count > bOff ? b.baseAddress! + bOff : nil, b.count - bOff)
            } else {
                n = csys_write(fd, b.baseAddress! + bOff, b.count - bOff)
            }
            if n < 0 {
                let e = csys_errno()
                if csys_eintr(e) != 0 { continue }
                return (aOff + bOff, csys_eagain(e) == 0)
            }
            var left = n
            let fromA = min(left, a.count - aOff)
            aOff += fromA
            left -= fromA
            bOff += left
        }
        return (aOff + bOff, false)
    }
}

/// The gateway's response fields go to the HTTP/1 writers as they are.
extension ResponseField: H1FieldBytes {}
