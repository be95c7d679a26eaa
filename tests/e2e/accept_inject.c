// LD_PRELOAD shim for tests/e2e/test_accept_errors.py: accept4(2) fails with
// the errno written (as a decimal number) in the file named by
// $PEREGRINE_TEST_ACCEPT_ERRNO_FILE, as long as the file holds one; an empty
// or missing file lets accept4 through. ENFILE, ENOMEM and ENOBUFS cannot be
// caused on demand on a shared machine: this injects them at the one call
// the worker makes, and everything above it runs for real.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static int injected_errno(void) {
    const char *path = getenv("PEREGRINE_TEST_ACCEPT_ERRNO_FILE");
    if (path == NULL) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char text[16] = {0};
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    return n > 0 ? atoi(text) : 0;
}

int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags) {
    static int (*real)(int, struct sockaddr *, socklen_t *, int);
    int err = injected_errno();
    if (err > 0) {
        errno = err;
        return -1;
    }
    if (real == NULL) real = (int (*)(int, struct sockaddr *, socklen_t *, int))dlsym(RTLD_NEXT, "accept4");
    return real(fd, address, length, flags);
}
