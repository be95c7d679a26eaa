// UDP for QUIC: the supervisor's SO_REUSEPORT group and its steering
// program, and the workers' batch receive (recvmmsg) and send (sendmmsg)
// with each datagram's local address (IP_PKTINFO / IPV6_PKTINFO), so a reply
// leaves from the address the client sent to (RFC 9000 §9: a path is the
// 4-tuple).
//
// Segmentation offload, where the kernel has it: a send turns each run of
// consecutive datagrams to one peer from one local address, all of one size
// but the last (which may be shorter), into one message with a UDP_SEGMENT
// control message (generic segmentation offload, Linux 4.18): the kernel
// walks its stack once per run instead of once per datagram. A receive on a
// socket with UDP_GRO (Linux 5.0) may get many datagrams of one sender
// coalesced into one buffer; the entry's `segment_size` says where to cut.
//
// Addresses cross into Swift as `csys_ip_endpoint`, plain bytes: an IPv4
// peer of a dual-stack IPv6 socket arrives IPv4-mapped and is handed over
// as IPv4 (family 4); on send, an IPv4 address on an IPv6 socket is mapped
// back. No sockaddr reaches Swift, no allocation happens per datagram: a
// batch's message headers, addresses and control buffers are allocated
// once with the batch.
//
// ECN (RFC 9000 §13.4, RFC 3168 §5): the sockets ask for the ECN field of
// received datagrams (IP_RECVTOS / IPV6_RECVTCLASS), which a receive stores
// in each entry's `ecn`; with UDP_GRO one field covers the whole coalesced
// buffer (the kernel coalesces only datagrams with equal TOS). A send marks
// an entry whose `ecn` is not 0 with an IP_TOS or IPV6_TCLASS control
// message (by the peer's family: an IPv4 peer of a dual-stack socket goes
// through the IPv4 stack, which reads only IP_TOS); a segmented run shares
// one, so runs break where the codepoint changes.
#ifndef PEREGRINE_CSYS_UDP_H
#define PEREGRINE_CSYS_UDP_H

#include <stddef.h>
#include <stdint.h>

/// An IP address and port, or nothing (family 0).
typedef struct {
    uint8_t family;     // 4, 6, or 0 (none: the kernel chooses)
    uint8_t reserved;
    uint16_t port;      // host order
    uint32_t scope_id;  // IPv6 scope; for a local address from packet info, the arrival interface
    uint8_t addr[16];   // network order; IPv4 in the first 4 bytes, the rest zero
} csys_ip_endpoint;

/// One datagram of a batch. The caller points `data` at `capacity` bytes of
/// its own. Receive fills `length`, `peer`, `local` (the destination the
/// client used, with the socket's port) and `status` (1: the datagram was
/// longer than `capacity` and is truncated). Send reads `length` bytes of
/// `data` to `peer` from `local` (family 0: any) and sets `status` to the
/// errno of a datagram the kernel refused (dropped; 0 when sent).
/// `segment_size`, after a receive on a socket with UDP_GRO: the buffer
/// holds `length` bytes of datagrams of this size each, the last one
/// possibly shorter (0: one datagram). Not read on send.
/// `ecn`: the ECN field (0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE) of a received
/// datagram (0 where the kernel gave none), or the one to set on a sent one.
/// `alone`, on send: never part of a segmented run (a path MTU probe, whose
/// size as a run's segment size could exceed the device MTU, which fails
/// the whole run with EINVAL).
typedef struct {
    void *data;
    uint32_t capacity;
    uint32_t length;
    csys_ip_endpoint peer;
    csys_ip_endpoint local;
    int32_t status;
    uint32_t segment_size;
    uint8_t ecn;
    uint8_t alone;
} csys_datagram;

typedef struct csys_udp_batch csys_udp_batch;

/// Room for `capacity` datagrams (1...1024), or NULL.
csys_udp_batch *csys_udp_batch_create(int capacity);
void csys_udp_batch_destroy(csys_udp_batch *batch);
/// The batch's `capacity` entries, the caller's to fill and read.
csys_datagram *csys_udp_batch_entries(csys_udp_batch *batch);
int csys_udp_batch_capacity(const csys_udp_batch *batch);
/// Whether sends of this batch use UDP_SEGMENT (off when created). A send
/// that the kernel refuses with EIO (the route's device cannot checksum
/// for it) or EINVAL turns it off and sends the same datagrams again one
/// message each (sendmmsg as without it).
void csys_udp_batch_set_segmentation(csys_udp_batch *batch, int on);
int csys_udp_batch_segmentation(const csys_udp_batch *batch);
/// Runs sent as one message with UDP_SEGMENT since the batch was made, and
/// the datagrams in them (for tests and statistics).
void csys_udp_batch_segmentation_counts(const csys_udp_batch *batch, uint64_t *runs, uint64_t *datagrams);

/// Binds `count` UDP sockets (1...65536) into one SO_REUSEPORT group on the
/// local address of `like_fd` (the TCP listener: same family, address, and
/// IPV6_V6ONLY) at `port` (0: a free one), in order, into `fds`: socket `i`
/// is index `i` of the group, which is what a steering program returns.
/// Each is non-blocking and close-on-exec, reports packet info, sets the
/// don't-fragment bit (RFC 9000 §14) and asks for large buffers. A port
/// someone else holds (even in an SO_REUSEPORT group of their own) is an
/// error. Returns the port, or -1 with the reason in `err`.
int csys_udp_bind_group(int like_fd, int port, int count, int *fds, char *err, size_t errlen);

/// 4 or 6: the family of a socket (6 for a dual-stack socket), or -1.
int csys_udp_family(int fd);
/// The buffer sizes the kernel granted (bytes, as getsockopt reports them).
int csys_udp_buffer_sizes(int fd, int *receive, int *send);
/// 1 if the kernel knows UDP_SEGMENT for this socket (a probe: whether a
/// device on the way refuses it shows only when sending), else 0.
int csys_udp_segmentation_supported(int fd);
/// Turns UDP_GRO on: from now on a receive may coalesce datagrams (give
/// this socket's receives slots of 64 KiB, or they arrive truncated).
/// 0, or -1 where the kernel has no UDP GRO.
int csys_udp_enable_gro(int fd);

/// Attaches a classic BPF program (`count` instructions of 8 bytes, struct
/// sock_filter) as the group's SO_ATTACH_REUSEPORT_CBPF steering program,
/// replacing any earlier one; `fd` is any socket of the group.
int csys_udp_attach_steering(int fd, const void *instructions, int count);

/// Receives up to `count` (<= capacity) waiting datagrams into entries
/// 0..<n (recvmmsg, non-blocking); `local_port` is the socket's port, for
/// the entries' `local`. Returns n (0: none waiting), or -1 on an error
/// that is the socket's own (EBADF...). An error the kernel queued on the
/// socket for an earlier datagram (ECONNREFUSED from an ICMP message, or
/// one a batch send left: EMSGSIZE, EHOSTUNREACH...) is taken and the
/// receive tried again, a few times at most; EINTR is retried.
int csys_udp_receive(int fd, csys_udp_batch *batch, int count, int local_port);

/// Sends entries first..<first+count (sendmmsg, non-blocking) from a socket
/// of family `socket_family` (csys_udp_family), runs of them as one message
/// each when the batch has segmentation on. Returns how many entries
/// were dealt with: sent, or dropped because the kernel refused that one
/// datagram (EMSGSIZE over the path MTU, ECONNREFUSED, EHOSTUNREACH,
/// ENOBUFS...: its `status` says why; QUIC recovers the loss). Fewer than
/// `count` means the socket's buffer is full (EAGAIN): wait until it is
/// writable and send the rest (a run goes whole or not at all). -1 on an
/// error that is the socket's own.
int csys_udp_send(int fd, int socket_family, csys_udp_batch *batch, int first, int count);

#endif
