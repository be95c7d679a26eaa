import Core
import Options
import TLS

/// From the TLS options to a `TLSContext`, in both processes.
///
/// The supervisor has no OpenSSL (Supervision.SupervisorMain): before any
/// worker starts it runs this executable in check mode, which loads every
/// certificate, key and CA file once, so a mistake is one
/// `peregrine: error:` line and exit 2 rather than N failing workers. Each
/// worker takes the session-ticket secret the supervisor made out of its
/// environment before Python starts and derives the ticket keys from it
/// (HKDF per `ticketPeriodSeconds`), so a ticket one worker issued resumes
/// on any other, with no IPC (Options.TicketSecretHandoff).
enum TLSSetup {
    /// A ticket key is used to issue tickets for this long, and accepted
    /// for as long again.
    static let ticketPeriodSeconds = 3600

    /// ALPN protocols in server preference order. The HTTP/2 integration
    /// puts "h2" first here when HTTP/2 is enabled; see
    /// H1Connection.startProtocol for where the result is read.
    static func alpnProtocols(_ config: Config) -> [String] {
        if config.http2Only { return ["h2"] }
        return config.http2 ? ["h2", "http/1.1"] : ["http/1.1"]
    }

    static func makeContext(_ config: Config, ticketSecret: [UInt8]?) throws(StartupFailure) -> TLSContext {
        let pairs = zip(config.tlsCertificates, config.tlsKeys).map { TLSCertificatePair(certificate: $0, key: $1) }
        do {
            return try TLSContext(pairs: pairs, ciphers: config.tlsCiphers, clientCA: config.tlsCA,
                                  clientCertificates: config.tlsClientCert, alpn: alpnProtocols(config),
                                  ticketSecret: ticketSecret, ticketPeriodSeconds: ticketPeriodSeconds)
        } catch {
            throw StartupFailure(error.message)
        }
    }

    /// `peregrine-worker --worker check`, run by the supervisor before it
    /// binds: load every certificate, key and CA file once.
    static func check(_ config: Config) throws(StartupFailure) {
        guard config.tlsEnabled else { return }
        _ = try makeContext(config, ticketSecret: nil)
    }

    /// Worker: the contexts its connections use (nil without TLS; the QUIC
    /// one only with --http3): the same certificates and the same ticket
    /// secret, so a ticket resumes on any worker (over the protocol that
    /// issued it).
    static func workerContexts(_ config: Config) throws(StartupFailure) -> (tcp: TLSContext?, quic: QUICTLSContext?) {
        let secret = TicketSecret.take(environmentName: TicketSecretHandoff.environmentName)
        guard config.tlsEnabled else { return (nil, nil) }
        if secret == nil { Log.warning("no TLS ticket secret from the supervisor: tickets resume on this worker only") }
        let tcp = try makeContext(config, ticketSecret: secret)
        guard config.http3 else { return (tcp, nil) }
        let pairs = zip(config.tlsCertificates, config.tlsKeys).map { TLSCertificatePair(certificate: $0, key: $1) }
        do {
            return (tcp, try QUICTLSContext(pairs: pairs, ticketSecret: secret, ticketPeriodSeconds: ticketPeriodSeconds))
        } catch {
            throw StartupFailure(error.message)
        }
    }
}
