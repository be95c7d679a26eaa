import CSys

/// How the TLS session-ticket secret gets from the supervisor to every
/// worker: the supervisor sets it in its own environment (32 bytes from
/// getrandom, hex), the workers it spawns inherit it, and each worker takes
/// it out of its environment before Python starts (TLS.TicketSecret), so a
/// ticket one worker issued resumes on any other, with no IPC.
public enum TicketSecretHandoff {
    public static let environmentName = "PEREGRINE_TLS_TICKET_SECRET"

    /// Supervisor: makes the secret; false if no random bytes could be had.
    public static func publish() -> Bool {
        csys_export_random_secret(environmentName, 32) == 0
    }
}
