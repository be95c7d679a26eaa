import XCTest
@testable import Core

final class ByteBufferTests: XCTestCase {
    func withBlock(_ size: Int, _ body: (inout ByteBuffer) -> Void) {
        var b = ByteBuffer()
        let block = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        b.attach(block, capacity: size)
        body(&b)
        b.detach()?.deallocate()
    }

    func append(_ b: inout ByteBuffer, _ s: String) {
        Array(s.utf8).withUnsafeBytes { b.append($0) }
    }

    func testAppendThenConsumeTracksReadableBytes() {
        withBlock(16) { b in
            append(&b, "hello")
            XCTAssertEqual(b.readableCount, 5)
            b.readerIndex += 2
            XCTAssertEqual(Array(b.readable), Array("llo".utf8))
            XCTAssertEqual(b.writableCount, 11)
        }
    }

    func testCompactMovesUnreadBytesToTheFront() {
        withBlock(8) { b in
            append(&b, "abcdefgh")
            b.readerIndex = 6
            XCTAssertEqual(b.writableCount, 0)
            b.compact()
            XCTAssertEqual(b.readerIndex, 0)
            XCTAssertEqual(Array(b.readable), Array("gh".utf8))
            XCTAssertEqual(b.writableCount, 6)
        }
    }

    func testMoveToLargerStorageKeepsContentsAndReturnsOldBlock() {
        withBlock(4) { b in
            append(&b, "wxyz")
            b.readerIndex = 1
            let bigger = UnsafeMutableRawPointer.allocate(byteCount: 32, alignment: 16)
            let old = b.move(toNewStorage: bigger, capacity: 32)
            XCTAssertNotNil(old)
            old?.deallocate()
            XCTAssertEqual(Array(b.readable), Array("xyz".utf8))
            XCTAssertEqual(b.capacity, 32)
        }
    }

    func testDetachLeavesAnEmptyBufferWithoutStorage() {
        var b = ByteBuffer()
        XCTAssertFalse(b.hasStorage)
        XCTAssertEqual(b.readable.count, 0)
        let block = UnsafeMutableRawPointer.allocate(byteCount: 8, alignment: 16)
        b.attach(block, capacity: 8)
        XCTAssertTrue(b.hasStorage)
        b.detach()?.deallocate()
        XCTAssertFalse(b.hasStorage)
        XCTAssertEqual(b.capacity, 0)
    }

    func testSpanStaysEightBytes() {
        XCTAssertEqual(MemoryLayout<ByteSpan>.size, 8)
    }
}

final class ByteBufferGrowthTests: XCTestCase {
    func testAppendGrowingCompactsThenDoubles() {
        var b = ByteBuffer()
        let chunk = [UInt8](repeating: 7, count: 100)
        chunk.withUnsafeBytes { b.appendGrowing($0, minimumCapacity: 256) }
        XCTAssertEqual(b.capacity, 256)
        b.readerIndex = 90  // 10 left: room after compacting, no new storage
        let more = [UInt8](repeating: 8, count: 200)
        more.withUnsafeBytes { b.appendGrowing($0, minimumCapacity: 256) }
        XCTAssertEqual(b.capacity, 256)
        XCTAssertEqual(b.readableCount, 210)
        let big = [UInt8](repeating: 9, count: 600)
        big.withUnsafeBytes { b.appendGrowing($0, minimumCapacity: 256) }
        XCTAssertEqual(b.capacity, 1024)  // 256 doubled until 810 bytes fit
        XCTAssertEqual(Array(b.readable.prefix(10)), [UInt8](repeating: 7, count: 10))
        XCTAssertEqual(Array(b.readable.suffix(600)), big)
        b.detach()?.deallocate()
    }
}

final class BufferPoolTests: XCTestCase {
    /// What the SIGUSR2 stats line reports: blocks lent, blocks kept free
    /// (a block given beyond `maxFree` is unmapped and counts in neither).
    func testUsageCountsBlocksInUseAndFree() {
        var pool = BufferPool(blockSize: 4096, maxFree: 1)
        XCTAssertEqual(pool.usage, BufferPool.Usage(blockSize: 4096, inUse: 0, free: 0))
        let a = pool.take(), b = pool.take()
        XCTAssertEqual(pool.usage, BufferPool.Usage(blockSize: 4096, inUse: 2, free: 0))
        XCTAssertEqual(pool.usage.bytes, 8192)
        pool.give(a)
        pool.give(b)
        XCTAssertEqual(pool.usage, BufferPool.Usage(blockSize: 4096, inUse: 0, free: 1))
        let c = pool.take()
        XCTAssertEqual(pool.usage, BufferPool.Usage(blockSize: 4096, inUse: 1, free: 0))
        pool.give(c)
    }

    func testGivenBlocksAreReused() {
        var pool = BufferPool(blockSize: 64, maxFree: 2)
        let a = pool.take()
        pool.give(a)
        XCTAssertEqual(pool.take(), a)
        pool.give(a)
    }

    func testBlocksBeyondTheFreeLimitGoBackToTheAllocator() {
        var pool = BufferPool(blockSize: 64, maxFree: 1)
        let a = pool.take(), b = pool.take()
        pool.give(a)
        pool.give(b)  // freed, not kept
        XCTAssertEqual(pool.take(), a)
        pool.give(a)
    }

    func testTrimEmptiesBlocksBeyondTheHotSet() {
        // Trimmed beyond the hot set, a free block's pages go back to the
        // system: its memory reads as zeros when it is taken again.
        var pool = BufferPool(blockSize: 4096, maxFree: 4, hot: 1)
        let a = pool.take(), b = pool.take()
        a.storeBytes(of: 0xAB, as: UInt8.self)
        b.storeBytes(of: 0xCD, as: UInt8.self)
        pool.give(a)  // the older free block: beyond the hot set
        pool.give(b)  // the most recent: hot, kept as it is
        pool.trim()
        let first = pool.take()
        XCTAssertEqual(first, b)
        XCTAssertEqual(first.load(as: UInt8.self), 0xCD)
        let second = pool.take()
        XCTAssertEqual(second, a)
        XCTAssertEqual(second.load(as: UInt8.self), 0)
        pool.give(first)
        pool.give(second)
    }
}

final class DateCacheTests: XCTestCase {
    func testDateIsAnIMFFixdate() {
        let cache = DateCache()
        let text = String(decoding: cache.bytes, as: UTF8.self)
        XCTAssertEqual(text.count, 29)
        XCTAssertTrue(text.hasSuffix(" GMT"), text)
        XCTAssertEqual(Array(text)[3], ",")
        XCTAssertTrue(["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].contains(String(text.prefix(3))))
    }
}
