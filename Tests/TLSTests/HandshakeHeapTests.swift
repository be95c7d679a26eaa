// CTLS handshake heap (ctls_handshake_heap.h): OpenSSL's allocations made
// inside a QUIC handshake come from a heap of their own whose chunks are
// given back to the kernel once empty; everything else stays malloc's. A
// block of either origin can be freed or reallocated from anywhere.

import CTLS
import Dispatch
import Glibc
import QUIC
import XCTest
@testable import TLS

final class HandshakeHeapTests: XCTestCase {
    private func stats() -> ctls_handshake_heap_stats {
        var s = ctls_handshake_heap_stats()
        ctls_handshake_heap_get_stats(&s)
        return s
    }

    private func inside<T>(_ body: () throws -> T) rethrows -> T {
        ctls_handshake_heap_enter()
        defer { ctls_handshake_heap_leave() }
        return try body()
    }

    private func fill(_ p: UnsafeMutableRawPointer, _ n: Int, _ seed: UInt8) {
        for i in 0..<n { p.storeBytes(of: seed &+ UInt8(truncatingIfNeeded: i), toByteOffset: i, as: UInt8.self) }
    }

    private func holds(_ p: UnsafeMutableRawPointer, _ n: Int, _ seed: UInt8) -> Bool {
        (0..<n).allSatisfy { p.load(fromByteOffset: $0, as: UInt8.self) == seed &+ UInt8(truncatingIfNeeded: $0) }
    }

    /// Whether the page holding `p` is resident (mincore).
    private func resident(_ p: UnsafeMutableRawPointer) -> Bool {
        let page = UInt(bitPattern: p) & ~UInt(4095)
        var vec: UInt8 = 0
        XCTAssertEqual(mincore(UnsafeMutableRawPointer(bitPattern: page), 4096, &vec), 0)
        return vec & 1 == 1
    }

    func testInstalledBeforeOpenSSLsFirstAllocation() {
        XCTAssertEqual(ctls_handshake_heap_installed(), 1)
    }

    /// A real handshake: OpenSSL's blocks are on the heap while it runs and
    /// all gone once both sides are freed (the server's at its release).
    func testAHandshakesMemoryIsAllGivenBack() throws {
        let server = try QUICTLSContext(pairs: [Fixture.pair("a")], ticketSecret: Fixture.secret)
        let client = try QUICTLSClientContext()
        // OpenSSL's lazily made globals (provider caches, this thread's
        // error state) come with the first handshake and stay.
        XCTAssertEqual(try HandshakePipe(server, client).run(), .completed)
        let before = stats()
        var pipe: HandshakePipe? = try HandshakePipe(server, client)
        XCTAssertEqual(pipe?.run(), .completed)
        XCTAssertGreaterThan(stats().live_blocks, before.live_blocks + 50)
        pipe?.server.releaseAfterHandshake()
        pipe = nil
        let after = stats()
        XCTAssertEqual(after.live_blocks, before.live_blocks)
        XCTAssertEqual(after.used_chunks, before.used_chunks)
        XCTAssertEqual(after.fallbacks, 0)
    }

    func testOutsideAHandshakeAllocationsAreMallocs() throws {
        let p = try XCTUnwrap(ctls_handshake_heap_malloc(100))
        XCTAssertEqual(ctls_handshake_heap_owns(p), 0)
        fill(p, 100, 7)
        let q = try XCTUnwrap(ctls_handshake_heap_realloc(p, 5000))
        XCTAssertEqual(ctls_handshake_heap_owns(q), 0)
        XCTAssertTrue(holds(q, 100, 7))
        ctls_handshake_heap_free(q)
    }

    /// A malloc block reallocated inside a handshake stays malloc's.
    func testMallocBlockReallocatedInsideStaysMallocs() throws {
        let p = try XCTUnwrap(ctls_handshake_heap_malloc(64))
        fill(p, 64, 3)
        let q = try XCTUnwrap(inside { ctls_handshake_heap_realloc(p, 640) })
        XCTAssertEqual(ctls_handshake_heap_owns(q), 0)
        XCTAssertTrue(holds(q, 64, 3))
        ctls_handshake_heap_free(q)
    }

    func testZeroBytesIsNullAsOpenSSLsOwn() {
        XCTAssertNil(inside { ctls_handshake_heap_malloc(0) })
        XCTAssertNil(ctls_handshake_heap_malloc(0))
        ctls_handshake_heap_free(nil)
    }

    /// Every size from 1 byte through the class limit (16 KiB) and past it
    /// (a run of chunks): owned, 16-byte aligned, the whole size writable
    /// without touching a neighbour; all freed, the heap is back where it was.
    func testEverySizeClassAndLargeBlocks() throws {
        let before = stats()
        var blocks: [(UnsafeMutableRawPointer, Int)] = []
        let sizes = Array(1...300) + Array(stride(from: 301, through: 16384, by: 37)) + [16384, 16385, 65536, 65537, 300_000]
        for (i, n) in sizes.enumerated() {
            let p = try XCTUnwrap(inside { ctls_handshake_heap_malloc(n) })
            XCTAssertEqual(ctls_handshake_heap_owns(p), 1, "size \(n)")
            XCTAssertEqual(UInt(bitPattern: p) % 16, 0, "size \(n)")
            fill(p, n, UInt8(truncatingIfNeeded: i))
            blocks.append((p, n))
        }
        XCTAssertEqual(stats().live_blocks, before.live_blocks + sizes.count)
        for (i, (p, n)) in blocks.enumerated() {
            XCTAssertTrue(holds(p, n, UInt8(truncatingIfNeeded: i)), "size \(n)")
        }
        for (p, _) in blocks { ctls_handshake_heap_free(p) }
        let after = stats()
        XCTAssertEqual(after.live_blocks, before.live_blocks)
        XCTAssertEqual(after.used_chunks, before.used_chunks)
        XCTAssertLessThanOrEqual(after.spare_chunks, 1)
        XCTAssertEqual(after.fallbacks, before.fallbacks)
    }

    /// realloc keeps the content: within a class, across classes, small to
    /// large and back; outside a handshake a block that must move leaves
    /// for malloc.
    func testReallocAcrossClassesAndToAndFromLarge() throws {
        let before = stats()
        var p = try XCTUnwrap(inside { ctls_handshake_heap_malloc(20) })
        fill(p, 20, 9)
        let same = try XCTUnwrap(inside { ctls_handshake_heap_realloc(p, 32) })
        XCTAssertEqual(same, p, "20 and 32 bytes share a class")
        var size = 20
        for n in [100, 1000, 5000, 16384, 20000, 200_000, 70000, 3000, 48] {
            p = try XCTUnwrap(inside { ctls_handshake_heap_realloc(p, n) })
            XCTAssertEqual(ctls_handshake_heap_owns(p), 1, "to \(n)")
            XCTAssertTrue(holds(p, min(size, n), 9), "to \(n)")
            fill(p, n, 9)
            size = n
        }
        // Out of a handshake: growing past its class moves it to malloc.
        p = try XCTUnwrap(ctls_handshake_heap_realloc(p, 4000))
        XCTAssertEqual(ctls_handshake_heap_owns(p), 0)
        XCTAssertTrue(holds(p, 48, 9))
        ctls_handshake_heap_free(p)
        XCTAssertEqual(stats().live_blocks, before.live_blocks)
        // A size of 0 frees, as OpenSSL's own realloc does.
        let last = try XCTUnwrap(inside { ctls_handshake_heap_malloc(8) })
        XCTAssertNil(ctls_handshake_heap_realloc(last, 0))
        XCTAssertEqual(stats().live_blocks, before.live_blocks)
    }

    /// A chunk emptied gives its pages back (but for one spare); a large
    /// block's run at once.
    func testEmptiedChunksGoBackToTheKernel() throws {
        let before = stats()
        let large = try XCTUnwrap(inside { ctls_handshake_heap_malloc(256 * 1024) })
        memset(large, 1, 256 * 1024)
        XCTAssertTrue(resident(large + 200 * 1024))
        ctls_handshake_heap_free(large)
        XCTAssertFalse(resident(large + 200 * 1024))
        // 4 KiB blocks: 16 a chunk; 80 of them fill at least four chunks of
        // their own (a chunk of the class left by other tests may take 15).
        let small = try (0..<80).map { _ in try XCTUnwrap(inside { ctls_handshake_heap_malloc(4096) }) }
        for p in small { memset(p, 2, 4096) }
        XCTAssertGreaterThanOrEqual(stats().used_chunks, before.used_chunks + 4)
        for p in small { ctls_handshake_heap_free(p) }
        let after = stats()
        XCTAssertEqual(after.used_chunks, before.used_chunks)
        XCTAssertGreaterThanOrEqual(after.released_chunks, before.released_chunks + 4 + 3)
        XCTAssertLessThanOrEqual(after.spare_chunks, 1)
        // The spare and a chunk other tests left may stay resident.
        XCTAssertLessThanOrEqual(small.filter { resident($0) }.count, 32)
    }

    /// Threads allocate inside handshakes at once, then each frees (and
    /// reallocates) blocks another thread made: counts come back even.
    func testManyThreadsAndFreesFromAnotherThread() {
        let before = stats()
        let threads = 8, perThread = 1500
        let table = UnsafeMutablePointer<UInt>.allocate(capacity: threads * perThread)
        defer { table.deallocate() }
        let address = UInt(bitPattern: table)
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            let table = UnsafeMutablePointer<UInt>(bitPattern: address)!
            ctls_handshake_heap_enter()
            for i in 0..<perThread {
                let n = 1 + (i * 7919 + t * 104_729) % (i % 50 == 0 ? 40000 : 3000)
                let p = ctls_handshake_heap_malloc(n)!
                p.storeBytes(of: UInt32(t * perThread + i), as: UInt32.self)
                table[t * perThread + i] = UInt(bitPattern: p)
            }
            ctls_handshake_heap_leave()
        }
        XCTAssertEqual(stats().live_blocks, before.live_blocks + threads * perThread)
        let mismatches = UnsafeMutablePointer<Int>.allocate(capacity: threads)
        defer { mismatches.deallocate() }
        let misses = UInt(bitPattern: mismatches)
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            let table = UnsafeMutablePointer<UInt>(bitPattern: address)!
            let mismatches = UnsafeMutablePointer<Int>(bitPattern: misses)!
            mismatches[t] = 0
            let other = (t + 1) % threads
            for i in 0..<perThread {
                var p = UnsafeMutableRawPointer(bitPattern: table[other * perThread + i])!
                if p.load(as: UInt32.self) != UInt32(other * perThread + i) { mismatches[t] += 1 }
                if i % 3 == 0 { p = ctls_handshake_heap_realloc(p, 1 + i * 13 % 9000)! }
                ctls_handshake_heap_free(p)
            }
        }
        XCTAssertEqual((0..<threads).map { mismatches[$0] }, Array(repeating: 0, count: threads))
        let after = stats()
        XCTAssertEqual(after.live_blocks, before.live_blocks)
        XCTAssertEqual(after.used_chunks, before.used_chunks)
        XCTAssertLessThanOrEqual(after.spare_chunks, 1)
    }

    // MARK: - Zones (the worker's malloc, Sources/CAllocator)

    /// Blocks of the handshake zone and of the connection zone never share
    /// a chunk, even of one size class: what dies with the handshakes
    /// empties its chunks whatever the connections keep. Each block is
    /// owned, 16-byte aligned, as large as its class says, and given back.
    func testZonesKeepChunksOfTheirOwn() throws {
        let before = stats()
        var handshake: [UnsafeMutableRawPointer] = []
        var connection: [UnsafeMutableRawPointer] = []
        for i in 0..<200 {
            let n = 24 + i % 3 * 500
            handshake.append(try XCTUnwrap(ctls_handshake_heap_take(CTLS_HEAP_HANDSHAKE, n)))
            connection.append(try XCTUnwrap(ctls_handshake_heap_take(CTLS_HEAP_CONNECTION, n)))
            for p in [handshake.last!, connection.last!] {
                XCTAssertEqual(ctls_handshake_heap_owns(p), 1)
                XCTAssertEqual(UInt(bitPattern: p) % 16, 0)
                XCTAssertGreaterThanOrEqual(ctls_handshake_heap_usable_size(p), n)
                fill(p, n, UInt8(truncatingIfNeeded: i))
            }
        }
        let chunk = { (p: UnsafeMutableRawPointer) in UInt(bitPattern: p) >> 16 }
        XCTAssertTrue(Set(handshake.map(chunk)).isDisjoint(with: Set(connection.map(chunk))))
        XCTAssertEqual(stats().live_blocks, before.live_blocks + 400)
        for (i, p) in connection.enumerated() { XCTAssertTrue(holds(p, 24 + i % 3 * 500, UInt8(truncatingIfNeeded: i))) }
        // The handshakes' blocks gone, their chunks go back as they empty.
        for p in handshake { ctls_handshake_heap_give(p) }
        for p in connection { ctls_handshake_heap_give(p) }
        let after = stats()
        XCTAssertEqual(after.live_blocks, before.live_blocks)
        XCTAssertEqual(after.used_chunks, before.used_chunks)
        XCTAssertEqual(after.fallbacks, before.fallbacks)
    }

    /// No zone, an unknown one or no bytes: nothing (the worker's malloc then
    /// asks glibc).
    func testTakeOutsideAZoneGivesNothing() {
        XCTAssertNil(ctls_handshake_heap_take(-1, 64))
        XCTAssertNil(ctls_handshake_heap_take(CTLS_HEAP_ZONES, 64))
        XCTAssertNil(ctls_handshake_heap_take(CTLS_HEAP_CONNECTION, 0))
    }

    /// A size class holds just above the block asked for: the connection's
    /// largest block (QUICConnection, about 1,950 bytes) loses less than
    /// 64 bytes to rounding, a 400-byte packet space state none.
    func testSizeClassesFitAConnectionsBlocksClosely() throws {
        for (n, most) in [(1_950, 1_984), (400, 400), (296, 304), (4_097, 5_120), (16_384, 16_384)] {
            let p = try XCTUnwrap(ctls_handshake_heap_take(CTLS_HEAP_CONNECTION, n))
            XCTAssertEqual(ctls_handshake_heap_usable_size(p), most, "\(n) bytes")
            ctls_handshake_heap_give(p)
        }
    }
}
