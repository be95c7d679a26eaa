/* Incremental HTTP/1.1 response parser (openloop.h). RFC 9112: status line §4, fields §5, message body length
 * §6.3, chunked transfer coding §7.1. Commits only whole lines: a partial line is left for the caller to offer
 * again with the bytes that follow it. */
#define _GNU_SOURCE
#include <string.h>
#include <strings.h>

#include "openloop.h"

void response_reset(struct response *r) {
    memset(r, 0, sizeof(*r));
}

static enum feed_result finish(struct response *r, size_t at, size_t *consumed) {
    int status = r->status, close = r->close;
    response_reset(r);
    r->done_status = status;
    r->done_close = close;
    *consumed = at;
    return FEED_DONE;
}

/* The line ending at the first CRLF of [p, p + len): its length without the CRLF, or -1 if there is none yet. */
static long line_length(const char *p, size_t len) {
    const char *lf = memchr(p, '\n', len);
    if (lf == NULL || lf == p || lf[-1] != '\r') {
        return lf == NULL ? -1 : -2; /* -2: a bare LF, which this client does not accept */
    }
    return (long)(lf - p) - 1;
}

/* Whether the field value [v, v + n) lists `token` (comma-separated, case-insensitive; RFC 9110 §5.6.1). */
static int lists_token(const char *v, size_t n, const char *token) {
    size_t t = strlen(token);
    for (size_t i = 0; i + t <= n; i++) {
        int starts = i == 0 || v[i - 1] == ',' || v[i - 1] == ' ' || v[i - 1] == '\t';
        int ends = i + t == n || v[i + t] == ',' || v[i + t] == ' ' || v[i + t] == '\t' || v[i + t] == ';';
        if (starts && ends && strncasecmp(v + i, token, t) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Parses a complete head (status line and fields, the empty line excluded) of `len` bytes. */
static enum feed_result parse_head(struct response *r, const char *p, size_t len) {
    /* status-line = HTTP-version SP status-code SP [ reason-phrase ] (RFC 9112 §4) */
    if (len < 12 || memcmp(p, "HTTP/1.", 7) != 0 || p[7] < '0' || p[7] > '9' || p[8] != ' ' ||
        (len > 12 && p[12] != ' ' && p[12] != '\r')) {
        return FEED_ERROR;
    }
    int status = 0;
    for (int i = 9; i < 12; i++) {
        if (p[i] < '0' || p[i] > '9') {
            return FEED_ERROR;
        }
        status = status * 10 + (p[i] - '0');
    }
    r->status = status;
    int chunked = 0, has_length = 0;
    uint64_t length = 0;
    const char *line = memchr(p, '\n', len);
    while (line != NULL && (size_t)(line + 1 - p) < len) {
        const char *start = line + 1;
        const char *end = memchr(start, '\n', len - (size_t)(start - p));
        size_t n = (end != NULL ? (size_t)(end - start) : len - (size_t)(start - p));
        if (end != NULL && n > 0 && start[n - 1] == '\r') {
            n--;
        }
        const char *colon = memchr(start, ':', n);
        if (colon == NULL) {
            return FEED_ERROR;
        }
        size_t name = (size_t)(colon - start);
        const char *v = colon + 1;
        size_t vn = n - name - 1;
        while (vn > 0 && (*v == ' ' || *v == '\t')) {
            v++, vn--;
        }
        while (vn > 0 && (v[vn - 1] == ' ' || v[vn - 1] == '\t')) {
            vn--;
        }
        if (name == 14 && strncasecmp(start, "content-length", 14) == 0) {
            if (vn == 0 || has_length) {
                return FEED_ERROR; /* §6.3 rule 5: an invalid or repeated length is unrecoverable here */
            }
            for (size_t i = 0; i < vn; i++) {
                if (v[i] < '0' || v[i] > '9' || length > (UINT64_MAX - 9) / 10) {
                    return FEED_ERROR;
                }
                length = length * 10 + (uint64_t)(v[i] - '0');
            }
            has_length = 1;
        } else if (name == 17 && strncasecmp(start, "transfer-encoding", 17) == 0) {
            chunked = lists_token(v, vn, "chunked");
        } else if (name == 10 && strncasecmp(start, "connection", 10) == 0) {
            r->close |= lists_token(v, vn, "close");
        }
        line = end;
    }
    if (status >= 100 && status < 200) {
        return FEED_MORE; /* interim: the final response follows */
    }
    if (status == 204 || status == 304) {
        return FEED_DONE;
    }
    if (chunked) {
        r->state = R_CHUNK_SIZE; /* §6.3 rule 4: chunked wins over any Content-Length */
        return FEED_MORE;
    }
    if (!has_length) {
        return FEED_ERROR; /* delimited by the connection's close: not a keep-alive response */
    }
    r->remaining = length;
    r->state = R_BODY;
    return length == 0 ? FEED_DONE : FEED_MORE;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

enum feed_result response_feed(struct response *r, const char *data, size_t len, size_t *consumed) {
    size_t at = 0;
    for (;;) {
        const char *p = data + at;
        size_t left = len - at;
        switch (r->state) {
        case R_HEAD: {
            const char *end = left >= 4 ? memmem(p, left, "\r\n\r\n", 4) : NULL;
            if (end == NULL) {
                *consumed = at;
                return FEED_MORE;
            }
            size_t head = (size_t)(end - p);
            int was_close = r->close;
            enum feed_result got = parse_head(r, p, head);
            at += head + 4;
            if (got == FEED_ERROR) {
                *consumed = at;
                return FEED_ERROR;
            }
            if (got == FEED_DONE) {
                return finish(r, at, consumed);
            }
            if (r->state == R_HEAD) { /* a 1xx: its fields are not the final response's */
                r->close = was_close;
            }
            continue;
        }
        case R_BODY:
        case R_CHUNK_DATA: {
            uint64_t take = left < r->remaining ? left : r->remaining;
            at += (size_t)take;
            r->remaining -= take;
            if (r->remaining > 0) {
                *consumed = at;
                return FEED_MORE;
            }
            if (r->state == R_CHUNK_DATA) {
                r->state = R_CHUNK_CRLF;
                continue;
            }
            return finish(r, at, consumed);
        }
        case R_CHUNK_CRLF:
            if (left < 2) {
                *consumed = at;
                return FEED_MORE;
            }
            if (p[0] != '\r' || p[1] != '\n') {
                *consumed = at;
                return FEED_ERROR;
            }
            at += 2;
            r->state = R_CHUNK_SIZE;
            continue;
        case R_CHUNK_SIZE:
        case R_TRAILERS: {
            long n = line_length(p, left);
            if (n == -1) {
                *consumed = at;
                return FEED_MORE;
            }
            if (n < 0) {
                *consumed = at;
                return FEED_ERROR;
            }
            at += (size_t)n + 2;
            if (r->state == R_TRAILERS) {
                if (n == 0) { /* the empty line that ends the trailer section (§7.1.2) */
                    return finish(r, at, consumed);
                }
                continue;
            }
            /* chunk-size [ chunk-ext ] (§7.1, §7.1.1) */
            uint64_t size = 0;
            long i = 0;
            for (; i < n && hex_value(p[i]) >= 0; i++) {
                if (size >> 60) {
                    *consumed = at;
                    return FEED_ERROR;
                }
                size = size * 16 + (uint64_t)hex_value(p[i]);
            }
            if (i == 0 || (i < n && p[i] != ';' && p[i] != ' ' && p[i] != '\t')) {
                *consumed = at;
                return FEED_ERROR;
            }
            r->remaining = size;
            r->state = size == 0 ? R_TRAILERS : R_CHUNK_DATA;
            continue;
        }
        }
    }
}
