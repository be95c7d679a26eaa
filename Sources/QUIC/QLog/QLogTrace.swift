// qlog output of one connection (debugging, `--quic-log DIR`).
//
// Format: JSON text sequences (RFC 7464: each record is 0x1E, a JSON
// object, 0x0A) as qlog's "JSON-SEQ" serialization defines it, in the shape
// of qlog version 0.3 (draft-ietf-quic-qlog-main-schema-05 with
// draft-ietf-quic-qlog-quic-events-04), the version qvis and quic-go's
// files use. The first record is the header (`qlog_version`,
// `qlog_format`, the trace with its vantage point and common fields: the
// original Destination Connection ID, a reference time in milliseconds of
// the monotonic clock, relative times); every later record is one event:
// `{"time": ms since the reference, "name": "category:event", "data": {...}}`.
//
// Events: transport:packet_sent and transport:packet_received (packet type,
// number, length), recovery:metrics_updated (RTTs in ms, congestion window
// and bytes in flight, after each ACK and loss), recovery:packet_lost, and
// recovery:congestion_state_updated (slow_start, congestion_avoidance,
// recovery — from a congestion event until the window grows again).
//
// The trace formats bytes (no String, no Foundation) and hands each record
// to its `QLogOutput`, which owns the I/O; a connection without a trace
// pays one nil check per hook.

import Core

/// Where a trace's records go (the worker writes them to a file).
public protocol QLogOutput: AnyObject {
    /// One whole record (RS, JSON, LF).
    func write(_ record: UnsafeRawBufferPointer)
    /// The connection is gone: nothing more comes.
    func close()
}

public final class QLogTrace {
    let output: QLogOutput
    let reference: Instant
    private var buffer: [UInt8] = []
    private(set) var congestionState: CongestionState?
    private var windowAtRecovery = 0
    private var recoveryStart: Instant?

    public enum CongestionState: Sendable {
        case slowStart, congestionAvoidance, recovery

        var name: StaticString {
            switch self {
            case .slowStart: "slow_start"
            case .congestionAvoidance: "congestion_avoidance"
            case .recovery: "recovery"
            }
        }
    }

    /// Starts a trace (writes its header record) for the connection first
    /// addressed to `originalDestinationID`, at `now`.
    public init(output: QLogOutput, originalDestinationID: ConnectionID, now: Instant) {
        self.output = output
        reference = now
        buffer.reserveCapacity(256)
        begin()
        ascii(#"{"qlog_version":"0.3","qlog_format":"JSON-SEQ","title":"peregrine","trace":{"vantage_point":{"type":"server","name":"peregrine"},"common_fields":{"ODCID":""#)
        for b in originalDestinationID.bytes { hexByte(b) }
        ascii(#"","reference_time":"#)
        milliseconds(now.nanoseconds)
        ascii(#","time_format":"relative"}}}"#)
        end()
    }

    public func close() { output.close() }

    // MARK: events

    public func packetSent(_ space: PacketNumberSpace, packetNumber: UInt64, length: Int, now: Instant) {
        packet("transport:packet_sent", space, packetNumber: packetNumber, length: length, now: now)
    }

    public func packetReceived(_ space: PacketNumberSpace, packetNumber: UInt64, length: Int, now: Instant) {
        packet("transport:packet_received", space, packetNumber: packetNumber, length: length, now: now)
    }

    public func packetLost(_ space: PacketNumberSpace, packetNumber: UInt64, now: Instant) {
        event("recovery:packet_lost", now: now)
        header(space, packetNumber: packetNumber)
        ascii("}}")
        end()
    }

    /// recovery:metrics_updated, then recovery:congestion_state_updated if
    /// the state changed.
    public func recoveryUpdated(_ recovery: LossRecovery<CongestionControl>, now: Instant) {
        let rtt = recovery.rtt
        event("recovery:metrics_updated", now: now)
        ascii(#""min_rtt":"#)
        milliseconds(rtt.minRTT)
        ascii(#","smoothed_rtt":"#)
        milliseconds(rtt.smoothedRTT)
        ascii(#","latest_rtt":"#)
        milliseconds(rtt.latestRTT)
        ascii(#","rtt_variance":"#)
        milliseconds(rtt.rttVariance)
        ascii(#","congestion_window":"#)
        decimal(UInt64(recovery.controller.congestionWindow))
        ascii(#","bytes_in_flight":"#)
        decimal(UInt64(recovery.bytesInFlight))
        ascii("}}")
        end()
        let state = nextState(recovery.controller)
        guard state != congestionState else { return }
        event("recovery:congestion_state_updated", now: now)
        if let old = congestionState {
            ascii(#""old":""#)
            ascii(old.name)
            ascii(#"","#)
        }
        ascii(#""new":""#)
        ascii(state.name)
        ascii(#""}}"#)
        end()
        congestionState = state
    }

    /// RFC 9002 §7.3: recovery from a congestion event (a new recovery start
    /// time) until the window grows again; otherwise slow start below the
    /// threshold, congestion avoidance above it.
    private func nextState(_ controller: CongestionControl) -> CongestionState {
        let window = controller.congestionWindow
        if let start = controller.recoveryStartTime, start != recoveryStart {
            recoveryStart = start
            windowAtRecovery = window
            return .recovery
        }
        if congestionState == .recovery && window <= windowAtRecovery { return .recovery }
        return controller.isInSlowStart ? .slowStart : .congestionAvoidance
    }

    // MARK: formatting

    private func packet(_ name: StaticString, _ space: PacketNumberSpace, packetNumber: UInt64, length: Int, now: Instant) {
        event(name, now: now)
        header(space, packetNumber: packetNumber)
        ascii(#","raw":{"length":"#)
        decimal(UInt64(length))
        ascii("}}}")
        end()
    }

    /// `{"time":…,"name":"…","data":{` — the caller writes the data.
    private func event(_ name: StaticString, now: Instant) {
        begin()
        ascii(#"{"time":"#)
        milliseconds(max(0, now.nanoseconds - reference.nanoseconds))
        ascii(#","name":""#)
        ascii(name)
        ascii(#"","data":{"#)
    }

    private func header(_ space: PacketNumberSpace, packetNumber: UInt64) {
        ascii(#""header":{"packet_type":""#)
        switch space {
        case .initial: ascii("initial")
        case .handshake: ascii("handshake")
        case .application: ascii("1RTT")
        }
        ascii(#"","packet_number":"#)
        decimal(packetNumber)
        ascii("}")
    }

    private func begin() {
        buffer.removeAll(keepingCapacity: true)
        buffer.append(0x1e)
    }

    private func end() {
        buffer.append(0x0a)
        buffer.withUnsafeBytes { output.write($0) }
    }

    private func ascii(_ s: StaticString) {
        s.withUTF8Buffer { buffer.append(contentsOf: $0) }
    }

    private func decimal(_ v: UInt64) {
        if v >= 10 { decimal(v / 10) }
        buffer.append(UInt8(ascii: "0") + UInt8(v % 10))
    }

    /// Nanoseconds as milliseconds with three decimals ("12.345").
    private func milliseconds(_ ns: Int64) {
        let micros = UInt64(max(0, ns) / 1000)
        decimal(micros / 1000)
        buffer.append(UInt8(ascii: "."))
        let frac = micros % 1000
        buffer.append(UInt8(ascii: "0") + UInt8(frac / 100))
        buffer.append(UInt8(ascii: "0") + UInt8(frac / 10 % 10))
        buffer.append(UInt8(ascii: "0") + UInt8(frac % 10))
    }

    private func hexByte(_ b: UInt8) {
        let digits: StaticString = "0123456789abcdef"
        digits.withUTF8Buffer { d in
            buffer.append(d[Int(b >> 4)])
            buffer.append(d[Int(b & 0x0f)])
        }
    }
}
