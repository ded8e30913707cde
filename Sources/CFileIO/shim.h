#ifndef ERRORBUS_CFILEIO_SHIM_H
#define ERRORBUS_CFILEIO_SHIM_H

// Opening and reading a file without waiting for a disk or a server: the kernel answers from
// its caches or says EAGAIN. Swift cannot call the variadic syscall(2), and Glibc's module does
// not declare preadv2(2) or RWF_NOWAIT, so both calls are wrapped here; the constants and
// `struct open_how` come from the kernel's UAPI headers.
//
// Header-only: nothing to link.

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

ssize_t preadv2(int fd, const struct iovec *iov, int iovcnt, off_t offset, int flags);

/// openat2(2) read-only with RESOLVE_CACHED: -1 with errno EAGAIN unless every component of
/// `path` is in the kernel's lookup cache and opening needs no revalidation (as NFS does);
/// ENOSYS or EINVAL on kernels older than 5.12. O_NONBLOCK, as OutboxFileReader's other open.
static inline int errorbus_open_cached(const char *path) {
    struct open_how how = { .flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK, .mode = 0, .resolve = RESOLVE_CACHED };
    return (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
}

/// preadv2(2) with RWF_NOWAIT: reads only what is in the page cache, -1 with errno EAGAIN when
/// the next byte is not (EOPNOTSUPP where the file system cannot tell).
static inline ssize_t errorbus_read_cached(int fd, void *buffer, size_t count, off_t offset) {
    struct iovec vector = { .iov_base = buffer, .iov_len = count };
    return preadv2(fd, &vector, 1, offset, RWF_NOWAIT);
}

#endif
