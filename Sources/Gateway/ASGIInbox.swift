import CPython
import PyBridge

/// Messages made for an ASGI application and not yet received (a WebSocket
/// connection's, a WebTransport session's), with the bounds that stop the
/// transport reading: past `maxCount` messages or `maxBytes` of payload the
/// conversation pauses its reading, so a fast sender meets flow control
/// rather than our memory, and resumes once the application has taken
/// enough.
///
/// Each message is a new reference: an array of owners would need a
/// noncopyable collection, so they are released by hand (handed on by
/// `removeFirst`, or at `releaseAll`). Each keeps the payload size it was
/// counted with, so what is taken off is exactly what was put on (a text
/// message counts its UTF-8 bytes, which its `str` does not say).
struct ASGIInbox {
    private var messages: [(message: PyRef, bytes: Int)] = []
    private var bytes = 0
    /// Reading is paused: the bounds were reached and not yet left.
    private(set) var paused = false

    var isEmpty: Bool { messages.isEmpty }

    /// Queues `message` (a new reference, now the inbox's), counting
    /// `bytes` of payload.
    mutating func append(_ message: PyRef, bytes: Int) {
        messages.append((message, bytes))
        self.bytes += bytes
    }

    /// True once when the queue reaches `maxCount` messages or `maxBytes`:
    /// the caller pauses its reading then.
    mutating func pauseIfFull(maxCount: Int, maxBytes: Int) -> Bool {
        guard !paused, messages.count >= maxCount || bytes >= maxBytes else { return false }
        paused = true
        return true
    }

    /// The oldest message (a new reference, now the caller's) and whether
    /// reading, paused, may resume now that it is gone (the caller resumes
    /// it then).
    mutating func removeFirst(maxCount: Int, maxBytes: Int) -> (message: PyRef, resume: Bool)? {
        guard !messages.isEmpty else { return nil }
        let first = messages.removeFirst()
        bytes -= first.bytes
        let resume = paused && messages.count < maxCount && bytes < maxBytes
        if resume { paused = false }
        return (first.message, resume)
    }

    /// Releases every message still queued (the conversation is over).
    mutating func releaseAll() {
        for entry in messages { Py.decref(entry.message) }
        messages.removeAll()
        bytes = 0
    }
}
