import Core
import TLS

/// From the TLS options to a `TLSContext`, in both processes.
///
/// The supervisor never serves, but it loads every certificate, key and CA
/// file once before any worker starts, so a mistake is one
/// `peregrine: error:` line and exit 2 rather than N failing workers. It
/// also makes the session-ticket secret and leaves it in its environment,
/// which the workers it spawns inherit; each worker takes it out of its
/// own environment before Python starts and derives the ticket keys from
/// it (HKDF per `ticketPeriodSeconds`), so a ticket one worker issued
/// resumes on any other, with no IPC.
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

    /// Supervisor: check the configuration and publish the ticket secret.
    static func prepareSupervisor(_ config: Config) throws(StartupFailure) {
        guard config.tlsEnabled else { return }
        _ = try makeContext(config, ticketSecret: nil)
        guard let secret = TicketSecret.generate() else {
            throw StartupFailure("cannot get random bytes for the TLS session-ticket secret")
        }
        TicketSecret.export(secret)
    }

    /// Worker: the context its connections use (nil without TLS).
    static func workerContext(_ config: Config) throws(StartupFailure) -> TLSContext? {
        let secret = TicketSecret.take()
        guard config.tlsEnabled else { return nil }
        if secret == nil { Log.warning("no TLS ticket secret from the supervisor: tickets resume on this worker only") }
        return try makeContext(config, ticketSecret: secret)
    }
}
