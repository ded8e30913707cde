#ifndef ERRORBUS_CSYSTEMD_SHIM_H
#define ERRORBUS_CSYSTEMD_SHIM_H

// libsystemd as the Systemd target uses it.
//
// The variadic entry points (sd_journal_send, sd_journal_print, sd_notifyf) cannot be called
// from Swift. The Systemd target uses their non-variadic siblings instead: sd_journal_sendv
// with an iovec array, and sd_notify with a preformatted state string. Should a variadic
// function ever be needed, add a `static inline` shim with fixed arguments here.

#include <sys/uio.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>

#endif
