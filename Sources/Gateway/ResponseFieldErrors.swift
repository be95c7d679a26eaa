import Exchanges
import PyBridge

/// Raises the ValueError for a response field the exchange's rules refuse
/// (both gateways: `context` is "start_response" for WSGI, the ASGI message type).
func raiseResponseFieldError(_ error: ResponseFieldError, context: String, name: PyRef, value: PyRef) {
    switch error {
    case .invalidName:
        Py.raise(Py.valueError, "\(context): invalid header name \(Py.describe(name))")
    case .controlCharacter:
        Py.raise(Py.valueError, "\(context): header \(Py.describe(name)) has a control character (CR, LF or NUL) in its value")
    case .invalidContentLength:
        Py.raise(Py.valueError, "\(context): invalid Content-Length \(Py.describe(value))")
    }
}
