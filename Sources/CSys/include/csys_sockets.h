// CSys, sockets from outside: peeking at a connection's first bytes (the
// PROXY protocol header), listening sockets inherited from a parent
// (--fd, systemd socket activation) and the unix socket's mode.
// Every function returns -1 and leaves errno set on failure unless noted.
#ifndef PEREGRINE_CSYS_SOCKETS_H
#define PEREGRINE_CSYS_SOCKETS_H

#include <stddef.h>

// recv(2) with MSG_PEEK, non-blocking: the bytes stay in the socket.
// 0: the peer closed its side.
long csys_peek(int fd, void *buf, size_t len);

// What an inherited descriptor is. 0 and `*is_unix` (AF_UNIX or not) when
// it is a listening SOCK_STREAM socket of family AF_INET, AF_INET6 or
// AF_UNIX; otherwise -1 with `*problem`: 1 not open or not a socket, 2 not
// SOCK_STREAM, 3 not listening, 4 another address family.
int csys_inherited_listener(int fd, int *is_unix, int *problem);

// Makes an inherited listening socket non-blocking and close-on-exec.
int csys_adopt_listener(int fd);

// The filesystem path a unix socket is bound to, NUL-terminated in `buf`
// (an abstract name starts with '@'; unbound: empty).
int csys_unix_socket_path(int fd, char *buf, size_t len);

int csys_chmod(const char *path, int mode);
int csys_unsetenv(const char *name);

#endif
