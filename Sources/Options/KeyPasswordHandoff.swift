import CSys
import Core
#if canImport(Glibc)
import Glibc
#endif

/// How a `--tls-key-password` (from any source: the command line, the
/// file, `PEREGRINE_TLS_KEY_PASSWORD`) reaches the workers without being on
/// their command lines, which `ps` shows to every user: the supervisor
/// leaves it out of the arguments it gives them and puts it in its own
/// environment, which they inherit; each worker takes it out of its
/// environment as it starts, before Python, so the application never sees it.
public enum KeyPasswordHandoff {
    public static let environmentName = "PEREGRINE_TLS_KEY_PASSWORD"

    /// Supervisor: the worker arguments without `--tls-key-password`, after
    /// exporting its value.
    public static func publish(_ config: Config, arguments: [String]) -> [String] {
        guard let password = config.tlsKeyPassword else { return arguments }
        _ = setenv(environmentName, password, 1)
        var kept: [String] = []
        var i = 0
        while i < arguments.count {
            if arguments[i] == "--tls-key-password" {
                i += 2
                continue
            }
            if arguments[i].hasPrefix("--tls-key-password=") {
                i += 1
                continue
            }
            kept.append(arguments[i])
            i += 1
        }
        return kept
    }

    /// Worker: the password its supervisor handed over (if its own
    /// arguments had none), removed from the environment either way.
    public static func take(into config: inout Config) {
        if config.tlsKeyPassword == nil, let password = getenvText(environmentName), !password.isEmpty {
            config.tlsKeyPassword = password
        }
        _ = csys_unsetenv(environmentName)
    }
}
