import CSys
import Core
#if canImport(Glibc)
import Glibc
#endif

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

    /// The supervisor's configuration from every source (ConfigSources):
    /// the command line, `PEREGRINE_*` and the `--config` file, resolved once.
    /// `--print-config` prints it and exits 0; `--env-file`'s variables are
    /// set here (those already in the environment win), so every worker
    /// started after inherits them. Workers get `arguments` and parse them
    /// with `configuration()`, never reading the file or `PEREGRINE_*`.
    public static func supervisorConfiguration() -> ResolvedConfiguration {
        let resolved: ResolvedConfiguration
        do {
            switch try ConfigSources.resolve(commandLine: arguments, environment: getenvText, readFile: readWholeFile) {
            case .printAndExit(let text, let status):
                Log.writeAll(status == 0 ? 1 : 2, text)
                csys_exit(status)
            case .resolved(let r):
                resolved = r
            }
        } catch {
            fail(error.message)
        }
        if resolved.printConfig {
            Log.writeAll(1, PrintConfig.render(resolved, environmentNames: environmentNames()))
            csys_exit(0)
        }
        for (name, value) in resolved.environmentFile { _ = setenv(name, value, 0) }
        return resolved
    }

    /// The names of this process's environment variables.
    static func environmentNames() -> [String] {
        var names: [String] = []
        var p = environ
        while let entry = p.pointee {
            let text = String(cString: entry)
            names.append(text.firstIndex(of: "=").map { String(text[..<$0]) } ?? text)
            p += 1
        }
        return names
    }

    /// A configuration file larger than this is refused: none is, and a
    /// device that never ends (a mistyped /dev/zero) must not eat memory.
    static let largestConfigurationFile = 1 << 20

    /// The whole of a file, or why not.
    static func readWholeFile(_ path: String) -> Result<[UInt8], FileReadFailure> {
        let fd = csys_open_read(path)
        guard fd >= 0 else { return .failure(FileReadFailure(SystemError(call: "open", errno: csys_errno()).description)) }
        defer { _ = csys_close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { return .failure(FileReadFailure(SystemError(call: "read", errno: csys_errno()).description)) }
            if n == 0 { return .success(out) }
            out += chunk[0..<n]
            if out.count > largestConfigurationFile {
                return .failure(FileReadFailure("larger than \(largestConfigurationFile >> 20) MiB"))
            }
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
