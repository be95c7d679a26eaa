/// Finds the end of a request head in a buffer that grows between calls, and
/// tokenises the request line on the way.
///
/// Theory of operation. The scanner is a left-to-right machine whose state
/// (phase, position, the spans found) survives between calls, so each call
/// costs only the bytes that arrived since the last one. Every decision it
/// makes depends only on bytes before its position: when it would need a byte
/// past the end of the buffer it stops and reports `.needMore`, with its
/// state unchanged since the last completed step. Hence feeding a head in any
/// number of pieces reaches exactly the verdict of feeding it whole — the
/// property the tests and the fuzz target check.
///
///     leadingLines ──> method ──SP──> target ──SP──> version ──CR──> requestLineLF
///          │ CRLF ×≤8                (414 past                           │ LF
///          └─(loop)                   maxTargetBytes)                     v
///                                                      complete <──CRLF── fields ─┐
///                                                                           └─────┘ line CRLF
///
/// * Leading empty lines: RFC 9112 §2.2 "a server that is expecting to
///   receive and parse a request-line SHOULD ignore at least one empty line
///   (CRLF) received prior to the request-line". We ignore up to
///   `H1Limits.maxLeadingEmptyLines`.
/// * Request line (RFC 9112 §3): `method SP request-target SP HTTP-version
///   CRLF`, each part checked in one run (the target eight bytes a step)
///   that stops at its first other byte: method = token, target = 1*VCHAR (no CTL,
///   SP, DEL or obs-text), exactly one SP between parts. "Although the
///   request-line grammar rule requires that each of the component elements
///   be separated by a single SP octet, recipients MAY instead parse on
///   whitespace-delimited word boundaries" — we don't: lenient splitting is
///   how request-line smuggling starts. The target is measured as it arrives
///   so an over-long one is refused with 414 (RFC 9112 §3 "A server that
///   receives a request-target longer than any URI it wishes to parse MUST
///   respond with a 414") before the line ends.
/// * Field lines are not validated here, only delimited: each LF must follow
///   a CR (RFC 9112 §2.2: we do not accept a bare LF as a line terminator; a
///   bare CR inside a line is caught by the field parser as a CTL). An empty
///   line ends the head. Lines are counted against `maxHeaderCount` (431)
///   and the whole head against `maxHeadBytes` (431, RFC 6585 §5) as soon as
///   either is exceeded.
struct HeadScanner: Sendable {
    enum Phase: UInt8, Sendable { case leadingLines, method, target, version, requestLineLF, fields, complete }
    enum Step { case needMore, requestLineEnded, headEnded }

    private(set) var phase: Phase = .leadingLines
    /// Next byte to examine.
    private var position = 0
    private var leadingLines = 0
    private(set) var methodStart = 0
    private(set) var targetStart = 0
    private(set) var versionStart = 0
    private(set) var versionEnd = 0
    /// First byte after the request line's CRLF.
    private(set) var fieldsStart = 0
    private var lineStart = 0
    private var fieldLines = 0
    /// One past the LF of the empty line; valid in `.complete`.
    private(set) var headEnd = 0

    var method: Range<Int> { methodStart..<(targetStart - 1) }
    var target: Range<Int> { targetStart..<(versionStart - 1) }
    var version: Range<Int> { versionStart..<versionEnd }

    /// Advances over `b`, which must extend the buffer of the previous call.
    /// Stops after the request line so the caller can judge it before the
    /// rest of the head arrives.
    mutating func scan(_ b: Bytes, _ limits: H1Limits) throws(H1Error) -> Step {
        precondition(b.count >= position, "H1HeadParser.parse: buffer shrank; call reset() between requests")
        if phase == .complete { return .headEnded }
        let headLimit = limits.maxHeadBytes
        while phase != .fields {
            guard position < b.count else { return .needMore }
            guard position < headLimit else { throw .headTooLarge }
            let c = b[position]
            switch phase {
            case .leadingLines:
                if c == Byte.cr {
                    guard position + 1 < b.count else { return .needMore }
                    guard b[position + 1] == Byte.lf else { throw .bareCR }
                    leadingLines += 1
                    guard leadingLines <= H1Limits.maxLeadingEmptyLines else { throw .tooManyEmptyLines }
                    position += 2
                } else if c == Byte.lf {
                    throw .bareLF
                } else {
                    methodStart = position
                    phase = .method
                }
            case .method:
                // Each part runs to its first byte outside its class (or to
                // the end of the bytes, the head limit or its own limit)
                // in a tight loop, then that byte decides, exactly as a
                // byte-by-byte walk would.
                let stop = Swift.min(b.count, headLimit, methodStart + H1Limits.maxMethodBytes)
                var p = position
                while p < stop && ByteClassTable.has(b[p], ByteClassTable.tchar) { p += 1 }
                position = p
                guard p < b.count else { return .needMore }
                guard p < headLimit else { throw .headTooLarge }
                let d = b[p]
                if ByteClass.isTchar(d) { throw .methodTooLong }
                guard d == Byte.sp && p > methodStart else { throw .invalidMethod }
                position = p + 1
                targetStart = position
                phase = .target
            case .target:
                let stop = Swift.min(b.count, headLimit, targetStart + limits.maxTargetBytes)
                let p = Self.vcharRun(b, from: position, to: stop)
                position = p
                guard p < b.count else { return .needMore }
                guard p < headLimit else { throw .headTooLarge }
                let d = b[p]
                if ByteClass.isTargetByte(d) { throw .targetTooLong }
                guard d == Byte.sp else { throw .invalidTargetByte }
                guard p > targetStart else { throw .emptyTarget }
                position = p + 1
                versionStart = position
                phase = .version
            case .version:
                // Nearly every request says "HTTP/1.1" then CR: one word
                // compare decides what the loop below would, byte for byte.
                if position == versionStart && versionStart + 9 <= Swift.min(b.count, headLimit)
                    && b.load64(versionStart) == HeadScanner.http11 && b[versionStart + 8] == Byte.cr {
                    versionEnd = versionStart + 8
                    position = versionEnd + 1
                    phase = .requestLineLF
                    continue
                }
                let stop = Swift.min(b.count, headLimit, versionStart + 8)
                var p = position
                while p < stop && ByteClass.isTargetByte(b[p]) { p += 1 }
                position = p
                guard p < b.count else { return .needMore }
                guard p < headLimit else { throw .headTooLarge }
                let d = b[p]
                if d == Byte.lf { throw .bareLF }
                guard d == Byte.cr else { throw .malformedVersion }
                versionEnd = p
                position = p + 1
                phase = .requestLineLF
            case .requestLineLF:
                guard c == Byte.lf else { throw .bareCR }
                position += 1
                fieldsStart = position
                lineStart = position
                phase = .fields
                return .requestLineEnded
            case .fields, .complete:
                preconditionFailure("unreachable")
            }
        }
        return try scanFields(b, limits)
    }

    /// "HTTP/1.1" as a little-endian word, H first (RFC 9112 §2.3);
    /// `HeadScannerTests.testHTTP11WordIsTheVersionText` checks it.
    static let http11: UInt64 = 0x312E_312F_5054_5448

    /// The end of the run of VCHAR bytes from `start`, stopping at `end`:
    /// eight bytes a step (`Bytes.notVCHAR`) while a word fits, then byte by
    /// byte. Targets are the longest part of most request lines.
    @inline(__always)
    private static func vcharRun(_ b: Bytes, from start: Int, to end: Int) -> Int {
        var p = start
        while p + 8 <= end {
            let flags = Bytes.notVCHAR(b.load64(p))
            if flags != 0 { return p + flags.trailingZeroBitCount &>> 3 }
            p += 8
        }
        while p < end && ByteClass.isTargetByte(b[p]) { p += 1 }
        return p
    }

    private mutating func scanFields(_ b: Bytes, _ limits: H1Limits) throws(H1Error) -> Step {
        // A head ending at LF index i is i + 1 bytes long, so only LFs below
        // maxHeadBytes can end an acceptable head.
        let searchEnd = Swift.min(b.count, limits.maxHeadBytes)
        while let lf = b.firstIndex(of: Byte.lf, from: position, to: searchEnd) {
            guard lf > lineStart, b[lf - 1] == Byte.cr else { throw .bareLF }
            position = lf + 1
            if lf - 1 == lineStart {
                headEnd = position
                phase = .complete
                return .headEnded
            }
            fieldLines += 1
            guard fieldLines <= limits.maxHeaderCount else { throw .tooManyFields }
            lineStart = position
        }
        position = searchEnd
        if searchEnd == limits.maxHeadBytes && b.count > searchEnd { throw .headTooLarge }
        return .needMore
    }
}
