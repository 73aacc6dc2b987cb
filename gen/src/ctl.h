/* SPDX-License-Identifier: BSD-3-Clause */
/* Control channel: line-delimited JSON requests over a Unix socket. */
#ifndef ZL_CTL_H
#define ZL_CTL_H

#include <stddef.h>

#define ZL_CTL_MAX_CLIENTS 8
#define ZL_CTL_MAX_LINE (1 << 20) /* longest request line, not counting its newline */
#define ZL_CTL_MAX_OUT (4 << 20)  /* unsent reply bytes a client may leave before it is dropped */

/* Answers one request line; returns a malloc'd reply line (no newline). */
char *zl_ctl_handle_line(const char *line, size_t len, int *shutdown);

/* Creates and listens on the socket at path (mode 0600); returns its fd, or -1 after one line on stderr. */
int zl_ctl_open(const char *path);

/* Closes a socket from zl_ctl_open and removes its path. */
void zl_ctl_close(int lfd, const char *path);

/* Serves lfd (from zl_ctl_open) until shutdown or zl.quit, then closes it; returns 0 or -1. */
int zl_ctl_serve(int lfd, const char *path);

#endif
