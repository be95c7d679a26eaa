// Where a QUIC connection's blocks go, so a burst of handshakes leaves no
// holes in the heap under the connections it leaves idle.
//
// A burst of handshakes allocates, interleaved, blocks each connection
// keeps for its life and blocks it frees soon: the handshake's (freed once
// it is confirmed and the Initial and Handshake spaces are discarded, RFC
// 9001 §4.9), its first request's, and what the idle release gives back.
// glibc's heap keeps the size the burst made it, and every page holding a
// kept block stays resident with the freed blocks around it. So code that
// makes blocks of one of these lifetimes says so with a zone hint, and the
// worker's malloc (Sources/CAllocator) takes them from that zone of CTLS's
// handshake heap: what a connection keeps to the connection zone, packed;
// what dies with the handshake to the handshake zone, with OpenSSL's
// handshake allocations, whose chunks go back to the kernel as they empty.
// glibc's heap then holds the short-lived blocks, whose pages go back once
// they are freed. Outside the worker (tests, fuzzers) malloc is glibc's
// and the hints change nothing.
//
// A hint must cover only blocks of its lifetime: a request's buffers in
// the connection zone would leave holes there in turn, and a connection's
// table in glibc's heap would pin a page of the burst's freed blocks.

import CSys

public enum AllocationZone: Sendable {
    /// Dies with the handshake: the Initial and Handshake spaces' CRYPTO
    /// data, sent-packet records, ledgers and keys.
    case handshake
    /// Kept for the connection's life: its objects, tables, control
    /// streams and 1-RTT keys.
    case connection

    /// The thread's hint before `enter`, for `restore`.
    public struct Saved: Sendable {
        fileprivate let zone: Int32
        /// `enter(if: false)`'s: nothing to restore (a packet path's hint
        /// that does not apply costs no call).
        fileprivate static let untouched = Saved(zone: .min)
    }

    /// Sets this thread's hint to the zone (when `condition` holds) until
    /// `restore`: pair them, in a `defer` where a scope ends early (a
    /// closure-taking form would box captured variables in unoptimised
    /// builds).
    @inline(__always) public func enter(if condition: Bool = true) -> Saved {
        guard condition else { return .untouched }
        return Saved(zone: csys_allocation_zone_set(self == .handshake ? CSYS_ZONE_HANDSHAKE : CSYS_ZONE_CONNECTION))
    }

    @inline(__always) public static func restore(_ saved: Saved) {
        if saved.zone != Saved.untouched.zone { _ = csys_allocation_zone_set(saved.zone) }
    }
}
