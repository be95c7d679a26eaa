// Driving a WebTransportRegistry as the glue would: per-stream held bytes
// re-offered on `.streamReleased`, events turned into comparable values.

import XCTest
import Core
@testable import HTTP3

/// A `WebTransportEvent` as plain values (spans copied out).
enum WEv: Equatable {
    case requested(UInt64, WebTransportDraft)
    case refused(UInt64, H3ErrorCode)
    case data(UInt64, UInt64, String, fin: Bool)
    case released(UInt64)
    case reset(UInt64, UInt64, UInt32?)
    case stopped(UInt64, UInt64, UInt32?)
    case abort(UInt64, H3ErrorCode)
    case datagram(UInt64, String)
    case draining(UInt64)
    case closed(UInt64, UInt32, String)
    case failed(UInt64, H3ErrorCode)
    case connectionError(H3ErrorCode)

    init(_ e: WebTransportEvent) {
        switch e {
        case .sessionRequested(let s, let d): self = .requested(s, d)
        case .sessionRefused(let s, let c): self = .refused(s, c)
        case .streamData(let s, let id, let b, let fin): self = .data(s, id, String(decoding: b, as: UTF8.self), fin: fin)
        case .streamReleased(let id): self = .released(id)
        case .streamReset(let s, let id, let c): self = .reset(s, id, c)
        case .streamStopped(let s, let id, let c): self = .stopped(s, id, c)
        case .abortStream(let id, let c): self = .abort(id, c)
        case .datagram(let s, let p): self = .datagram(s, String(decoding: p, as: UTF8.self))
        case .sessionDraining(let s): self = .draining(s)
        case .sessionClosed(let s, let c, let m): self = .closed(s, c, String(decoding: m, as: UTF8.self))
        case .sessionFailed(let s, let c): self = .failed(s, c)
        case .connectionError(let c, _): self = .connectionError(c)
        }
    }
}

final class WTGlue {
    let wt: WebTransportRegistry
    private var held: [UInt64: [UInt8]] = [:]
    private var fins: Set<UInt64> = []
    private var ended: Set<UInt64> = []
    var events: [WEv] = []

    init(_ limits: WebTransportLimits = WebTransportLimits()) {
        wt = WebTransportRegistry(limits: limits)
    }

    /// Client SETTINGS with the given WebTransport part.
    static func settings(draft02: Bool = false, h3: Bool = false, datagram: Bool = true,
                         maxData: UInt64 = 0, bidi: UInt64 = 0, uni: UInt64 = 0) -> H3Settings {
        var s = H3Settings(enableConnectProtocol: false)
        s.webTransport.h3Datagram = datagram
        s.webTransport.enableWebTransportDraft02 = draft02
        s.webTransport.wtEnabled = h3
        s.webTransport.initialMaxData = maxData
        s.webTransport.initialMaxStreamsBidi = bidi
        s.webTransport.initialMaxStreamsUni = uni
        return s
    }

    func drain() {
        while let e = wt.nextEvent() {
            events.append(WEv(e))
            switch e {
            case .streamReleased(let id): pump(id)
            case .abortStream(let id, _):
                ended.insert(id)
                held[id] = nil
            default: break
            }
        }
    }

    func take() -> [WEv] {
        drain()
        defer { events = [] }
        return events
    }

    /// A session `id` with `draft`, accepted (settings already given).
    func acceptedSession(_ id: UInt64, _ draft: WebTransportDraft) {
        wt.connectReceived(streamID: id, draft: draft)
        XCTAssertEqual(take(), [.requested(id, draft)])
        wt.accept(sessionID: id)
        drain()
    }

    /// A peer stream handed over by H3Session, then its bytes.
    func open(_ id: UInt64, bidirectional: Bool) {
        wt.streamOpened(streamID: id, bidirectional: bidirectional)
    }

    func deliver(_ id: UInt64, _ bytes: [UInt8], fin: Bool = false) {
        guard !ended.contains(id) else { return }
        held[id, default: []] += bytes
        if fin { fins.insert(id) }
        pump(id)
        drain()
    }

    func deliver(_ id: UInt64, _ bytes: [UInt8], fin: Bool = false, pieceSize: Int) {
        var at = 0
        repeat {
            let end = min(bytes.count, at + pieceSize)
            deliver(id, Array(bytes[at..<end]), fin: fin && end == bytes.count)
            at = end
        } while at < bytes.count
    }

    private func pump(_ id: UInt64) {
        guard !ended.contains(id) else { return }
        let buffer = held[id] ?? []
        var offset = 0
        while !ended.contains(id) {
            let fin = fins.contains(id)
            let (ev, n): (WEv?, Int) = buffer.withUnsafeBytes { p in
                let (e, n) = wt.receive(streamID: id, UnsafeRawBufferPointer(rebasing: p[offset...]), fin: fin)
                return (e.map(WEv.init), n)
            }
            XCTAssertLessThanOrEqual(offset + n, buffer.count)
            offset += n
            if let ev {
                events.append(ev)
                if case .data(_, _, _, true) = ev { ended.insert(id) }
                continue
            }
            if n == 0 || offset == buffer.count { break }
        }
        held[id] = ended.contains(id) ? nil : Array(buffer[offset...])
    }

    func connectData(_ session: UInt64, _ bytes: [UInt8], fin: Bool = false) {
        bytes.withUnsafeBytes { wt.connectStreamData(sessionID: session, $0, fin: fin) }
        drain()
    }

    func datagram(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { wt.datagramReceived($0) }
        drain()
    }
}

/// Capsule bytes.
func capsule(_ c: WebTransportCapsule) -> [UInt8] {
    var out: [UInt8] = []
    c.append(to: &out)
    return out
}
