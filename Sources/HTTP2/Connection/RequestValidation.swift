// Request message validation (RFC 9113 §8.1–§8.3; RFC 8441 §4).
//
// Turns a decoded header list into an `H2RequestHead`, or names the rule it
// broke. Every failure here makes the request malformed: §8.1.1 "Malformed
// requests or responses that are detected MUST be treated as a stream error
// of type PROTOCOL_ERROR" — the connection resets the stream and the
// application never sees the request (DESIGN principle 7).
//
// Rules, in the order a field meets them:
//   * pseudo-header fields come first (§8.3: "All pseudo-header fields MUST
//     appear in a field block before all regular field lines"), each at most
//     once, only the request ones (§8.3.1; `:status` or an unknown one is
//     malformed), `:protocol` only with SETTINGS_ENABLE_CONNECT_PROTOCOL
//     (RFC 8441 §4); trailers carry none (§8.1);
//   * names are lower-case tokens, values field-content (FieldSyntax);
//   * connection-specific fields (§8.2.2: connection, keep-alive,
//     proxy-connection, transfer-encoding, upgrade) are malformed, and `te`
//     may only say "trailers";
//   * content-length is one field holding one 1*DIGIT value (RFC 9110
//     §8.6). §8.6 lets a recipient of a list such as "5, 5" (or of the same
//     value in two fields) reject it or replace it by the one value; we
//     reject it like HTTP/1.1 does (DESIGN principle 7), so the application
//     only ever sees one decimal;
//   * cookie crumbs are joined with "; " (§8.2.3), in order;
//   * then the pseudo-header set: :method always; CONNECT (§8.5) has
//     :authority with a port and neither :scheme nor :path; extended CONNECT
//     has all four plus :protocol; every other method has :scheme and a
//     non-empty :path ("/..." or "*" for OPTIONS);
//   * :authority and Host, when both present, name the same authority (§8.3.1
//     "A server SHOULD treat a request as malformed if it contains a Host
//     header field that identifies an entity that differs from the entity in
//     the :authority pseudo-header field").

import Core

extension H2Error {
    public static let pseudoAfterRegular = H2Error(code: .protocolError, reason: "pseudo-header field after a regular field")
    public static let pseudoInTrailers = H2Error(code: .protocolError, reason: "pseudo-header field in trailers")
    public static let unknownPseudo = H2Error(code: .protocolError, reason: "unknown or response pseudo-header field")
    public static let duplicatePseudo = H2Error(code: .protocolError, reason: "repeated pseudo-header field")
    public static let invalidFieldName = H2Error(code: .protocolError, reason: "field name not a lower-case token")
    public static let invalidFieldValue = H2Error(code: .protocolError, reason: "invalid octet or surrounding whitespace in a field value")
    public static let connectionSpecificField = H2Error(code: .protocolError, reason: "connection-specific field")
    public static let teNotTrailers = H2Error(code: .protocolError, reason: "te other than \"trailers\"")
    public static let invalidContentLength = H2Error(code: .protocolError, reason: "content-length not 1*DIGIT")
    public static let contentLengthList = H2Error(code: .protocolError, reason: "content-length with a list of values")
    public static let repeatedContentLength = H2Error(code: .protocolError, reason: "repeated content-length field")
    public static let duplicateHost = H2Error(code: .protocolError, reason: "repeated host field")
    public static let missingMethod = H2Error(code: .protocolError, reason: "missing :method")
    public static let invalidMethod = H2Error(code: .protocolError, reason: ":method not a token")
    public static let missingSchemeOrPath = H2Error(code: .protocolError, reason: "missing :scheme or :path")
    public static let invalidScheme = H2Error(code: .protocolError, reason: "invalid :scheme")
    public static let invalidPath = H2Error(code: .protocolError, reason: "empty or invalid :path")
    public static let invalidAuthority = H2Error(code: .protocolError, reason: "invalid :authority or host")
    public static let connectWithSchemeOrPath = H2Error(code: .protocolError, reason: "CONNECT with :scheme or :path")
    public static let connectWithoutAuthority = H2Error(code: .protocolError, reason: "CONNECT without :authority")
    public static let missingAuthority = H2Error(code: .protocolError, reason: "http(s) request without :authority or host")
    public static let protocolNotEnabled = H2Error(code: .protocolError, reason: ":protocol without SETTINGS_ENABLE_CONNECT_PROTOCOL")
    public static let protocolWithoutConnect = H2Error(code: .protocolError, reason: ":protocol on a method other than CONNECT")
    public static let invalidProtocol = H2Error(code: .protocolError, reason: ":protocol not a token")
    public static let hostMismatch = H2Error(code: .protocolError, reason: "host differs from :authority")
    public static let contentLengthWithEndStream = H2Error(code: .protocolError, reason: "non-zero content-length on a request without body")
}

/// Builds heads from decoded lists; holds scratch space reused per request.
struct RequestValidator {
    private var cookieCrumbs: [ByteSpan] = []
    let allowProtocol: Bool

    init(allowProtocol: Bool) {
        self.allowProtocol = allowProtocol
        cookieCrumbs.reserveCapacity(8)
    }

    /// Validates `list` as a request head (`trailers == false`) or a trailer
    /// section, and copies it into a head.
    mutating func build(_ list: HeaderList, trailers: Bool) throws(H2Error) -> H2RequestHead {
        cookieCrumbs.removeAll(keepingCapacity: true)
        var head = H2RequestHead()
        head.fields.reserveCapacity(list.count)
        var method: ByteSpan?, scheme: ByteSpan?, authority: ByteSpan?, path: ByteSpan?, proto: ByteSpan?
        var host: ByteSpan?
        var cookieIndex: Int?
        let result: H2Error? = list.bytes.withUnsafeBytes { all -> H2Error? in
            @inline(__always) func bytes(_ s: ByteSpan) -> UnsafeRawBufferPointer {
                UnsafeRawBufferPointer(rebasing: all[s.start ..< s.end])
            }
            var sawRegular = false
            for f in list.fields {
                let name = bytes(f.name)
                let value = bytes(f.value)
                if name.first == 0x3a {
                    if trailers { return .pseudoInTrailers }
                    if sawRegular { return .pseudoAfterRegular }
                    var target: ByteSpan?
                    switch name.count {
                    case 5 where FieldSyntax.equals(name, ":path"): target = path; path = f.value
                    case 7 where FieldSyntax.equals(name, ":method"): target = method; method = f.value
                    case 7 where FieldSyntax.equals(name, ":scheme"): target = scheme; scheme = f.value
                    case 10 where FieldSyntax.equals(name, ":authority"): target = authority; authority = f.value
                    case 9 where FieldSyntax.equals(name, ":protocol"): target = proto; proto = f.value
                    default: return .unknownPseudo
                    }
                    if target != nil { return .duplicatePseudo }
                    continue
                }
                sawRegular = true
                guard FieldSyntax.isFieldName(name) else { return .invalidFieldName }
                guard FieldSyntax.isFieldValue(value) else { return .invalidFieldValue }
                switch name.count {
                case 2 where FieldSyntax.equals(name, "te"):
                    guard FieldSyntax.equalsIgnoringCase(value, "trailers") else { return .teNotTrailers }
                case 4 where FieldSyntax.equals(name, "host"):
                    guard host == nil else { return .duplicateHost }
                    host = f.value
                case 6 where FieldSyntax.equals(name, "cookie"):
                    cookieCrumbs.append(f.value)
                    if cookieIndex != nil { continue }
                    cookieIndex = head.fields.count
                case 6 where !trailers && FieldSyntax.equals(name, "expect"):
                    // The expectation token is case-insensitive (RFC 9110 §10.1.1).
                    if FieldSyntax.equalsIgnoringCase(value, "100-continue") { head.expectsContinue = true }
                case 7 where FieldSyntax.equals(name, "upgrade"),
                     10 where FieldSyntax.equals(name, "connection") || FieldSyntax.equals(name, "keep-alive"),
                     16 where FieldSyntax.equals(name, "proxy-connection"),
                     17 where FieldSyntax.equals(name, "transfer-encoding"):
                    return .connectionSpecificField
                case 14 where !trailers && FieldSyntax.equals(name, "content-length"):
                    guard head.contentLength == nil else { return .repeatedContentLength }
                    guard let n = FieldSyntax.contentLength(value) else {
                        return value.contains(UInt8(ascii: ",")) ? .contentLengthList : .invalidContentLength
                    }
                    head.contentLength = n
                default:
                    break
                }
                head.fields.append(H2Field(name: f.name, value: f.value))
            }
            if trailers { return nil }

            guard let method else { return .missingMethod }
            guard FieldSyntax.isToken(bytes(method)) else { return .invalidMethod }
            let isConnect = FieldSyntax.equals(bytes(method), "CONNECT")
            if let proto {
                guard allowProtocol else { return .protocolNotEnabled }
                guard isConnect else { return .protocolWithoutConnect }
                guard FieldSyntax.isToken(bytes(proto)) else { return .invalidProtocol }
            }
            let plainConnect = isConnect && proto == nil
            if plainConnect {
                guard scheme == nil && path == nil else { return .connectWithSchemeOrPath }
                guard authority != nil else { return .connectWithoutAuthority }
            } else {
                guard let scheme, let path else { return .missingSchemeOrPath }
                guard FieldSyntax.isScheme(bytes(scheme)) else { return .invalidScheme }
                let options = FieldSyntax.equals(bytes(method), "OPTIONS")
                guard FieldSyntax.isPath(bytes(path), asterisk: options) else { return .invalidPath }
                if isConnect && authority == nil { return .connectWithoutAuthority }
                // §8.3.1: "http" and "https" have a mandatory authority component,
                // so such a request "MUST contain either an :authority
                // pseudo-header field or a Host header field".
                let web = FieldSyntax.equalsIgnoringCase(bytes(scheme), "http") || FieldSyntax.equalsIgnoringCase(bytes(scheme), "https")
                if web && authority == nil && host == nil { return .missingAuthority }
            }
            if let authority {
                guard FieldSyntax.isAuthority(bytes(authority), requirePort: plainConnect) else { return .invalidAuthority }
            }
            if let host {
                guard FieldSyntax.isAuthority(bytes(host), requirePort: false) else { return .invalidAuthority }
                if let authority, !FieldSyntax.equalsIgnoringCase(bytes(authority), bytes(host)) { return .hostMismatch }
            }
            return nil
        }
        if let result { throw result }
        head.method = method ?? .empty
        head.scheme = scheme ?? .empty
        head.path = path ?? .empty
        head.protocolName = proto ?? .empty
        head.authority = authority ?? host ?? .empty
        copyStorage(list, into: &head, cookieIndex: cookieIndex)
        return head
    }

    /// One allocation: the decoded bytes, then the joined cookie if there
    /// were several crumbs.
    private func copyStorage(_ list: HeaderList, into head: inout H2RequestHead, cookieIndex: Int?) {
        var extra = 0
        if cookieCrumbs.count > 1 {
            for c in cookieCrumbs { extra += c.count + 2 }
            extra -= 2
        }
        head.storage.reserveCapacity(list.bytes.count + extra)
        head.storage.append(contentsOf: list.bytes)
        guard let cookieIndex, cookieCrumbs.count > 1 else { return }
        let start = head.storage.count
        for (i, c) in cookieCrumbs.enumerated() {
            if i > 0 { head.storage.append(0x3b); head.storage.append(0x20) }
            head.storage.append(contentsOf: list.bytes[c.start ..< c.end])
        }
        head.fields[cookieIndex].value = ByteSpan(offset: start, length: head.storage.count - start)
    }
}
