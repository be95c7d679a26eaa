// libFuzzer target for the forwarded-header resolver and the address
// parsers under it (see fuzz/README.md).
//
// Input layout: byte 0 picks the trusted list, byte 1 the immediate peer;
// the rest is field lines separated by LF, each line's first byte choosing
// the field (Forwarded, X-Forwarded-For/-Proto/-Host/-Port) and the rest
// being its value. Beyond "no crash", it traps when an invariant breaks:
//
//  * every slice handed out (host, obfuscated node) lies inside one of the
//    field values given;
//  * an untrusted peer, or no field, changes nothing;
//  * resolving twice gives the same answer;
//  * X-Forwarded-* lines of one field, joined into one value with commas,
//    resolve the same (RFC 9110 §5.3);
//  * a client address, and any address the text parser accepts, prints
//    in canonical form and parses back to the same bits; a host's port
//    and X-Forwarded-Port are never 0.
//
// The whole input is also parsed as a trusted-address list (which may
// throw, never trap).
//
// Built with -D FUZZING, -parse-as-library and -sanitize=fuzzer this file
// defines LLVMFuzzerTestOneInput and the entry point libFuzzer runs from.
// Built plainly it is a replay tool: `fuzz-forwarded FILE...`.

import Core
import FuzzSupport
import Proxy

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}

let trustedLists: [TrustedPeers] = [
    "*", "10.0.0.0/8, 2001:db8::/32", "", "unix", "0.0.0.0/0", "::/0", "192.0.2.1, ::ffff:198.51.100.0/120, unix",
    "127.0.0.1,::1,unix",
].map { try! TrustedPeers(parsing: $0) }

let peers: [PeerAddress] = [
    .ip(IPAddress(ipv4: 0x0A00_0001)), .unix, .ip(IPAddress(ipv6High: 0x2001_0db8_0000_0000, low: 1)),
    .ip(IPAddress(ipv4: 0xC000_0201)), .ip(IPAddress(ipv6High: 0, low: 0x0000_FFFF_C633_6405)),
]

/// Inside one of the given values.
func inside(_ slice: UnsafeRawBufferPointer, _ values: [UnsafeRawBufferPointer]) -> Bool {
    guard let start = slice.baseAddress else { return slice.isEmpty }
    for v in values {
        guard let base = v.baseAddress else { continue }
        if start >= base && start + slice.count <= base + v.count { return true }
    }
    return false
}

func checkRoundTrip(_ address: IPAddress) {
    let text = address.description
    var copy = text
    let again = copy.withUTF8 { IPAddress.parse(UnsafeRawBufferPointer($0)) }
    check(again != nil && again!.isSameHost(as: address), "\(text) does not parse back")
    check(again?.description == text, "\(text) prints differently the second time")
}

func resolve(_ resolver: ForwardedResolver, _ peer: PeerAddress, _ lines: [(ForwardedField, UnsafeRawBufferPointer)]) -> ForwardedResolution {
    var fields = ForwardedFieldLines()
    for (field, value) in lines { fields.append(field, value: value) }
    return resolver.resolve(peer: peer, fields: fields)
}

func fuzzOne(_ bytes: UnsafeRawBufferPointer) {
    // The whole input as an address and as a trusted list.
    if let address = IPAddress.parse(bytes) { checkRoundTrip(address) }
    _ = try? TrustedPeers(parsing: String(decoding: bytes, as: UTF8.self))

    guard bytes.count >= 2 else { return }
    let trusted = trustedLists[Int(bytes[0]) % trustedLists.count]
    let peer = peers[Int(bytes[1]) % peers.count]
    let resolver = ForwardedResolver(trusted: trusted)

    var lines: [(ForwardedField, UnsafeRawBufferPointer)] = []
    var start = 2
    while start < bytes.count {
        var end = start
        while end < bytes.count && bytes[end] != 0x0A { end += 1 }
        if end > start {
            let field = ForwardedField.allCases[Int(bytes[start]) % ForwardedField.allCases.count]
            lines.append((field, UnsafeRawBufferPointer(rebasing: bytes[(start + 1)..<end])))
        }
        start = end + 1
    }
    let values = lines.map(\.1)

    let result = resolve(resolver, peer, lines)
    check(resolve(resolver, peer, lines) == result, "resolving twice differs")
    if lines.isEmpty || !trusted.contains(peer) {
        check(result.isUnchanged && result.source == .none, "untrusted peer or no field changed the request")
    }
    if result.isUnchanged { check(result.source == .none, "unchanged but a source is named") }
    if let host = result.host {
        check(!host.bytes.isEmpty && inside(host.bytes, values), "host slice outside the input")
    }
    check(result.port != 0, "port 0")
    switch result.client {
    case .obfuscated(let node)?:
        check(node.bytes.count >= 2 && node.bytes.first == 0x5F && inside(node.bytes, values), "obfuscated slice")
    case .address(let address, _)?:
        checkRoundTrip(address)
    case .unknown?, nil:
        break
    }

    // X-Forwarded-* lines joined per field resolve the same (no Forwarded
    // line, and few enough lines that none is dropped for capacity).
    let fields = Set(lines.map(\.0))
    if !fields.contains(.forwarded) && !lines.isEmpty && lines.count <= 8 {
        var joined: [[UInt8]] = []
        var order: [ForwardedField] = []
        for field in ForwardedField.allCases where fields.contains(field) {
            var value: [UInt8] = []
            for (f, v) in lines where f == field {
                if !value.isEmpty { value.append(0x2C) }
                value += v
            }
            joined.append(value)
            order.append(field)
        }
        let buffers = joined.map { v -> UnsafeMutableRawBufferPointer in
            let b = UnsafeMutableRawBufferPointer.allocate(byteCount: max(v.count, 1), alignment: 1)
            b.copyBytes(from: v)
            return UnsafeMutableRawBufferPointer(rebasing: b[0..<v.count])
        }
        defer { buffers.forEach { $0.deallocate() } }
        let other = resolve(resolver, peer, zip(order, buffers.map { UnsafeRawBufferPointer($0) }).map { ($0, $1) })
        check(other == result, "joined lines resolve differently: \(other) vs \(result)")
    }
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzOne(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// libFuzzer's `main` for this executable (see FuzzSupport).
@_cdecl("fuzz_forwarded_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runLibFuzzer(argc, argv, fuzz)
}
#else
// A declaration rather than statements, so the file also parses in the
// -parse-as-library mode of the fuzzing build (where this branch is
// inactive but must still be valid library code). In a plain build it is
// top-level code and runs at start-up.
let replayStatus: Never = replay(CommandLine.arguments.dropFirst()) { _, bytes in fuzzOne(bytes) }
#endif
