import HTTP1

/// A connection's request-parsing state: the head parser and the chunked
/// body decoder (about 310 bytes). A connection holds one only while a
/// request arrives or is served; an idle keep-alive connection gives it back
/// to the worker's pool (see Worker.takeParsing), which is most of why an
/// idle connection costs well under a kilobyte.
final class H1RequestParsing {
    var head: H1HeadParser
    var chunked: H1ChunkedDecoder

    init(limits: H1Limits) {
        head = H1HeadParser(limits: limits)
        chunked = H1ChunkedDecoder(limits: limits)
    }
}
