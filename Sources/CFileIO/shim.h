#ifndef ERRORBUS_CFILEIO_SHIM_H
#define ERRORBUS_CFILEIO_SHIM_H

// Opening and reading a file without waiting for a disk or a server: the kernel answers from
// its caches or says EAGAIN. Swift cannot call the variadic syscall(2), and Glibc's module does
// not declare preadv2(2) or RWF_NOWAIT, so both calls are wrapped here; the constants and
// `struct open_how` come from the kernel's UAPI headers.
//
// Read leases (fcntl(2) F_SETLEASE, F_GETLEASE, F_SETSIG) are wrapped here too: fcntl(2) is
// variadic, and Glibc's module declares none of the three commands.
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

// The kernel's numbers (include/uapi/linux/fcntl.h, asm-generic/fcntl.h): glibc's <fcntl.h>
// names them only under _GNU_SOURCE, which its module is not built with.
#ifndef F_SETSIG
#define F_SETSIG 10
#endif
#ifndef F_SETLEASE
#define F_SETLEASE 1024
#endif
#ifndef F_GETLEASE
#define F_GETLEASE 1025
#endif

/// Takes a read lease on `fd` (open read-only), -1 with errno EAGAIN while any process has the
/// file open for writing; EACCES without the file's ownership or CAP_LEASE; EINVAL where the file
/// system has no leases. A writer's open breaks the lease: the kernel then sends `signal` (set
/// first with F_SETSIG, so that SIGIO, which would end the process, is never the one sent) and
/// holds the open until the lease is released or /proc/sys/fs/lease-break-time passes.
static inline int errorbus_take_read_lease(int fd, int signal) {
    if (fcntl(fd, F_SETSIG, signal) < 0) return -1;
    return fcntl(fd, F_SETLEASE, F_RDLCK);
}

/// Releases the lease on `fd`: a writer waiting for it goes on at once.
static inline int errorbus_release_lease(int fd) {
    return fcntl(fd, F_SETLEASE, F_UNLCK);
}

/// Whether the read lease on `fd` still stands: 0 once a writer's open is breaking it (the lease
/// then reads as F_UNLCK), or if it is gone; -1 on error.
static inline int errorbus_holds_read_lease(int fd) {
    int type = fcntl(fd, F_GETLEASE);
    if (type < 0) return -1;
    return type == F_RDLCK;
}

#endif
