import Core
import Gateway
import Options

/// Writing a line from a compiled gunicorn format string
/// (`AccessLogTemplate`): literals as they are, atoms as gunicorn
/// (`glogging.py`) renders them, `-` for what is missing. Values are
/// escaped for a text line (`"` and `\` backslashed, control bytes as
/// `\xHH`): gunicorn escapes the quote; a forged line must be impossible.
extension AccessLog {
    func writeTemplate(_ template: AccessLogTemplate, _ e: Entry) {
        for part in template.parts {
            switch part {
            case .literal(let bytes): appendRaw(bytes)
            case .atom(let atom): append(atom, e)
            }
        }
    }

    private func append(_ atom: AccessLogTemplate.Atom, _ e: Entry) {
        let r = e.request
        switch atom {
        case .remoteAddress:
            if let client = r?.forwardedClient {
                appendText(client)
            } else if e.peer.isUnix || e.peer.remoteAddress.isEmpty {
                appendRaw("-")
            } else {
                appendText(e.peer.remoteAddress)
            }
        case .dash: appendRaw("-")
        case .user:
            guard let r, let k = fieldIndices.authorization, let user = r.with(r.requestFields[k], basicUser),
                  !user.isEmpty else { appendRaw("-"); return }
            user.withUnsafeBytes { appendValue($0) }
        case .time: appendTimeAtom()
        case .requestLine:
            guard let r else { appendRaw("-"); return }
            r.with(r.method) { appendValue($0) }
            appendRaw(" ")
            r.with(r.target) { appendValue($0) }
            appendRaw(" ")
            appendRaw(r.version)
        case .method: appendPart(r, r?.method)
        case .path:
            guard let r else { appendRaw("-"); return }
            r.with(r.path) { raw in
                let n = percentDecode(raw, into: &decodedScratch)
                decodedScratch.withUnsafeBytes { appendValue(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            }
        case .query:
            guard let r else { appendRaw("-"); return }
            r.with(r.query) { appendValue($0) }
        case .proto:
            if let r { appendRaw(r.version) } else { appendRaw("-") }
        case .status: appendDecimal(Int64(e.status))
        case .bytes: appendDecimal(e.bytes)
        case .referer: appendField(r, fieldIndices.referer)
        case .userAgent: appendField(r, fieldIndices.userAgent)
        case .seconds: appendDuration(e) { appendDecimal($0 / 1_000_000_000) }
        case .microseconds: appendDuration(e) { appendDecimal($0 / 1000) }
        case .milliseconds: appendDuration(e) { appendDecimal($0 / 1_000_000) }
        case .decimalSeconds:
            appendDuration(e) { ns in
                appendDecimal(ns / 1_000_000_000)
                appendRaw(".")
                appendDecimal(ns % 1_000_000_000 / 1000, width: 6)
            }
        case .pid:
            appendRaw("<")
            appendDecimal(pidValue)
            appendRaw(">")
        case .requestField(_, let k): appendField(r, k)
        case .responseField(_, let k):
            guard let r, k < r.responseFields.count, let range = r.responseFields[k] else { appendRaw("-"); return }
            r.with(range) { appendValue($0) }
        }
    }

    private func appendPart(_ r: RequestLine?, _ range: Range<Int>?) {
        guard let r, let range else { appendRaw("-"); return }
        r.with(range) { appendValue($0) }
    }

    private func appendField(_ r: RequestLine?, _ k: Int?) {
        guard let r, let k, let range = r.requestFields[k] else { appendRaw("-"); return }
        r.with(range) { appendValue($0) }
    }

    private func appendDuration(_ e: Entry, _ body: (Int64) -> Void) {
        if let ns = e.nanoseconds { body(ns) } else { appendRaw("-") }
    }

    /// The user name of `Authorization: Basic <base64(user:password)>`
    /// (RFC 7617 §2), as gunicorn's `%(u)s`.
    private func basicUser(_ value: UnsafeRawBufferPointer) -> [UInt8]? {
        guard value.count > 6, UnsafeRawBufferPointer(rebasing: value[0..<6]).equalsIgnoringASCIICase("basic ") else {
            return nil
        }
        var out: [UInt8] = []
        var acc: UInt32 = 0
        var bits = 0
        for c in value[6...] {
            let v: UInt32
            switch c {
            case 0x41...0x5A: v = UInt32(c - 0x41)
            case 0x61...0x7A: v = UInt32(c - 0x61 + 26)
            case 0x30...0x39: v = UInt32(c - 0x30 + 52)
            case UInt8(ascii: "+"): v = 62
            case UInt8(ascii: "/"): v = 63
            case UInt8(ascii: "="), UInt8(ascii: " "): continue
            default: return nil
            }
            acc = (acc << 6 | v) & 0xFFFFFF
            bits += 6
            if bits >= 8 {
                bits -= 8
                let byte = UInt8(truncatingIfNeeded: acc >> UInt32(bits))
                if byte == UInt8(ascii: ":") { return out }
                out.append(byte)
            }
        }
        return out
    }
}
