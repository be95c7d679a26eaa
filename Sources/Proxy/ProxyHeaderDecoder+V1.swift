import Core

/// Version 1, the human-readable line (spec §2.1):
///
///     "PROXY" SP ( "TCP4" | "TCP6" | "UNKNOWN" ) [ SP src SP dst SP sport SP dport ] CRLF
///
/// - at most 107 bytes, CRLF included; exactly one space between fields;
/// - TCP4 addresses are dotted quads, TCP6 addresses IPv6 text; each in
///   its family only;
/// - ports are decimal 0–65535 without leading zeros (the spec's numbers
///   are canonical; "0080" or "65536" is refused);
/// - `UNKNOWN`: "the receiver must ignore anything presented before the
///   CRLF is found" and use the socket's addresses.
///
/// Every byte before CRLF must be printable ASCII or SP (the line is text;
/// a control byte or 8-bit byte is refused at once, whichever protocol).
extension ProxyHeaderDecoder {
    func decodeV1(_ bytes: UnsafeRawBufferPointer) -> ProxyHeaderResult {
        let prefix = Self.v1Prefix
        for i in 0..<min(bytes.count, prefix.count) where bytes[i] != prefix[i] {
            return .failed(.missingSignature)
        }
        var i = prefix.count
        let limit = min(bytes.count, Self.v1MaxLength)
        while i < limit {
            let b = bytes[i]
            if b == 0x0D {
                // CR must be the 106th byte at the latest, LF the 107th.
                guard i + 1 < Self.v1MaxLength else { return .failed(.v1TooLong) }
                guard i + 1 < bytes.count else { return .needMoreData(atLeast: i + 2) }
                guard bytes[i + 1] == 0x0A else { return .failed(.v1Malformed(.lineEnding)) }
                return parseV1Line(bytes.slice(0, i), length: i + 2)
            }
            if b == 0x0A { return .failed(.v1Malformed(.lineEnding)) }
            guard b >= 0x20 && b <= 0x7E else { return .failed(.v1Malformed(.character)) }
            i += 1
        }
        if bytes.count >= Self.v1MaxLength { return .failed(.v1TooLong) }
        // CR LF may follow at once; by the 107th byte there is a verdict.
        return .needMoreData(atLeast: min(Self.v1MaxLength, max(Self.v1MinLength, bytes.count + 2)))
    }

    /// The line without its CRLF.
    private func parseV1Line(_ line: UnsafeRawBufferPointer, length: Int) -> ProxyHeaderResult {
        var fields = V1Fields(line, from: Self.v1Prefix.count)
        guard let proto = fields.next() else { return .failed(.v1Malformed(.protocolName)) }
        let header = { (endpoints: ProxyHeader.Endpoints, transport: ProxyHeader.Transport) in
            ProxyHeaderResult.complete(ProxyHeader(length: length, version: .v1, command: .proxy, transport: transport,
                                                   endpoints: endpoints, tlvs: .empty, ssl: nil))
        }
        if proto.equalsBytes("UNKNOWN") { return header(.keepSocket, .unspecified) }
        let v6: Bool
        if proto.equalsBytes("TCP4") {
            v6 = false
        } else if proto.equalsBytes("TCP6") {
            v6 = true
        } else {
            return .failed(.v1Malformed(.protocolName))
        }
        let parse = { (text: UnsafeRawBufferPointer) -> IPAddress? in
            v6 ? IPAddress.parseIPv6(text) : IPAddress.parseIPv4(text)
        }
        guard let s = fields.next() else { return .failed(.v1Malformed(.separator)) }
        guard let source = parse(s) else { return .failed(.v1Malformed(.sourceAddress)) }
        guard let d = fields.next() else { return .failed(.v1Malformed(.separator)) }
        guard let destination = parse(d) else { return .failed(.v1Malformed(.destinationAddress)) }
        guard let sp = fields.next() else { return .failed(.v1Malformed(.separator)) }
        guard let sourcePort = Self.canonicalPort(sp) else { return .failed(.v1Malformed(.sourcePort)) }
        guard let dp = fields.next() else { return .failed(.v1Malformed(.separator)) }
        guard let destinationPort = Self.canonicalPort(dp) else { return .failed(.v1Malformed(.destinationPort)) }
        guard fields.atEnd else { return .failed(.v1Malformed(.separator)) }
        return header(.ip(source: source, sourcePort: sourcePort, destination: destination,
                          destinationPort: destinationPort), .stream)
    }

    /// 0–65535, no leading zero, no sign.
    static func canonicalPort(_ text: UnsafeRawBufferPointer) -> UInt16? {
        guard text.count == 1 || (text.count > 1 && text[0] != 0x30) else { return nil }
        return ByteText.port(text)
    }
}

/// The space-separated fields of a v1 line: a field is a maximal run of
/// non-space bytes after exactly one space; two spaces in a row, or a
/// trailing space, give an empty field, which no place accepts.
struct V1Fields {
    private let line: UnsafeRawBufferPointer
    private var position: Int
    private(set) var atEnd: Bool

    init(_ line: UnsafeRawBufferPointer, from start: Int) {
        self.line = line
        self.position = start
        self.atEnd = start >= line.count
    }

    mutating func next() -> UnsafeRawBufferPointer? {
        if atEnd { return nil }
        let start = position
        while position < line.count && line[position] != 0x20 { position += 1 }
        let field = line.slice(start, position)
        if position == line.count { atEnd = true } else { position += 1 }
        return field.isEmpty ? nil : field
    }
}

extension UnsafeRawBufferPointer {
    /// The bytes are exactly `text` (case matters).
    func equalsBytes(_ text: StaticString) -> Bool {
        guard count == text.utf8CodeUnitCount else { return false }
        for i in 0..<count where self[i] != text.utf8Start[i] { return false }
        return true
    }
}
