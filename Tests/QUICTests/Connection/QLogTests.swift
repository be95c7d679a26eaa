// qlog traces (QLogTrace, `--quic-log`): the exact records, and the events
// of a transfer with a loss (JSON-SEQ, qlog 0.3 event names).

import XCTest
import Core
@testable import QUIC

final class QLogTests: XCTestCase {
    final class Capture: QLogOutput {
        var records: [String] = []
        var closed = 0
        func write(_ record: UnsafeRawBufferPointer) { records.append(String(decoding: record, as: UTF8.self)) }
        func close() { closed += 1 }

        func named(_ name: String) -> [String] { records.filter { $0.contains(#""name":"\#(name)""#) } }
    }

    /// RFC 7464 records: RS, one JSON object, LF; times in ms relative to
    /// the reference (the trace's start, on the monotonic clock).
    func testExactRecords() {
        let out = Capture()
        let start = Instant(nanoseconds: 5_000_123_456)
        let trace = QLogTrace(output: out, originalDestinationID: cid("8394c8f03e515708"), now: start)
        trace.packetSent(.application, packetNumber: 7, length: 1200, now: Instant(nanoseconds: start.nanoseconds + 1_500_000))
        trace.packetReceived(.initial, packetNumber: 0, length: 1252, now: Instant(nanoseconds: start.nanoseconds + 12_345_678))
        trace.packetLost(.handshake, packetNumber: 3, now: start)
        XCTAssertEqual(out.records, [
            "\u{1e}" + #"{"qlog_version":"0.3","qlog_format":"JSON-SEQ","title":"peregrine","trace":{"vantage_point":{"type":"server","name":"peregrine"},"common_fields":{"ODCID":"8394c8f03e515708","reference_time":5000.123,"time_format":"relative"}}}"# + "\n",
            "\u{1e}" + #"{"time":1.500,"name":"transport:packet_sent","data":{"header":{"packet_type":"1RTT","packet_number":7},"raw":{"length":1200}}}"# + "\n",
            "\u{1e}" + #"{"time":12.345,"name":"transport:packet_received","data":{"header":{"packet_type":"initial","packet_number":0},"raw":{"length":1252}}}"# + "\n",
            "\u{1e}" + #"{"time":0.000,"name":"recovery:packet_lost","data":{"header":{"packet_type":"handshake","packet_number":3}}}"# + "\n",
        ])
        let recovery = LossRecovery(controller: CongestionControl(.newReno, maxDatagramSize: 1200), maxAckDelay: 25_000_000, now: start)
        trace.recoveryUpdated(recovery, now: start)
        XCTAssertEqual(out.records[4], "\u{1e}" + #"{"time":0.000,"name":"recovery:metrics_updated","data":{"min_rtt":0.000,"smoothed_rtt":333.000,"latest_rtt":0.000,"rtt_variance":166.500,"congestion_window":12000,"bytes_in_flight":0}}"# + "\n")
        XCTAssertEqual(out.records[5], "\u{1e}" + #"{"time":0.000,"name":"recovery:congestion_state_updated","data":{"new":"slow_start"}}"# + "\n")
        trace.recoveryUpdated(recovery, now: start)
        XCTAssertEqual(out.records.count, 7, "no state record when the state is unchanged")
    }

    /// A connection with a trace: every packet it sends and receives, the
    /// metrics after each ACK, the loss of a dropped packet and the
    /// congestion state moving to recovery; the trace closes with the
    /// connection. Without a factory there is no trace.
    func testTransferEvents() {
        let out = Capture()
        let h = ConnectionHarness()
        var made: [ConnectionID] = []
        h.endpoint.makeQLogTrace = { odcid, now in
            made.append(odcid)
            return QLogTrace(output: out, originalDestinationID: odcid, now: now)
        }
        let answer = h.completeHandshake()
        XCTAssertEqual(made, [h.client.originalDestinationID])
        h.ack1RTT(answer)
        let c = h.connection!
        h.send1RTT(Frames.stream(0, [1], fin: true))
        _ = c.withReadableBytes(stream: 0) { b, _ in (b.count, ()) }
        let body = [UInt8](repeating: 9, count: 8000)
        XCTAssertEqual(body.withUnsafeBytes { c.write(stream: 0, $0, fin: true) }, 8000)
        var packets = h.exchange().filter { $0.space == .application }
        XCTAssertGreaterThanOrEqual(packets.count, 5)
        let dropped = packets.removeFirst()
        h.ack1RTT(packets)  // three later packets acknowledged: the first is lost (RFC 9002 §6.1.1)
        _ = h.exchange()

        XCTAssertTrue(out.records.allSatisfy { $0.hasPrefix("\u{1e}{") && $0.hasSuffix("}\n") })
        XCTAssertTrue(out.records[0].contains(#""ODCID":"8394c8f03e515708""#))
        let sent1RTT = out.named("transport:packet_sent").filter { $0.contains(#""packet_type":"1RTT""#) }
        for p in packets + [dropped] {
            XCTAssertTrue(sent1RTT.contains { $0.contains(#""packet_number":\#(p.packetNumber)}"#) }, "\(p.packetNumber)")
        }
        XCTAssertFalse(out.named("transport:packet_sent").filter { $0.contains(#""packet_type":"initial""#) }.isEmpty)
        XCTAssertEqual(out.named("transport:packet_received").filter { $0.contains(#""packet_type":"initial""#) }.count, 2)
        XCTAssertEqual(out.named("recovery:packet_lost").count, 1)
        XCTAssertTrue(out.named("recovery:packet_lost")[0].contains(#""packet_number":\#(dropped.packetNumber)}"#))
        XCTAssertGreaterThanOrEqual(out.named("recovery:metrics_updated").count, 3)
        let states = out.named("recovery:congestion_state_updated")
        XCTAssertTrue(states.first!.contains(#""new":"slow_start""#), states.first!)
        XCTAssertTrue(states.last!.contains(#""old":"slow_start","new":"recovery""#), states.last!)
        // Times never go backwards.
        let times = out.records.dropFirst().map { r -> Double in
            let t = r.split(separator: ",")[0].split(separator: ":")[1]
            return Double(t)!
        }
        XCTAssertEqual(times, times.sorted())
        XCTAssertEqual(out.closed, 0)
        c.close(errorCode: 0, reason: [], application: true)
        _ = h.drain()
        h.advance(nanoseconds: 10_000_000_000)
        XCTAssertEqual(out.closed, 1)

        // No factory: no trace.
        let quiet = ConnectionHarness()
        quiet.completeHandshake()
        XCTAssertNil(quiet.connection!.qlog)
    }
}
