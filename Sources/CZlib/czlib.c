#include "czlib.h"

#include <stdlib.h>
#include <zlib.h>

struct czlib_stream {
    z_stream z;
    int is_deflate;
};

czlib_stream *czlib_deflater_new(int level, int window_bits, int mem_level) {
    czlib_stream *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->is_deflate = 1;
    // Negative window bits: raw DEFLATE, no zlib header or checksum (RFC 7692 §4).
    if (deflateInit2(&s->z, level, Z_DEFLATED, -window_bits, mem_level, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(s);
        return NULL;
    }
    return s;
}

czlib_stream *czlib_inflater_new(int window_bits) {
    czlib_stream *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    if (inflateInit2(&s->z, -window_bits) != Z_OK) {
        free(s);
        return NULL;
    }
    return s;
}

void czlib_free(czlib_stream *s) {
    if (!s) return;
    if (s->is_deflate) deflateEnd(&s->z); else inflateEnd(&s->z);
    free(s);
}

int czlib_run(czlib_stream *s, const uint8_t *in, size_t in_len, size_t *in_used,
              uint8_t *out, size_t out_len, size_t *out_used, int flush) {
    // uInt is 32 bits: hand zlib at most 1 GiB per call; the caller loops.
    uInt in_n = in_len > (1u << 30) ? (1u << 30) : (uInt)in_len;
    uInt out_n = out_len > (1u << 30) ? (1u << 30) : (uInt)out_len;
    s->z.next_in = (Bytef *)in;
    s->z.avail_in = in_n;
    s->z.next_out = out;
    s->z.avail_out = out_n;
    int rc = s->is_deflate ? deflate(&s->z, flush ? Z_SYNC_FLUSH : Z_NO_FLUSH) : inflate(&s->z, Z_SYNC_FLUSH);
    *in_used = in_n - s->z.avail_in;
    *out_used = out_n - s->z.avail_out;
    s->z.next_in = Z_NULL;
    s->z.next_out = Z_NULL;
    switch (rc) {
    case Z_OK: return CZLIB_OK;
    case Z_STREAM_END: return CZLIB_STREAM_END;
    case Z_BUF_ERROR: return CZLIB_NO_PROGRESS;
    case Z_MEM_ERROR: return CZLIB_MEMORY;
    default: return CZLIB_DATA_ERROR;  // Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR
    }
}

void czlib_reset(czlib_stream *s) {
    if (s->is_deflate) deflateReset(&s->z); else inflateReset(&s->z);
}

int czlib_inflate_restart_keeping_window(czlib_stream *s) {
    // inflateReset drops the window; carry it over as a preset dictionary.
    uInt n = 0;
    inflateGetDictionary(&s->z, Z_NULL, &n);
    Bytef *window = NULL;
    if (n > 0) {
        window = malloc(n);
        if (!window) return CZLIB_MEMORY;
        inflateGetDictionary(&s->z, window, &n);
    }
    inflateReset(&s->z);
    // Raw inflate accepts a dictionary right after a reset.
    if (n > 0) inflateSetDictionary(&s->z, window, n);
    free(window);
    return 0;
}
