// CZlib: the raw-DEFLATE streams permessage-deflate (RFC 7692) needs, behind an
// opaque handle, so Swift never sees z_stream or <zlib.h> (whose system headers
// would clash with the same headers seen through Python.h, as for CSys).
#ifndef PEREGRINE_CZLIB_H
#define PEREGRINE_CZLIB_H

#include <stddef.h>
#include <stdint.h>

typedef struct czlib_stream czlib_stream;

// Results of czlib_run.
enum {
    CZLIB_OK = 0,          // progress made; call again if input or flush remains
    CZLIB_STREAM_END = 1,  // inflate: the DEFLATE stream ended (a BFINAL block)
    CZLIB_NO_PROGRESS = 2, // nothing could be done (needs input or output room)
    CZLIB_DATA_ERROR = -1, // inflate: the input is not DEFLATE data
    CZLIB_MEMORY = -2,     // allocation failed
};

// A raw DEFLATE compressor: window of 2^window_bits bytes (9..15), mem_level 1..9
// (hash table and pending buffer sizes), level 0..9 or -1 for zlib's default.
// NULL when zlib refuses the parameters or memory runs out.
czlib_stream *czlib_deflater_new(int level, int window_bits, int mem_level);
// A raw DEFLATE decompressor with a window of 2^window_bits bytes (8..15).
czlib_stream *czlib_inflater_new(int window_bits);
void czlib_free(czlib_stream *stream);

// One deflate() (with Z_SYNC_FLUSH when `flush`, else Z_NO_FLUSH) or inflate()
// (Z_SYNC_FLUSH) call over the given buffers; *in_used and *out_used receive
// the bytes consumed and produced.
int czlib_run(czlib_stream *stream, const uint8_t *in, size_t in_len, size_t *in_used,
              uint8_t *out, size_t out_len, size_t *out_used, int flush);

// Forgets the LZ77 window: the next message starts a fresh DEFLATE stream.
void czlib_reset(czlib_stream *stream);
// Inflate only: after CZLIB_STREAM_END, starts a new DEFLATE stream that may
// still refer back into the window the ended one left (RFC 7692 §7.2.3.4:
// a message ended with BFINAL, context takeover on). 0, or CZLIB_MEMORY.
int czlib_inflate_restart_keeping_window(czlib_stream *stream);

#endif
