// UDP for QUIC (see csys_udp.h).
#define _GNU_SOURCE
#include "csys_udp.h"

#include <errno.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef SO_ATTACH_REUSEPORT_CBPF
#define SO_ATTACH_REUSEPORT_CBPF 51
#endif

// Asked of the kernel for each socket; it caps the request at
// net.core.rmem_max / wmem_max unless the process may force more. A
// burst of Initials from many clients, or one fast upload, fills the
// default (about 200 KiB) in well under a millisecond.
#define UDP_BUFFER_BYTES (4 << 20)
#define BATCH_MAX 1024

#ifndef SOL_UDP
#define SOL_UDP 17
#endif
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

// The most datagrams in one UDP_SEGMENT send: the kernel's UDP_MAX_SEGMENTS
// (64 in older kernels, 128 in newer ones), above which the send fails (EINVAL).
#define SEGMENTS_MAX 64
// The most bytes in one: an IPv4 datagram's payload is at most 65,507
// (65,535 less the IP and UDP headers); kept below for IP options.
#define SEGMENTED_BYTES_MAX 65000

// Room for one IPV6_PKTINFO and one IP_PKTINFO control message (a
// dual-stack socket may deliver either for an IPv4 datagram), a UDP_GRO one
// and the ECN field (IP_TOS or IPV6_TCLASS, at most an int each) on
// receive; a send uses one packet info, a UDP_SEGMENT (uint16_t) and one
// traffic class (int).
#define CONTROL_BYTES \
    (CMSG_SPACE(sizeof(struct in6_pktinfo)) + CMSG_SPACE(sizeof(struct in_pktinfo)) + 3 * CMSG_SPACE(sizeof(int)))
// The ECN field: the two low bits of the TOS / traffic class byte (RFC 3168 §5).
#define ECN_MASK 0x3

struct csys_udp_batch {
    int capacity;
    int segmentation;            // send runs with UDP_SEGMENT
    uint64_t segmented_runs;
    uint64_t segmented_datagrams;
    csys_datagram *entries;
    struct mmsghdr *messages;
    int *message_entries;        // on send: the entries message i carries
    struct iovec *iovecs;        // on send, a message's run has consecutive ones
    struct sockaddr_in6 *names;  // large enough for sockaddr_in too
    unsigned char *control;      // capacity * CONTROL_BYTES
};

csys_udp_batch *csys_udp_batch_create(int capacity) {
    if (capacity < 1 || capacity > BATCH_MAX) { errno = EINVAL; return NULL; }
    csys_udp_batch *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->capacity = capacity;
    b->entries = calloc((size_t)capacity, sizeof *b->entries);
    b->messages = calloc((size_t)capacity, sizeof *b->messages);
    b->message_entries = calloc((size_t)capacity, sizeof *b->message_entries);
    b->iovecs = calloc((size_t)capacity, sizeof *b->iovecs);
    b->names = calloc((size_t)capacity, sizeof *b->names);
    b->control = calloc((size_t)capacity, CONTROL_BYTES);
    if (!b->entries || !b->messages || !b->message_entries || !b->iovecs || !b->names || !b->control) {
        csys_udp_batch_destroy(b);
        errno = ENOMEM;
        return NULL;
    }
    return b;
}

void csys_udp_batch_destroy(csys_udp_batch *b) {
    if (!b) return;
    free(b->entries);
    free(b->messages);
    free(b->message_entries);
    free(b->iovecs);
    free(b->names);
    free(b->control);
    free(b);
}

csys_datagram *csys_udp_batch_entries(csys_udp_batch *b) { return b->entries; }
int csys_udp_batch_capacity(const csys_udp_batch *b) { return b->capacity; }
void csys_udp_batch_set_segmentation(csys_udp_batch *b, int on) { b->segmentation = on ? 1 : 0; }
int csys_udp_batch_segmentation(const csys_udp_batch *b) { return b->segmentation; }

void csys_udp_batch_segmentation_counts(const csys_udp_batch *b, uint64_t *runs, uint64_t *datagrams) {
    *runs = b->segmented_runs;
    *datagrams = b->segmented_datagrams;
}

// MARK: - Addresses

static const unsigned char v4_mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

// An IPv6 address that is IPv4-mapped becomes IPv4: one client, one form.
static void endpoint_from_v6(csys_ip_endpoint *e, const struct in6_addr *a, uint16_t port_net, uint32_t scope) {
    memset(e, 0, sizeof *e);
    e->port = ntohs(port_net);
    if (memcmp(a->s6_addr, v4_mapped_prefix, 12) == 0) {
        e->family = 4;
        memcpy(e->addr, a->s6_addr + 12, 4);
        e->scope_id = scope;
    } else {
        e->family = 6;
        memcpy(e->addr, a->s6_addr, 16);
        e->scope_id = scope;
    }
}

static void endpoint_from_v4(csys_ip_endpoint *e, const struct in_addr *a, uint16_t port_net, uint32_t ifindex) {
    memset(e, 0, sizeof *e);
    e->family = 4;
    e->port = ntohs(port_net);
    e->scope_id = ifindex;
    memcpy(e->addr, &a->s_addr, 4);
}

static void endpoint_from_sockaddr(csys_ip_endpoint *e, const struct sockaddr_in6 *name) {
    if (name->sin6_family == AF_INET6) {
        endpoint_from_v6(e, &name->sin6_addr, name->sin6_port, name->sin6_scope_id);
    } else if (name->sin6_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)name;
        endpoint_from_v4(e, &sin->sin_addr, sin->sin_port, 0);
    } else {
        memset(e, 0, sizeof *e);
    }
}

// The peer as the socket's family wants it; 0 if it cannot be reached
// from such a socket (an IPv6 peer on an IPv4 socket).
static socklen_t sockaddr_from_endpoint(struct sockaddr_in6 *out, const csys_ip_endpoint *e, int socket_family) {
    memset(out, 0, sizeof *out);
    if (socket_family == 4) {
        if (e->family != 4) return 0;
        struct sockaddr_in *sin = (struct sockaddr_in *)out;
        sin->sin_family = AF_INET;
        sin->sin_port = htons(e->port);
        memcpy(&sin->sin_addr.s_addr, e->addr, 4);
        return sizeof *sin;
    }
    out->sin6_family = AF_INET6;
    out->sin6_port = htons(e->port);
    if (e->family == 4) {
        memcpy(out->sin6_addr.s6_addr, v4_mapped_prefix, 12);
        memcpy(out->sin6_addr.s6_addr + 12, e->addr, 4);
    } else if (e->family == 6) {
        memcpy(out->sin6_addr.s6_addr, e->addr, 16);
        out->sin6_scope_id = e->scope_id;
    } else {
        return 0;
    }
    return sizeof *out;
}

static int all_zero(const uint8_t *p, int n) {
    for (int i = 0; i < n; i++) if (p[i]) return 0;
    return 1;
}

// The source address for a datagram, as a control message; 0 bytes when
// the kernel may choose (no local address known). IPv4: the address only
// (ipi_spec_dst), no interface, so a reply follows the routing table even
// when the request came in on another interface. IPv6: the interface only
// for a link-local source, which needs it.
static size_t control_from_local(unsigned char *buffer, const csys_ip_endpoint *local, int socket_family) {
    if (local->family == 0) return 0;
    int bytes = local->family == 4 ? 4 : 16;
    if (all_zero(local->addr, bytes)) return 0;
    struct msghdr m;
    memset(&m, 0, sizeof m);
    m.msg_control = buffer;
    if (socket_family == 4) {
        if (local->family != 4) return 0;
        m.msg_controllen = CMSG_SPACE(sizeof(struct in_pktinfo));
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = IPPROTO_IP;
        c->cmsg_type = IP_PKTINFO;
        c->cmsg_len = CMSG_LEN(sizeof(struct in_pktinfo));
        struct in_pktinfo info;
        memset(&info, 0, sizeof info);
        memcpy(&info.ipi_spec_dst.s_addr, local->addr, 4);
        memcpy(CMSG_DATA(c), &info, sizeof info);
        return m.msg_controllen;
    }
    m.msg_controllen = CMSG_SPACE(sizeof(struct in6_pktinfo));
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = IPPROTO_IPV6;
    c->cmsg_type = IPV6_PKTINFO;
    c->cmsg_len = CMSG_LEN(sizeof(struct in6_pktinfo));
    struct in6_pktinfo info;
    memset(&info, 0, sizeof info);
    if (local->family == 4) {
        memcpy(info.ipi6_addr.s6_addr, v4_mapped_prefix, 12);
        memcpy(info.ipi6_addr.s6_addr + 12, local->addr, 4);
    } else {
        memcpy(info.ipi6_addr.s6_addr, local->addr, 16);
        if (local->addr[0] == 0xfe && (local->addr[1] & 0xc0) == 0x80) info.ipi6_ifindex = local->scope_id;
    }
    memcpy(CMSG_DATA(c), &info, sizeof info);
    return m.msg_controllen;
}

// A UDP_SEGMENT control message at `buffer` (after `used` bytes of packet
// info): the kernel cuts the message's payload into datagrams of `size`.
static size_t control_add_segment(unsigned char *buffer, size_t used, uint16_t size) {
    struct cmsghdr *c = (struct cmsghdr *)(buffer + used);
    memset(c, 0, CMSG_SPACE(sizeof size));
    c->cmsg_level = SOL_UDP;
    c->cmsg_type = UDP_SEGMENT;
    c->cmsg_len = CMSG_LEN(sizeof size);
    memcpy(CMSG_DATA(c), &size, sizeof size);
    return used + CMSG_SPACE(sizeof size);
}

// The ECN codepoint as a control message at `buffer` (after `used` bytes):
// IP_TOS for an IPv4 peer (also through a dual-stack socket, whose IPv4
// path reads only IPPROTO_IP messages), IPV6_TCLASS for an IPv6 one. The
// other bits of the byte (DSCP) stay 0, the socket's default.
static size_t control_add_ecn(unsigned char *buffer, size_t used, const csys_ip_endpoint *peer, uint8_t ecn) {
    int value = ecn & ECN_MASK;
    struct cmsghdr *c = (struct cmsghdr *)(buffer + used);
    memset(c, 0, CMSG_SPACE(sizeof value));
    c->cmsg_level = peer->family == 4 ? IPPROTO_IP : IPPROTO_IPV6;
    c->cmsg_type = peer->family == 4 ? IP_TOS : IPV6_TCLASS;
    c->cmsg_len = CMSG_LEN(sizeof value);
    memcpy(CMSG_DATA(c), &value, sizeof value);
    return used + CMSG_SPACE(sizeof value);
}

// The destination of a received datagram, from its packet info, the
// segment size of a coalesced one (UDP_GRO; 0 when it is one datagram) and
// its ECN field (IP_TOS: one byte; IPV6_TCLASS: an int).
static void local_from_control(csys_ip_endpoint *local, uint32_t *segment_size, uint8_t *ecn, struct msghdr *m, int port) {
    memset(local, 0, sizeof *local);
    *segment_size = 0;
    *ecn = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
        if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
            struct in6_pktinfo info;
            memcpy(&info, CMSG_DATA(c), sizeof info);
            endpoint_from_v6(local, &info.ipi6_addr, htons((uint16_t)port), (uint32_t)info.ipi6_ifindex);
        } else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
            struct in_pktinfo info;
            memcpy(&info, CMSG_DATA(c), sizeof info);
            endpoint_from_v4(local, &info.ipi_addr, htons((uint16_t)port), (uint32_t)info.ipi_ifindex);
        } else if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
            int size;
            memcpy(&size, CMSG_DATA(c), sizeof size);
            *segment_size = size > 0 ? (uint32_t)size : 0;
        } else if (c->cmsg_level == IPPROTO_IP && (c->cmsg_type == IP_TOS || c->cmsg_type == IP_RECVTOS)) {
            unsigned char tos;
            memcpy(&tos, CMSG_DATA(c), 1);
            *ecn = tos & ECN_MASK;
        } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
            int tclass;
            memcpy(&tclass, CMSG_DATA(c), sizeof tclass);
            *ecn = (uint8_t)(tclass & ECN_MASK);
        }
    }
}

// MARK: - Sockets

static void set_error(char *err, size_t errlen, const char *what, int code) {
    if (err && errlen) snprintf(err, errlen, "%s: %s", what, strerror(code));
}

static void raise_buffer(int fd, int force_option, int option) {
    int bytes = UDP_BUFFER_BYTES;
    // Forcing needs CAP_NET_ADMIN; without it, the capped request.
    if (setsockopt(fd, SOL_SOCKET, force_option, &bytes, sizeof bytes) != 0) {
        setsockopt(fd, SOL_SOCKET, option, &bytes, sizeof bytes);
    }
}

// One socket of the group, bound; -1 with errno.
static int bind_one(const struct sockaddr_in6 *address, socklen_t length, int v6only, int reuseport) {
    int family = address->sin6_family;
    int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
    if (fd < 0) return -1;
    int one = 1;
    if (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) goto fail;
    // Don't fragment (RFC 9000 §14): a datagram over the path MTU fails
    // with EMSGSIZE instead; PROBE ignores the kernel's cached path MTU,
    // which QUIC's own probing governs.
    int probe = IP_PMTUDISC_PROBE;
    if (family == AF_INET6) {
        if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only) != 0) goto fail;
        if (setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one) != 0) goto fail;
        // ECN of received datagrams (RFC 9000 §13.4.1); without it no
        // counts are reported, which the peer's validation tolerates.
        setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof one);
        int probe6 = IPV6_PMTUDISC_PROBE;
        setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &probe6, sizeof probe6);
        if (!v6only) {
            // IPv4 datagrams of a dual-stack socket.
            setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
            setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one);
            setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &probe, sizeof probe);
        }
    } else {
        if (setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one) != 0) goto fail;
        setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one);
        setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &probe, sizeof probe);
    }
    raise_buffer(fd, SO_RCVBUFFORCE, SO_RCVBUF);
    raise_buffer(fd, SO_SNDBUFFORCE, SO_SNDBUF);
    if (bind(fd, (const struct sockaddr *)address, length) != 0) goto fail;
    return fd;
fail:;
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
}

int csys_udp_bind_group(int like_fd, int port, int count, int *fds, char *err, size_t errlen) {
    if (count < 1 || count > 65536) {
        set_error(err, errlen, "UDP sockets", EINVAL);
        errno = EINVAL;
        return -1;
    }
    struct sockaddr_in6 address;
    socklen_t length = sizeof address;
    memset(&address, 0, sizeof address);
    if (getsockname(like_fd, (struct sockaddr *)&address, &length) != 0) {
        set_error(err, errlen, "getsockname", errno);
        return -1;
    }
    int v6only = 0;
    if (address.sin6_family == AF_INET6) {
        socklen_t l = sizeof v6only;
        getsockopt(like_fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &l);
        address.sin6_port = htons((uint16_t)port);
    } else if (address.sin6_family == AF_INET) {
        ((struct sockaddr_in *)&address)->sin_port = htons((uint16_t)port);
    } else {
        set_error(err, errlen, "UDP beside a listener that is not IP", EAFNOSUPPORT);
        errno = EAFNOSUPPORT;
        return -1;
    }
    // A probe without SO_REUSEPORT first: it fails if anyone holds the
    // port, even another process's SO_REUSEPORT group, which our sockets
    // would otherwise join (same user) and share datagrams with. It also
    // picks the port for `port` 0.
    int probe = bind_one(&address, length, v6only, 0);
    if (probe < 0) {
        set_error(err, errlen, "bind", errno);
        return -1;
    }
    struct sockaddr_in6 bound;
    socklen_t bound_length = sizeof bound;
    getsockname(probe, (struct sockaddr *)&bound, &bound_length);
    close(probe);
    for (int i = 0; i < count; i++) {
        fds[i] = bind_one(&bound, bound_length, v6only, 1);
        if (fds[i] < 0) {
            int saved = errno;
            for (int j = 0; j < i; j++) close(fds[j]);
            set_error(err, errlen, "bind", saved);
            errno = saved;
            return -1;
        }
    }
    return ntohs(bound.sin6_port);  // sin_port sits at the same offset
}

int csys_udp_family(int fd) {
    struct sockaddr_in6 address;
    socklen_t length = sizeof address;
    if (getsockname(fd, (struct sockaddr *)&address, &length) != 0) return -1;
    return address.sin6_family == AF_INET6 ? 6 : address.sin6_family == AF_INET ? 4 : -1;
}

int csys_udp_buffer_sizes(int fd, int *receive, int *send) {
    socklen_t l = sizeof *receive;
    if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, receive, &l) != 0) return -1;
    l = sizeof *send;
    return getsockopt(fd, SOL_SOCKET, SO_SNDBUF, send, &l);
}

int csys_udp_segmentation_supported(int fd) {
    int size = 0;
    socklen_t l = sizeof size;
    return getsockopt(fd, SOL_UDP, UDP_SEGMENT, &size, &l) == 0 ? 1 : 0;
}

int csys_udp_enable_gro(int fd) {
    int one = 1;
    return setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof one);
}

int csys_udp_attach_steering(int fd, const void *instructions, int count) {
    struct sock_fprog program;
    program.len = (unsigned short)count;
    program.filter = (struct sock_filter *)instructions;
    return setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &program, sizeof program);
}

// MARK: - Batches

// Errors the kernel keeps on the socket for an earlier datagram and reports
// on the next call, whatever that call is: taking them clears them.
static int is_queued_datagram_error(int e) {
    return e == ECONNREFUSED || e == EHOSTUNREACH || e == ENETUNREACH || e == EMSGSIZE || e == EHOSTDOWN ||
           e == ENETDOWN || e == EPERM || e == EACCES || e == ENOBUFS || e == EADDRNOTAVAIL || e == EINVAL ||
           e == ECONNRESET || e == EPROTO || e == ETIMEDOUT;
}

int csys_udp_receive(int fd, csys_udp_batch *b, int count, int local_port) {
    if (count > b->capacity) count = b->capacity;
    if (count <= 0) return 0;
    for (int i = 0; i < count; i++) {
        b->iovecs[i].iov_base = b->entries[i].data;
        b->iovecs[i].iov_len = b->entries[i].capacity;
        struct msghdr *m = &b->messages[i].msg_hdr;
        m->msg_name = &b->names[i];
        m->msg_namelen = sizeof b->names[i];
        m->msg_iov = &b->iovecs[i];
        m->msg_iovlen = 1;
        m->msg_control = b->control + (size_t)i * CONTROL_BYTES;
        m->msg_controllen = CONTROL_BYTES;
        m->msg_flags = 0;
        b->messages[i].msg_len = 0;
    }
    int n = -1;
    // Each queued error is reported once; a handful in a row is a
    // pathological queue, and the next readiness tries again.
    for (int attempt = 0; attempt < 8; attempt++) {
        n = recvmmsg(fd, b->messages, (unsigned)count, MSG_DONTWAIT, NULL);
        if (n >= 0) break;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
        if (errno == EINTR || is_queued_datagram_error(errno)) continue;
        return -1;
    }
    if (n < 0) return 0;
    for (int i = 0; i < n; i++) {
        csys_datagram *d = &b->entries[i];
        struct msghdr *m = &b->messages[i].msg_hdr;
        d->length = b->messages[i].msg_len;
        d->status = (m->msg_flags & MSG_TRUNC) ? 1 : 0;
        endpoint_from_sockaddr(&d->peer, &b->names[i]);
        local_from_control(&d->local, &d->segment_size, &d->ecn, m, local_port);
        // A "coalesced" buffer of one datagram is just that datagram.
        if (d->segment_size >= d->length) d->segment_size = 0;
    }
    return n;
}

static int same_endpoint(const csys_ip_endpoint *a, const csys_ip_endpoint *b) {
    return a->family == b->family && a->port == b->port && a->scope_id == b->scope_id &&
           memcmp(a->addr, b->addr, sizeof a->addr) == 0;
}

// How many entries from `i` (before `end`) go as one UDP_SEGMENT message:
// consecutive, one peer, one local address, all of the first's length but
// the last, which may be shorter (the kernel cuts the payload every
// `length` bytes), within the kernel's limits. 1 when segmentation is off.
static int run_length(const csys_udp_batch *b, int i, int end) {
    if (!b->segmentation) return 1;
    const csys_datagram *first = &b->entries[i];
    if (first->alone) return 1;
    uint32_t size = first->length;
    if (size == 0 || size > UINT16_MAX) return 1;
    int n = 1;
    size_t bytes = size;
    while (i + n < end && n < SEGMENTS_MAX) {
        const csys_datagram *d = &b->entries[i + n];
        if (b->entries[i + n - 1].length != size) break;  // a shorter one ended the run
        if (d->length == 0 || d->length > size || bytes + d->length > SEGMENTED_BYTES_MAX) break;
        if (!same_endpoint(&d->peer, &first->peer) || !same_endpoint(&d->local, &first->local)) break;
        if (d->ecn != first->ecn) break;  // one control message marks the whole run
        if (d->alone) break;
        bytes += d->length;
        n++;
    }
    return n;
}

int csys_udp_send(int fd, int socket_family, csys_udp_batch *b, int first, int count) {
    if (first < 0 || count < 0 || first + count > b->capacity) { errno = EINVAL; return -1; }
    int end = first + count;
    int done = 0;
    while (done < count) {
        // Headers for the entries not yet dealt with, a run per message,
        // skipping (and marking) those that cannot go out of this socket
        // at all. Messages, iovecs and control space are used from index
        // 0: there are never more messages or iovecs than entries.
        int messages = 0;
        int iovecs = 0;
        int start = first + done;
        while (start < end) {
            csys_datagram *d = &b->entries[start];
            socklen_t name_length = sockaddr_from_endpoint(&b->names[messages], &d->peer, socket_family);
            if (name_length == 0) {
                if (messages > 0) break;  // send what precedes it first
                d->status = EAFNOSUPPORT;
                done++;
                start++;
                continue;
            }
            int run = run_length(b, start, end);
            struct msghdr *m = &b->messages[messages].msg_hdr;
            m->msg_name = &b->names[messages];
            m->msg_namelen = name_length;
            m->msg_iov = &b->iovecs[iovecs];
            m->msg_iovlen = (size_t)run;
            for (int k = 0; k < run; k++) {
                b->entries[start + k].status = 0;
                b->iovecs[iovecs + k].iov_base = b->entries[start + k].data;
                b->iovecs[iovecs + k].iov_len = b->entries[start + k].length;
            }
            unsigned char *control = b->control + (size_t)messages * CONTROL_BYTES;
            size_t control_length = control_from_local(control, &d->local, socket_family);
            if (run > 1) control_length = control_add_segment(control, control_length, (uint16_t)d->length);
            if (d->ecn) control_length = control_add_ecn(control, control_length, &d->peer, d->ecn);
            m->msg_control = control_length ? control : NULL;
            m->msg_controllen = control_length;
            m->msg_flags = 0;
            b->message_entries[messages] = run;
            messages++;
            iovecs += run;
            start += run;
        }
        if (messages == 0) break;
        int sent = sendmmsg(fd, b->messages, (unsigned)messages, MSG_DONTWAIT);
        if (sent > 0) {
            for (int i = 0; i < sent; i++) {
                done += b->message_entries[i];
                if (b->message_entries[i] > 1) {
                    b->segmented_runs++;
                    b->segmented_datagrams += (uint64_t)b->message_entries[i];
                }
            }
            continue;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        if (errno == EBADF || errno == ENOTSOCK || errno == EFAULT) return done > 0 ? done : -1;
        if (b->message_entries[0] > 1 && (errno == EIO || errno == EINVAL)) {
            // The kernel refused the segmentation itself: EIO when the
            // route's device cannot checksum for it, EINVAL past a limit
            // (segments, or a segment over the device MTU). Without it from
            // now on; the same datagrams go again, one message each.
            b->segmentation = 0;
            continue;
        }
        // This datagram (or run) was refused: drop it and go on with the rest.
        for (int k = 0; k < b->message_entries[0]; k++) b->entries[first + done + k].status = errno;
        done += b->message_entries[0];
    }
    return done;
}
