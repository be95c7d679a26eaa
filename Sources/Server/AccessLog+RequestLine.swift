import Core
import Gateway
import Options

extension AccessLog {
    /// What the line needs of the request, copied before the request's
    /// bytes are released: the request line's parts, the fields the format
    /// reads, the id, then (when the response head is sent) the response
    /// fields the format reads. One byte array holds them all. A class:
    /// every connection and stream holds an optional one, and a reference
    /// keeps that slot at 8 bytes when logging is off.
    final class RequestLine {
        private(set) var bytes: [UInt8] = []
        private(set) var method = 0..<0
        private(set) var target = 0..<0
        private(set) var path = 0..<0
        private(set) var query = 0..<0
        let version: StaticString
        /// The client a trusted proxy named (nil: the socket peer).
        let forwardedClient: String?
        let forwardedPort: Int?
        private(set) var requestID: Range<Int>?
        /// Values of `AccessLogTemplate.requestFieldNames`, in that order
        /// (nil: the request had no such field).
        private(set) var requestFields: [Range<Int>?] = []
        /// Values of `AccessLogTemplate.responseFieldNames`, once the
        /// response head was sent.
        private(set) var responseFields: [Range<Int>?] = []

        init(_ r: GatewayRequest, requestFieldNames: [[UInt8]] = []) {
            version = r.httpVersion
            switch r.forwarded?.client {
            case .address(let address, let port)?:
                forwardedClient = address.description
                forwardedPort = port.map { Int($0) }
            case .unknown?:
                forwardedClient = "unknown"
                forwardedPort = nil
            case .obfuscated(let identifier)?:
                forwardedClient = identifier.description
                forwardedPort = nil
            case nil:
                forwardedClient = nil
                forwardedPort = nil
            }
            bytes.reserveCapacity(r.method.count + r.target.count + r.path.count + r.query.count + 64)
            method = keep(r.bytes(r.method))
            target = keep(r.bytes(r.target))
            path = keep(r.bytes(r.path))
            query = keep(r.bytes(r.query))
            if let id = r.requestID { requestID = id.value.withUnsafeBytes { keep($0) } }
            if !requestFieldNames.isEmpty {
                requestFields = Array(repeating: nil, count: requestFieldNames.count)
                for i in 0..<r.fieldCount {
                    let name = r.bytes(r.fields[i].name)
                    for (k, wanted) in requestFieldNames.enumerated() where requestFields[k] == nil {
                        if wanted.withUnsafeBytes({ name.equalsIgnoringASCIICase($0) }) {
                            requestFields[k] = keep(r.bytes(r.fields[i].value))
                        }
                    }
                }
            }
        }

        /// The response head is going out: keep the fields `{name}o` atoms
        /// read (the first of each name). `content-length` is the framed
        /// length (the application's own field is not passed on).
        func captureResponse(_ fields: UnsafeBufferPointer<ResponseField>, contentLength: Int64?, names: [[UInt8]],
                             requestID id: RequestID?) {
            guard !names.isEmpty else { return }
            responseFields = Array(repeating: nil, count: names.count)
            for (k, wanted) in names.enumerated() {
                wanted.withUnsafeBytes { wanted in
                    for f in fields where f.name.equalsIgnoringASCIICase(wanted) {
                        responseFields[k] = keep(f.value)
                        return
                    }
                    if let id, id.lowerName.withUnsafeBytes({ wanted.equalsIgnoringASCIICase($0) }) {
                        responseFields[k] = id.value.withUnsafeBytes { keep($0) }
                    } else if let contentLength, wanted.equalsIgnoringASCIICase("content-length") {
                        var digits: [UInt8] = []
                        digits.appendDecimal(contentLength)
                        responseFields[k] = digits.withUnsafeBytes { keep($0) }
                    }
                }
            }
        }

        private func keep(_ b: UnsafeRawBufferPointer) -> Range<Int> {
            let start = bytes.count
            bytes.append(contentsOf: b)
            return start..<bytes.count
        }

        /// Runs `body` over the bytes of `range` (empty for nil).
        func with<R>(_ range: Range<Int>?, _ body: (UnsafeRawBufferPointer) -> R) -> R {
            bytes.withUnsafeBytes { all in
                body(range.map { UnsafeRawBufferPointer(rebasing: all[$0]) } ?? UnsafeRawBufferPointer(start: nil, count: 0))
            }
        }
    }
}
