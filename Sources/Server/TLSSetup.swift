import CSys
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

    /// The certificate/key pairs with the OCSP response paired with each
    /// (`--tls-ocsp` in order; an empty or missing one: none).
    static func pairs(_ config: Config) -> [TLSCertificatePair] {
        zip(config.tlsCertificates, config.tlsKeys).enumerated().map { index, files in
            let ocsp = index < config.tlsOCSPResponses.count ? config.tlsOCSPResponses[index] : ""
            return TLSCertificatePair(certificate: files.0, key: files.1, ocspResponse: ocsp.isEmpty ? nil : ocsp)
        }
    }

    static func makeContext(_ config: Config, ticketSecret: [UInt8]?,
                            keyPassword: [UInt8]?) throws(StartupFailure) -> TLSContext {
        let context: TLSContext
        do {
            context = try TLSContext(pairs: pairs(config), ciphers: config.tlsCiphers, clientCA: config.tlsCA,
                                     clientCertificates: config.tlsClientCert, alpn: alpnProtocols(config),
                                     ticketSecret: ticketSecret, ticketPeriodSeconds: ticketPeriodSeconds,
                                     minimumVersion: config.tlsMinimumVersion, keyPassword: keyPassword)
        } catch {
            throw StartupFailure(error.message)
        }
        for warning in context.warnings { Log.warning(warning.message) }
        return context
    }

    /// `peregrine-worker --worker check`, run by the supervisor before it
    /// binds and again on SIGHUP before replacing any worker: load every
    /// certificate, key, CA, password and OCSP file once, over TCP and (with
    /// --http3) QUIC alike.
    static func check(_ config: Config) throws(StartupFailure) {
        guard config.tlsEnabled else { return }
        let password = try TLSKeyPassword.resolve(config)
        _ = try makeContext(config, ticketSecret: nil, keyPassword: password)
        if config.http3 { _ = try makeQUICContext(config, ticketSecret: nil, keyPassword: password) }
    }

    /// `--worker check-reload`: the supervisor got SIGHUP and replaces no
    /// worker unless the files load. A mistake is one error line in the
    /// log and exit status 2; the supervisor adds nothing to it, so a bad
    /// rotation costs one line, not a worker crash loop.
    static func checkBeforeRestart(_ config: Config) -> Never {
        do throws(StartupFailure) {
            try check(config)
        } catch {
            Log.error("SIGHUP: \(error.message); no worker replaced, the running ones keep the files they loaded")
            csys_exit(2)
        }
        csys_exit(0)
    }

    static func makeQUICContext(_ config: Config, ticketSecret: [UInt8]?,
                                keyPassword: [UInt8]?) throws(StartupFailure) -> QUICTLSContext {
        do {
            return try QUICTLSContext(pairs: pairs(config), ticketSecret: ticketSecret,
                                      ticketPeriodSeconds: ticketPeriodSeconds, keyPassword: keyPassword)
        } catch {
            throw StartupFailure(error.message)
        }
    }

    /// Worker: the contexts its connections use (nil without TLS; the QUIC
    /// one only with --http3): the same certificates and the same ticket
    /// secret, so a ticket resumes on any worker (over the protocol that
    /// issued it). `statelessSecret` is what QUIC's address-validation and
    /// stateless-reset tokens derive from: the same secret (they derive
    /// their own keys from it with their own labels), else random bytes
    /// for this process alone.
    static func workerContexts(_ config: Config) throws(StartupFailure)
        -> (tcp: TLSContext?, quic: QUICTLSContext?, statelessSecret: [UInt8]) {
        let secret = TicketSecret.take(environmentName: TicketSecretHandoff.environmentName)
        let statelessSecret = secret ?? (0..<32).map { _ in UInt8.random(in: 0...255) }
        guard config.tlsEnabled else { return (nil, nil, statelessSecret) }
        if secret == nil { Log.warning("no TLS ticket secret from the supervisor: tickets resume on this worker only") }
        // Read afresh by every worker: a rolling restart (SIGHUP) serves
        // whatever the certificate, key, password and OCSP files hold now.
        let password = try TLSKeyPassword.resolve(config)
        let tcp = try makeContext(config, ticketSecret: secret, keyPassword: password)
        guard config.http3 else { return (tcp, nil, statelessSecret) }
        return (tcp, try makeQUICContext(config, ticketSecret: secret, keyPassword: password), statelessSecret)
    }
}
