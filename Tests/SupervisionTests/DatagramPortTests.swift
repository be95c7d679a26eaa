import CSys
import Core
import Options
import XCTest

@testable import Supervision

/// `--http3` binds its UDP group on the TCP listener's port. With `--port 0`
/// the kernel chose that port as free for TCP only; when another socket holds
/// its number for UDP, the supervisor binds the listener again on another
/// free port instead of failing the start (SupervisorMain.bindDatagrams). A
/// port the user named is never changed.
final class DatagramPortTests: XCTestCase {
    private func http3(port: Int) -> Config {
        var config = Config()
        config.host = "127.0.0.1"
        config.port = port
        config.http3 = true
        return config
    }

    /// Holds `port` for UDP on the listener's address, as a client's socket could.
    private func holdUDP(like listener: Listener, port: Int) throws -> [Int32] {
        switch UDPSocket.bindGroup(like: listener.fd, port: port, count: 1) {
        case .success(let held): return held.fds
        case .failure(let f): throw f
        }
    }

    private func close(_ fds: [Int32]) { for fd in fds { _ = csys_close(fd) } }

    func testAKernelChosenPortTakenForUDPIsChosenAgain() throws {
        let config = http3(port: 0)
        let first = try Listener.bind(config)
        var listeners = [first]
        let held = try holdUDP(like: first, port: first.port)
        defer { close(held) }
        let group = try SupervisorMain.bindDatagrams(config, listeners: &listeners, tcp: first)
        defer { close(group.fds); close(listeners.map(\.fd)) }
        XCTAssertNotEqual(group.port, first.port)
        XCTAssertEqual(listeners.count, 1)
        XCTAssertEqual(listeners[0].port, group.port, "TCP and UDP share the new port")
    }

    func testAFreeKernelChosenPortIsKept() throws {
        let config = http3(port: 0)
        let first = try Listener.bind(config)
        var listeners = [first]
        let group = try SupervisorMain.bindDatagrams(config, listeners: &listeners, tcp: first)
        defer { close(group.fds); close(listeners.map(\.fd)) }
        XCTAssertEqual(group.port, first.port)
        XCTAssertEqual(listeners[0].port, first.port)
    }

    func testANamedPortTakenForUDPStopsTheStart() throws {
        let probe = try Listener.bind(http3(port: 0))
        let port = probe.port
        _ = csys_close(probe.fd)
        let config = http3(port: port)
        let listener = try Listener.bind(config)
        var listeners = [listener]
        let held = try holdUDP(like: listener, port: port)
        defer { close(held); close(listeners.map(\.fd)) }
        XCTAssertThrowsError(try SupervisorMain.bindDatagrams(config, listeners: &listeners, tcp: listener)) { error in
            XCTAssertTrue((error as? StartupFailure)?.message.hasPrefix("cannot bind UDP 127.0.0.1:\(port) for HTTP/3") ?? false,
                          "\(error)")
        }
        XCTAssertEqual(listeners[0].port, port, "a named port is never rebound")
    }
}
