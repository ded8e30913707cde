#ifndef ERRORBUS_CNETLINK_SHIM_H
#define ERRORBUS_CNETLINK_SHIM_H

// The Linux netlink ABI as NetworkChangeMonitor uses it: `sockaddr_nl`, `nlmsghdr`, the
// NETLINK_ROUTE multicast groups (RTMGRP_*) and message types (RTM_*), from the kernel's UAPI
// headers, so the compiler checks the layouts and values instead of a hand-written copy.
//
// Header-only: nothing to link. The NLMSG_* macros are not imported by Swift; the few it needs
// are spelled out below as functions.

#include <linux/netlink.h>
#include <linux/rtnetlink.h>

/// NLMSG_ALIGN: a netlink message length rounded up to the next 4-byte boundary.
static inline unsigned int errorbus_nlmsg_align(unsigned int length) {
    return NLMSG_ALIGN(length);
}

/// NLMSG_HDRLEN: the aligned size of `struct nlmsghdr`.
static inline unsigned int errorbus_nlmsg_hdrlen(void) {
    return NLMSG_HDRLEN;
}

#endif
