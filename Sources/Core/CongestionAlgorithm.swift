/// The QUIC congestion controller new connections use
/// (`--quic-congestion`; RFC 9002 §7 leaves the choice to the sender).
public enum CongestionAlgorithm: String, Sendable, CaseIterable {
    /// CUBIC (RFC 9438) with HyStart++ (RFC 9406): the default.
    case cubic
    /// NewReno (RFC 9002 §7, Appendix B).
    case newReno = "newreno"
}
