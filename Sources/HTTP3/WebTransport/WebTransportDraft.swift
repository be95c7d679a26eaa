// The two wire drafts of WebTransport over HTTP/3 a server speaks at once:
// each session's CONNECT names one by its `:protocol`, and the client's
// SETTINGS must allow it (draft-ietf-webtrans-http3 §3.1, §3.2, §7.1;
// draft-02 §3.1, §3.3, §6).

/// Which WebTransport draft a session speaks.
public enum WebTransportDraft: Sendable, Equatable {
    /// draft-ietf-webtrans-http3-02: `:protocol webtransport`,
    /// SETTINGS_ENABLE_WEBTRANSPORT, no flow control, no drain capsule.
    case draft02
    /// The current draft: `:protocol webtransport-h3`, SETTINGS_WT_ENABLED,
    /// session flow control, WT_DRAIN_SESSION.
    case h3

    /// The draft a `:protocol` value asks for, if it is a WebTransport one.
    public static func requested(byProtocol name: UnsafeRawBufferPointer) -> WebTransportDraft? {
        if name.elementsEqual("webtransport".utf8) { return .draft02 }
        if name.elementsEqual("webtransport-h3".utf8) { return .h3 }
        return nil
    }
}
