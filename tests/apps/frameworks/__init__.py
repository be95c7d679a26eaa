"""One small application per framework, written as a user of that framework writes one, all answering the
same routes so tests/e2e/test_framework_matrix.py checks each of them over every protocol.

The contract (every path relative to the application's root):

- `GET /items/{item_id}?q=TEXT` (an integer path parameter): JSON `{"item_id": int, "q": TEXT or null}`;
- `POST /json` with `{"name": str, "numbers": [int]}`: JSON `{"name": name, "total": sum(numbers)}`;
- `POST /form` (urlencoded `name`, `colour`): JSON `{"name": ..., "colour": ...}`;
- `POST /upload` (multipart: a field `note`, a file `blob`): JSON `{"note", "filename", "size", "sha256"}`;
- `GET /stream?gate=NAME`: text streamed in two chunks, `first\n` then `released\n` once the file
  `$PEREGRINE_TEST_STATE/NAME` exists (the test creates it only after `first` arrived), or `timed out\n`
  after 10 seconds: the first chunk must leave the server before the last is produced;
- `GET /download?size=N`: N bytes (a multiple of 256) of `bytes(range(256))` repeated;
- `GET /teapot`: raises the application's own `TeapotError` exception, which the framework's error handler
  turns into 418 with JSON `{"error": "teapot"}`;
- `GET /started`: JSON `{"started": true}` once the framework's own startup hook ran (where it has one);
  its shutdown hook (where it has one) appends `shutdown` to `$PEREGRINE_TEST_STATE/events.log`;
- `GET /whoami`: JSON `{"url", "secure", "client", "link"}` as the framework reports them: the request's
  full URL, whether it counts the request as secure (https), the client's address, and the URL the
  framework builds for `/items/7` (which shows what `--root-path` does to its URL building);
- `GET /cookies/set`: sets the cookie `flavour=oatmeal`; `GET /cookies/get`: JSON `{"flavour": value}`;
- `GET /static/notes.txt`: the file tests/apps/frameworks/static/notes.txt, by the framework's own way of serving
  static files;
- websocket `/ws` (where the framework has WebSockets): echoes text as text and bytes as bytes.
"""
