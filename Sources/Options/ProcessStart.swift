import CSys
import Core

/// How both executables begin and how they give up at startup.
public enum ProcessStart {
    /// This process's arguments parsed into a configuration, or the process
    /// ends here: `--help` and `--version` print and exit 0, a mistake is one
    /// `peregrine: error:` line and exit 2.
    public static func configuration() -> Config {
        do {
            switch try CommandLineParser.parse(arguments) {
            case .printAndExit(let text, let status):
                Log.writeAll(status == 0 ? 1 : 2, text)
                csys_exit(status)
            case .run(let config):
                return config
            }
        } catch {
            fail(error.message)
        }
    }

    /// The arguments after the program name.
    public static var arguments: [String] { Array(CommandLine.arguments.dropFirst()) }

    /// Every startup problem: one `peregrine: error:` line, exit status 2.
    public static func fail(_ message: String) -> Never {
        Log.writeAll(2, "peregrine: error: \(message)\n")
        csys_exit(2)
    }
}
