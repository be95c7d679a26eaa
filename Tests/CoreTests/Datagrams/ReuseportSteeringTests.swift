import XCTest

import Core

/// The steering program run by an interpreter with the kernel's semantics
/// (ClassicBPF); UDPSteeringKernelTests runs it in the kernel.
final class ReuseportSteeringTests: XCTestCase {
    private func program(_ size: Int, _ sockets: [Int]) -> ClassicBPF {
        ClassicBPF(program: ReuseportSteering.program(groupSize: size, newConnectionSockets: sockets)!)
    }

    private func ourID(_ index: Int, random: UInt64 = 0x0123_4567_89AB_CDEF) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 8)
        out.withUnsafeMutableBytes { QUICConnectionIDLayout.write(socketIndex: index, random: random, into: $0) }
        return out
    }

    /// RFC 9000 §17.3.1: 0 1 spin reserved key-phase pn-length, then the DCID.
    private func shortHeader(dcid: [UInt8], payload: Int = 24) -> [UInt8] {
        [0x41] + dcid + [UInt8](repeating: 0x5A, count: payload)
    }

    /// RFC 9000 §17.2: 1 1 type ..., version, DCID length and DCID, SCID length and SCID.
    private func longHeader(type: UInt8 = 0, dcid: [UInt8], payload: Int = 1200) -> [UInt8] {
        [0xC0 | type << 4, 0, 0, 0, 1, UInt8(dcid.count)] + dcid + [8] + [UInt8](repeating: 7, count: 8)
            + [UInt8](repeating: 0, count: payload)
    }

    private func check(_ bpf: ClassicBPF, _ packet: [UInt8], rxhash: UInt32 = 0, file: StaticString = #filePath,
                       line: UInt = #line) -> UInt32 {
        let run = bpf.run(packet, rxhash: rxhash)
        XCTAssertFalse(run.outOfBounds, "the program read outside the datagram", file: file, line: line)
        return run.result
    }

    func testAShortHeaderGoesToTheSocketItsConnectionIDNames() {
        let bpf = program(8, [1, 3, 5, 7])
        for k in 0..<8 {
            XCTAssertEqual(check(bpf, shortHeader(dcid: ourID(k))), UInt32(k))
        }
    }

    func testALongHeaderWithOurConnectionIDGoesToItsSocket() {
        let bpf = program(8, [0])
        for type: UInt8 in [0, 1, 2] {  // Initial (after our first reply), 0-RTT, Handshake
            for k in [2, 6] { XCTAssertEqual(check(bpf, longHeader(type: type, dcid: ourID(k))), UInt32(k)) }
        }
    }

    func testANewConnectionIsHashedOnItsClientChosenDCIDAmongTheNewConnectionSockets() {
        let sockets = [1, 2, 5]
        let bpf = program(6, sockets)
        var seen: Set<UInt32> = []
        for n in 0..<300 {
            // 8 random-looking bytes with a config rotation that is not ours,
            // and longer DCIDs, which are never ours.
            let dcid: [UInt8] = n % 2 == 0 ? [0xE0 | UInt8(n % 32), UInt8(truncatingIfNeeded: n), 9, 9, 1, 2, 3, 4]
                : [UInt8](repeating: UInt8(n % 251), count: 8 + n % 13)
            let packet = longHeader(dcid: dcid)
            let chosen = check(bpf, packet)
            XCTAssertTrue(sockets.contains(Int(chosen)), "\(chosen)")
            let word = UInt32(dcid[0]) << 24 | UInt32(dcid[1]) << 16 | UInt32(dcid[2]) << 8 | UInt32(dcid[3])
            XCTAssertEqual(chosen, UInt32(sockets[Int(word % 3)]))
            // Every datagram of the attempt goes the same way, whatever its size.
            XCTAssertEqual(check(bpf, longHeader(dcid: dcid, payload: 40)), chosen)
            seen.insert(chosen)
        }
        XCTAssertEqual(seen, Set(sockets.map(UInt32.init)), "the hash reaches every socket")
    }

    func testAnIndexOutsideTheGroupIsNeverReturned() {
        let bpf = program(4, [3])
        XCTAssertEqual(check(bpf, shortHeader(dcid: ourID(4)), rxhash: 17), 3)
        XCTAssertEqual(check(bpf, shortHeader(dcid: ourID(65_535))), 3)
        XCTAssertEqual(check(bpf, longHeader(dcid: ourID(4))), 3)
    }

    func testAShortHeaderThatIsNotOursFallsToTheFlowHash() {
        let bpf = program(4, [0, 1, 2, 3])
        var notOurs = ourID(1)
        notOurs[0] |= 0x80  // config rotation 4
        XCTAssertEqual(check(bpf, shortHeader(dcid: notOurs), rxhash: 6), 2)
        XCTAssertEqual(check(bpf, shortHeader(dcid: notOurs), rxhash: 7), 3)
    }

    func testTruncatedAndTinyDatagramsNeverReadPastTheirEnd() {
        let bpf = program(4, [2, 3])
        let samples: [[UInt8]] = [shortHeader(dcid: ourID(1)), longHeader(dcid: ourID(1)),
                                  longHeader(dcid: [1, 2, 3, 4, 5, 6, 7, 8, 9])]
        for sample in samples {
            for cut in 0...sample.count {
                let result = check(bpf, Array(sample.prefix(cut)), rxhash: 5)
                XCTAssertTrue(result < 4, "cut at \(cut): \(result)")
            }
        }
        // A long header whose DCID is too short to hash falls to the flow hash.
        XCTAssertEqual(check(bpf, longHeader(dcid: [1, 2, 3]), rxhash: 1), 3)
        XCTAssertEqual(check(bpf, [], rxhash: 0), 2)
    }

    func testEveryCombinationOfGroupAndNewConnectionSocketsKeepsItsPromises() {
        for size in 1...6 {
            for mask in 1..<(1 << size) {
                let sockets = (0..<size).filter { mask & (1 << $0) != 0 }
                let bpf = program(size, sockets)
                for k in 0..<size { XCTAssertEqual(check(bpf, shortHeader(dcid: ourID(k))), UInt32(k)) }
                for h: UInt32 in 0..<8 {
                    XCTAssertEqual(check(bpf, [0x40], rxhash: h), UInt32(sockets[Int(h) % sockets.count]))
                }
            }
        }
    }

    func testSizesThatDoNotFitAreRefused() {
        XCTAssertNil(ReuseportSteering.program(groupSize: 4, newConnectionSockets: []))
        XCTAssertNil(ReuseportSteering.program(groupSize: 4, newConnectionSockets: [4]))
        XCTAssertNil(ReuseportSteering.program(groupSize: 4, newConnectionSockets: [-1]))
        XCTAssertNil(ReuseportSteering.program(groupSize: 0, newConnectionSockets: [0]))
        XCTAssertNil(ReuseportSteering.program(groupSize: 65_537, newConnectionSockets: [0]))
        XCTAssertNotNil(ReuseportSteering.program(groupSize: 65_536, newConnectionSockets: [65_535]))
        // 28 fixed instructions and two per socket but the last.
        let most = (ReuseportSteering.maxInstructions - 28 + 1) / 2
        XCTAssertEqual(ReuseportSteering.program(groupSize: 4096, newConnectionSockets: Array(0..<most))?.count,
                       ReuseportSteering.maxInstructions - 1)
        XCTAssertNil(ReuseportSteering.program(groupSize: 4096, newConnectionSockets: Array(0..<(most + 1))))
    }
}
