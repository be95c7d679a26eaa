/* openloop: a fixed-rate (open-loop) HTTP/1.1 latency client (see README.md). Shared declarations. */
#ifndef OPENLOOP_H
#define OPENLOOP_H

#include <stddef.h>
#include <stdint.h>

#include "../histogram/histogram.h"

/* Incremental HTTP/1.1 response parser (RFC 9112): status line, header fields, then a body framed by
 * Content-Length (§6.3 rule 6) or chunked transfer coding (§7.1). Interim 1xx responses are skipped (RFC 9110
 * §15.2). A response with neither framing on a kept-alive connection cannot be delimited, so it is an error here
 * (a benchmark of keep-alive servers), except 204 and 304, which have no body (§6.3 rule 1). */
enum response_state { R_HEAD, R_BODY, R_CHUNK_SIZE, R_CHUNK_DATA, R_CHUNK_CRLF, R_TRAILERS };

struct response {
    enum response_state state;
    int status;
    int close;          /* Connection: close seen */
    uint64_t remaining; /* body or chunk bytes still to come */
    int done_status;    /* of the response FEED_DONE last completed */
    int done_close;     /* whether it carried Connection: close */
};

enum feed_result {
    FEED_MORE = 0,      /* everything offered was consumed; the response is not complete */
    FEED_DONE = 1,      /* one response completed; *consumed says where the next begins */
    FEED_ERROR = -1,    /* malformed or unframed */
};

/* Feeds `len` bytes. Bytes of an incomplete line (status, header, chunk size, trailer) are not consumed: the
 * caller keeps them and offers them again with more. Returns FEED_DONE as soon as one response is complete
 * (the parser is then reset for the next), with *consumed the bytes it used. */
enum feed_result response_feed(struct response *r, const char *data, size_t len, size_t *consumed);
void response_reset(struct response *r);

#endif
