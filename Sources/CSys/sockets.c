#define _GNU_SOURCE
#include "csys_sockets.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

long csys_peek(int fd, void *buf, size_t len) {
    ssize_t n;
    do n = recv(fd, buf, len, MSG_PEEK | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    return n;
}

int csys_inherited_listener(int fd, int *is_unix, int *problem) {
    int value = 0;
    socklen_t len = sizeof value;
    if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_TYPE, &value, &len) != 0) { *problem = 1; return -1; }
    if (value != SOCK_STREAM) { *problem = 2; return -1; }
    len = sizeof value;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &value, &len) != 0 || value == 0) { *problem = 3; return -1; }
    len = sizeof value;
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &value, &len) != 0) { *problem = 1; return -1; }
    if (value != AF_INET && value != AF_INET6 && value != AF_UNIX) { *problem = 4; return -1; }
    *is_unix = value == AF_UNIX;
    *problem = 0;
    return 0;
}

int csys_adopt_listener(int fd) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) return -1;
    flags = fcntl(fd, F_GETFD);
    if (flags < 0 || fcntl(fd, F_SETFD, flags | FD_CLOEXEC) != 0) return -1;
    return 0;
}

int csys_unix_socket_path(int fd, char *buf, size_t len) {
    struct sockaddr_un sa;
    socklen_t salen = sizeof sa;
    memset(&sa, 0, sizeof sa);
    if (len == 0) { errno = EINVAL; return -1; }
    buf[0] = 0;
    if (getsockname(fd, (struct sockaddr *)&sa, &salen) != 0) return -1;
    size_t n = salen > offsetof(struct sockaddr_un, sun_path) ? salen - offsetof(struct sockaddr_un, sun_path) : 0;
    if (n == 0) return 0;
    const char *p = sa.sun_path;
    size_t out = 0;
    if (p[0] == 0) {  // abstract: '@' and the name
        buf[out++] = '@';
        p++;
        n--;
    } else {
        n = strnlen(p, n);
    }
    for (size_t i = 0; i < n && out + 1 < len; i++) buf[out++] = p[i];
    buf[out] = 0;
    return 0;
}

int csys_chmod(const char *path, int mode) { return chmod(path, (mode_t)mode); }

int csys_unsetenv(const char *name) { return unsetenv(name); }
