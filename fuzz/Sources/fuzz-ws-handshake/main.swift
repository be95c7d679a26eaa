// libFuzzer target for the WebSocket opening handshake readers (RFC 6455
// §4.2.1, §9.1, §11.3; RFC 7692 §5, §7.1; RFC 8441 §4) (see fuzz/README.md).
//
// Byte 0 picks the reader (low two bits) and, for the HTTP/1.1 handshake,
// the method and version (bits 2, 3); the rest is field values split at LF.
//
//  * `Sec-WebSocket-Extensions` (`ExtensionListReader`): every name and
//    parameter span lies inside its value (parameters inside the offer's
//    parameter section) and is a token; the offers read (up to the end or
//    the first malformed element) re-serialise canonically
//    (`name; p; q=v, ...`) to a value that reads back to the same offers
//    without an error; `PerMessageDeflateParameters.negotiate` gives the same
//    answer on the originals and on their re-serialisations, an agreed
//    window is 8–15, and the response value, offered back, negotiates to
//    the same parameters.
//  * `Sec-WebSocket-Protocol` (`ProtocolListReader`): the same for tokens
//    joined with ", ".
//  * The HTTP/1.1 handshake (`UpgradeRequest`): each line's first byte picks
//    the field; the verdict does not depend on the order of the lines; an
//    accepted key re-encodes to exactly the key line (strict base64), parses
//    back to the same key, and its accept value is 28 characters of base64
//    for 20 bytes. `HandshakeField(name:)` recognises a line exactly when it
//    is one of the six names in any case.
//  * Extended CONNECT (`ExtendedConnectRequest`): the first line is
//    `:protocol`, the others `Sec-WebSocket-Version` values; the verdict
//    does not depend on their order.
//
// Built with -D FUZZING, -parse-as-library and -sanitize=fuzzer this file
// defines LLVMFuzzerTestOneInput and the entry point libFuzzer runs from.
// Built plainly it is a replay tool: `fuzz-ws-handshake FILE...`.

import Core
import FuzzSupport
import WebSocket

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}

func isToken(_ bytes: some Collection<UInt8>) -> Bool {
    !bytes.isEmpty && bytes.allSatisfy { c in
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
            || "!#$%&'*+-.^_`|~".utf8.contains(c)
    }
}

func lines(_ bytes: UnsafeRawBufferPointer) -> [[UInt8]] {
    bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
}

struct Offer: Equatable {
    var name: [UInt8]
    var parameters: [(name: [UInt8], value: [UInt8]?)]

    static func == (a: Offer, b: Offer) -> Bool {
        a.name == b.name && a.parameters.count == b.parameters.count
            && zip(a.parameters, b.parameters).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }
}

/// The offers of one value up to its end or first error, and whether it
/// ended in one.
func readOffers(_ value: [UInt8]) -> (offers: [Offer], malformed: Bool) {
    value.withUnsafeBytes { b in
        var reader = ExtensionListReader(b)
        var offers: [Offer] = []
        func inside(_ span: ByteSpan, _ lower: Int, _ upper: Int) -> [UInt8] {
            check(span.start >= lower && span.end <= upper && span.count >= 0, "span \(span) outside \(lower)..<\(upper)")
            return Array(b[span.start..<span.end])
        }
        while true {
            let next: ExtensionOffer?
            do throws(HandshakeRejection) { next = try reader.next() } catch {
                check(error.status == 400, "extension list rejected with \(error.status)")
                return (offers, true)
            }
            guard let offer = next else { return (offers, false) }
            let name = inside(offer.name, 0, b.count)
            check(isToken(name), "extension name is not a token")
            let section = offer.parameterSection
            _ = inside(section, offer.name.end, b.count)
            var parameters: [(name: [UInt8], value: [UInt8]?)] = []
            var reader = offer.parameters(in: b)
            while let p = reader.next() {
                let pName = inside(p.name, section.start, section.end)
                check(isToken(pName), "parameter name is not a token")
                let pValue = p.value.map { inside($0, section.start, section.end) }
                if let pValue { check(isToken(pValue), "parameter value is not a token") }
                parameters.append((pName, pValue))
            }
            offers.append(Offer(name: name, parameters: parameters))
        }
    }
}

func serialise(_ offers: [Offer]) -> [UInt8] {
    var out: [UInt8] = []
    for (i, offer) in offers.enumerated() {
        if i > 0 { out += Array(", ".utf8) }
        out += offer.name
        for p in offer.parameters {
            out += Array("; ".utf8) + p.name
            if let v = p.value { out += [UInt8(ascii: "=")] + v }
        }
    }
    return out
}

func negotiate(_ values: [[UInt8]]) -> PerMessageDeflateParameters? {
    func with(_ rest: ArraySlice<[UInt8]>, _ pointers: [UnsafeRawBufferPointer]) -> PerMessageDeflateParameters? {
        guard let first = rest.first else { return PerMessageDeflateParameters.negotiate(fieldValues: pointers) }
        return first.withUnsafeBytes { with(rest.dropFirst(), pointers + [$0]) }
    }
    return with(values[...], [])
}

func checkExtensions(_ values: [[UInt8]]) {
    var canonical: [[UInt8]] = []
    for value in values {
        let (offers, _) = readOffers(value)
        let again = serialise(offers)
        let (reread, malformed) = readOffers(again)
        check(!malformed && reread == offers, "offers re-serialised as \(String(decoding: again, as: UTF8.self)) read back differently")
        canonical.append(again)
    }
    let agreed = negotiate(values)
    check(negotiate(canonical) == agreed, "negotiation differs on the re-serialised values")
    guard let agreed else { return }
    for bits in [agreed.serverMaxWindowBits, agreed.clientMaxWindowBits] {
        if let bits { check(bits >= 8 && bits <= 15, "window bits \(bits)") }
    }
    check(negotiate([Array(agreed.responseValue.utf8)]) == agreed, "the response value \(agreed.responseValue) negotiates differently")
}

func checkProtocols(_ values: [[UInt8]]) {
    for value in values {
        var tokens: [[UInt8]] = []
        value.withUnsafeBytes { b in
            var reader = ProtocolListReader(b)
            while true {
                guard let span = try? reader.next() else { return }
                check(span.start >= 0 && span.end <= b.count, "span \(span) outside \(b.count)")
                let token = Array(b[span.start..<span.end])
                check(isToken(token), "subprotocol is not a token")
                tokens.append(token)
            }
        }
        let joined = Array(tokens.joined(separator: Array(", ".utf8)))
        var reread: [[UInt8]] = []
        let clean: Bool = joined.withUnsafeBytes { b in
            var reader = ProtocolListReader(b)
            do {
                while let span = try reader.next() { reread.append(Array(b[span.start..<span.end])) }
                return true
            } catch {
                return false
            }
        }
        check(clean && reread == tokens, "subprotocols re-serialised read back differently")
    }
}

let fieldNames = ["upgrade", "connection", "sec-websocket-key", "sec-websocket-version",
                  "sec-websocket-protocol", "sec-websocket-extensions"]

func verdict(_ fields: [(HandshakeField, [UInt8])], isGET: Bool, isHTTP11: Bool) -> HandshakeVerdict {
    var request = UpgradeRequest()
    for (field, value) in fields { value.withUnsafeBytes { request.receive(field, value: $0) } }
    return request.verdict(isGET: isGET, isHTTP11OrLater: isHTTP11)
}

func checkUpgrade(_ values: [[UInt8]], isGET: Bool, isHTTP11: Bool) {
    for value in values {
        let lowered = value.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
        let recognised = value.withUnsafeBytes { HandshakeField(name: $0) }
        let expected = fieldNames.firstIndex { Array($0.utf8) == lowered }
        check(recognised.map { Int($0.rawValue) } == expected, "HandshakeField(name:) on \(lowered)")
    }
    let fields = values.filter { !$0.isEmpty }.map { (HandshakeField.allCases[Int($0[0]) % 6], Array($0.dropFirst())) }
    let forward = verdict(fields, isGET: isGET, isHTTP11: isHTTP11)
    check(verdict(fields.reversed(), isGET: isGET, isHTTP11: isHTTP11) == forward, "the verdict depends on the field order")
    guard case .accept(let key) = forward else { return }
    let keyLine = fields.first { $0.0 == .secWebSocketKey }!.1
    let trimmed = keyLine.drop { $0 == 0x20 || $0 == 0x09 }.reversed().drop { $0 == 0x20 || $0 == 0x09 }.reversed()
    var encoded = [UInt8](repeating: 0, count: SecWebSocketKey.encodedLength)
    check(encoded.withUnsafeMutableBytes { key.writeEncoded(into: $0) } == 24, "encoded key length")
    check(encoded == Array(trimmed), "the key re-encodes differently from its field")
    check(encoded.withUnsafeBytes { SecWebSocketKey(fieldValue: $0) } == key, "the re-encoded key parses differently")
    var accept = [UInt8](repeating: 0, count: SecWebSocketKey.acceptLength)
    check(accept.withUnsafeMutableBytes { key.writeAccept(into: $0) } == 28, "accept length")
    var digest = [UInt8](repeating: 0, count: 21)
    check(accept.withUnsafeBytes { a in digest.withUnsafeMutableBytes { Base64.decode(a, into: $0) } } == 20,
          "the accept value is not base64 of 20 bytes")
}

func checkExtendedConnect(_ values: [[UInt8]]) {
    guard let name = values.first else { return }
    func verdict(_ versions: [[UInt8]]) -> ExtendedConnectVerdict {
        var request = ExtendedConnectRequest()
        for v in versions { v.withUnsafeBytes { request.receive(.secWebSocketVersion, value: $0) } }
        return name.withUnsafeBytes { request.verdict(protocolName: $0) }
    }
    let versions = Array(values.dropFirst())
    let forward = verdict(versions)
    check(verdict(versions.reversed()) == forward, "the extended CONNECT verdict depends on the order")
    if forward == .accept {
        check(name.map { $0 | 0x20 } == Array("websocket".utf8) && versions.count == 1, "accepted \(versions.count) versions")
    }
}

func fuzzOne(_ input: UnsafeRawBufferPointer) {
    guard let first = input.first else { return }
    let values = lines(UnsafeRawBufferPointer(rebasing: input[1...]))
    switch first & 3 {
    case 0: checkExtensions(values)
    case 1: checkProtocols(values)
    case 2: checkUpgrade(values, isGET: first & 4 == 0, isHTTP11: first & 8 == 0)
    default: checkExtendedConnect(values)
    }
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzOne(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// libFuzzer's `main` for this executable (see FuzzSupport).
@_cdecl("fuzz_ws_handshake_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runLibFuzzer(argc, argv, fuzzTestOneInput)
}
#else
let replayStatus: Never = replay(CommandLine.arguments.dropFirst()) { _, bytes in fuzzOne(bytes) }
#endif
