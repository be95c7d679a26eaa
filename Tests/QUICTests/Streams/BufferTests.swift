// ReassemblyBuffer and SendBuffer (RFC 9000 §2.2, §13.3).

import XCTest
@testable import QUIC

final class ReassemblyBufferTests: XCTestCase {
    private func write(_ b: inout ReassemblyBuffer, _ offset: UInt64, _ data: [UInt8]) {
        data.withUnsafeBytes { b.write(offset: offset, $0) }
    }

    private func readable(_ b: ReassemblyBuffer) -> [UInt8] { b.withContiguousBytes { Array($0) } }

    /// Fed whole, one byte at a time in reverse, and with overlapping
    /// duplicates: the same bytes come out.
    func testEveryOrderGivesTheSameBytes() {
        let data = (0..<300).map { UInt8(truncatingIfNeeded: $0 * 7) }
        var whole = ReassemblyBuffer()
        write(&whole, 0, data)
        XCTAssertEqual(readable(whole), data)
        var reversed = ReassemblyBuffer()
        for i in stride(from: data.count - 1, through: 0, by: -1) {
            write(&reversed, UInt64(i), [data[i]])
            XCTAssertEqual(reversed.contiguousCount, i == 0 ? data.count : 0)
        }
        XCTAssertEqual(readable(reversed), data)
        var overlapping = ReassemblyBuffer()
        write(&overlapping, 100, Array(data[100..<250]))
        write(&overlapping, 50, Array(data[50..<150]))
        write(&overlapping, 0, Array(data[0..<60]))
        write(&overlapping, 200, Array(data[200...]))
        XCTAssertEqual(readable(overlapping), data)
        XCTAssertEqual(overlapping.receivedEnd, 300)
    }

    /// Out-of-order ranges wait beyond the gap; the bytes that fill it make
    /// everything they now reach readable, whatever order it came in.
    func testFillingAGapTakesAlongTheRangesBeyondIt() {
        let data = (0..<60).map { UInt8($0 + 1) }
        var b = ReassemblyBuffer()
        write(&b, 10, Array(data[10..<20]))
        write(&b, 30, Array(data[30..<40]))
        write(&b, 50, Array(data[50..<60]))
        XCTAssertEqual(b.contiguousCount, 0)
        XCTAssertEqual(b.receivedEnd, 60)
        write(&b, 0, Array(data[0..<35]))  // fills 0..<10 and 20..<30, overlaps 30..<35
        XCTAssertEqual(readable(b), Array(data[0..<40]))
        b.consume(25)
        write(&b, 40, Array(data[40..<50]))
        XCTAssertEqual(readable(b), Array(data[25..<60]))
        XCTAssertEqual(b.receivedEnd, 60)
        b.consume(35)
        XCTAssertEqual(b.bufferedByteCount, 0)
        // In order again after the buffer emptied (its small storage freed).
        write(&b, 60, [7, 8, 9])
        XCTAssertEqual(readable(b), [7, 8, 9])
        // Discarding skips what is readable and what waits beyond a gap.
        write(&b, 70, [1])
        b.discard(upTo: 65)
        XCTAssertEqual(b.contiguousCount, 0)
        XCTAssertEqual(b.receivedEnd, 65)
        write(&b, 65, [4, 5])
        XCTAssertEqual(readable(b), [4, 5])
    }

    func testConsumeAndCompaction() {
        var b = ReassemblyBuffer()
        let chunk = [UInt8](repeating: 1, count: 1000)
        var offset: UInt64 = 0
        for _ in 0..<50 {
            write(&b, offset, chunk)
            offset += 1000
            b.consume(600)
        }
        XCTAssertEqual(b.readOffset, 30_000)
        XCTAssertEqual(b.contiguousCount, 20_000)
        XCTAssertLessThanOrEqual(b.bufferedByteCount, 20_000 + ReassemblyBuffer.compactionThreshold)
        b.consume(20_000)
        XCTAssertEqual(b.bufferedByteCount, 0)
        // Data below the read offset is ignored.
        write(&b, 0, chunk)
        XCTAssertEqual(b.contiguousCount, 0)
    }
}

final class SendBufferTests: XCTestCase {
    func testChunksAcksAndLoss() {
        var b = SendBuffer()
        let data = (0..<100).map { UInt8($0) }
        data.withUnsafeBytes { b.append($0) }
        var c = b.nextChunk(maxLength: 40, newLimit: .max)!
        XCTAssertEqual(c.offset, 0); XCTAssertEqual(c.length, 40); XCTAssertTrue(c.isNew)
        b.markSent(offset: 0, length: 40)
        c = b.nextChunk(maxLength: 100, newLimit: 70)!
        XCTAssertEqual(c.offset, 40); XCTAssertEqual(c.length, 30)
        b.markSent(offset: 40, length: 30)
        XCTAssertNil(b.nextChunk(maxLength: 100, newLimit: 70), "flow-control limit")
        // 0..<40 lost, 20..<30 meanwhile acknowledged by another copy: only the rest again.
        b.markAcked(offset: 20, length: 10)
        b.markLost(offset: 0, length: 40)
        c = b.nextChunk(maxLength: 100, newLimit: 70)!
        XCTAssertEqual(c.offset, 0); XCTAssertEqual(c.length, 20); XCTAssertFalse(c.isNew)
        b.withBytes(offset: c.offset, length: c.length) { XCTAssertEqual(Array($0), Array(data[0..<20])) }
        b.markSent(offset: 0, length: 20)
        c = b.nextChunk(maxLength: 100, newLimit: 70)!
        XCTAssertEqual(c.offset, 30); XCTAssertEqual(c.length, 10)
        b.markSent(offset: 30, length: 10)
        b.markAcked(offset: 0, length: 70)
        XCTAssertEqual(b.base, 70)
        XCTAssertEqual(b.bufferedCount, 30)
        b.withBytes(offset: 70, length: 30) { XCTAssertEqual(Array($0), Array(data[70...])) }
    }

    /// Two copies of the same bytes in flight (a handshake PTO resends every
    /// unacknowledged CRYPTO byte, RFC 9002 §6.2.4, while the first packet
    /// is still outstanding): the probe's copy is acknowledged first and the
    /// front dropped, then the first packet is acknowledged or declared lost.
    /// Both are no-ops (this trapped on an inverted range under 30 % loss,
    /// tests/e2e/test_http3_lossy.py).
    func testAckAndLossOfACopyAlreadyAcknowledged() {
        var b = SendBuffer()
        let data = (0..<300).map { UInt8(truncatingIfNeeded: $0) }
        data.withUnsafeBytes { b.append($0) }
        b.markSent(offset: 0, length: 100)   // the first packet
        b.markSent(offset: 0, length: 200)   // the probe: everything unacknowledged, and more
        b.markAcked(offset: 0, length: 200)
        XCTAssertEqual(b.base, 200)
        b.markAcked(offset: 0, length: 100)  // the first packet's late ACK
        b.markLost(offset: 0, length: 100)   // or its loss
        b.markAcked(offset: 0, length: 0)
        b.markLost(offset: 200, length: 0)
        XCTAssertEqual(b.base, 200)
        XCTAssertFalse(b.hasLostData)
        XCTAssertEqual(b.bufferedCount, 100)
        // Straddling `base`: only the part above it counts.
        b.markSent(offset: 200, length: 100)
        b.markLost(offset: 150, length: 100)
        XCTAssertEqual(b.nextChunk(maxLength: 1000, newLimit: .max)?.offset, 200)
        XCTAssertEqual(b.nextChunk(maxLength: 1000, newLimit: .max)?.length, 50)
        b.markAcked(offset: 150, length: 150)
        XCTAssertTrue(b.allAcknowledged)
        XCTAssertFalse(b.hasLostData)
    }

    /// Acknowledgments in order move the front; those beyond a gap wait
    /// until the gap is acknowledged, and then go with it.
    func testAcknowledgmentsInAndOutOfOrder() {
        var b = SendBuffer()
        let data = (0..<100).map { UInt8($0) }
        data.withUnsafeBytes { b.append($0) }
        b.markSent(offset: 0, length: 100)
        b.markAcked(offset: 50, length: 10)
        b.markAcked(offset: 70, length: 10)
        XCTAssertEqual(b.base, 0)
        b.markAcked(offset: 0, length: 55)  // overlaps the first waiting range
        XCTAssertEqual(b.base, 60)
        b.markAcked(offset: 60, length: 10)  // meets the second
        XCTAssertEqual(b.base, 80)
        b.markAcked(offset: 90, length: 10)
        XCTAssertEqual(b.base, 80)
        b.markLost(offset: 80, length: 20)  // only 80..<90 is sent again
        XCTAssertEqual(b.nextChunk(maxLength: 100, newLimit: .max)?.offset, 80)
        XCTAssertEqual(b.nextChunk(maxLength: 100, newLimit: .max)?.length, 10)
        b.markAcked(offset: 80, length: 10)
        XCTAssertTrue(b.allAcknowledged)
        XCTAssertFalse(b.hasLostData)
        // Empty, its small storage freed: the next bytes are stored afresh.
        [UInt8]([1, 2, 3]).withUnsafeBytes { b.append($0) }
        b.withBytes(offset: 100, length: 3) { XCTAssertEqual(Array($0), [1, 2, 3]) }
        XCTAssertEqual(b.nextChunk(maxLength: 100, newLimit: .max)?.offset, 100)
    }

    func testAbandonForgetsEverything() {
        var b = SendBuffer()
        [UInt8](repeating: 1, count: 50).withUnsafeBytes { b.append($0) }
        b.markSent(offset: 0, length: 20)
        b.markLost(offset: 0, length: 20)
        b.abandon()
        XCTAssertNil(b.nextChunk(maxLength: 100, newLimit: .max))
        XCTAssertTrue(b.allAcknowledged)
    }
}

final class StreamReceiveSideTests: XCTestCase {
    func testWindowUpdateOnlyAfterHalfAWindowIsRead() {
        let r = StreamReceiveSide(window: 1000)
        _ = try? [UInt8](repeating: 1, count: 1000).withUnsafeBytes { try r.receive(offset: 0, $0, fin: false) }
        XCTAssertNil(r.limitUpdate)
        XCTAssertEqual(r.consume(499), 499)
        XCTAssertNil(r.limitUpdate)
        XCTAssertEqual(r.consume(1), 1)
        XCTAssertEqual(r.limitUpdate, 1500)
        r.advertise(1500)
        XCTAssertNil(r.limitUpdate)
    }

    func testFlowControlLimitIsExact() {
        let r = StreamReceiveSide(window: 100)
        XCTAssertNoThrow(try [UInt8](repeating: 1, count: 100).withUnsafeBytes { try r.receive(offset: 0, $0, fin: false) })
        XCTAssertThrowsQUIC(.streamFlowControl) {
            _ = try [UInt8](repeating: 1, count: 1).withUnsafeBytes { try r.receive(offset: 100, $0, fin: false) }
        }
    }
}

final class ReceivedPacketsTests: XCTestCase {
    func testDelayedAndImmediateAcks() {
        var r = ReceivedPackets()
        let t0 = Instant(nanoseconds: 1000)
        r.record(0, ackEliciting: true, now: t0, immediate: false, maxAckDelay: 25)
        XCTAssertFalse(r.ackDue(now: t0))
        XCTAssertEqual(r.ackDeadline, Instant(nanoseconds: 1025))
        XCTAssertTrue(r.ackDue(now: Instant(nanoseconds: 1025)))
        r.record(1, ackEliciting: true, now: t0, immediate: false, maxAckDelay: 25)
        XCTAssertTrue(r.ackDue(now: t0))
        r.ackSent()
        r.record(5, ackEliciting: false, now: t0, immediate: false, maxAckDelay: 25)
        XCTAssertFalse(r.ackDue(now: t0), "non-eliciting packets never force an ACK")
        XCTAssertTrue(r.isDuplicate(1))
        XCTAssertFalse(r.isDuplicate(3))
        XCTAssertEqual(Array(r.ackRanges), [5..<6, 0..<2])
        r.ackOfAckReceived(1)
        XCTAssertTrue(r.isDuplicate(0))
        XCTAssertEqual(Array(r.ackRanges), [5..<6])
    }
}

import Core
