/* SPDX-License-Identifier: BSD-3-Clause */
/* Control channel: line-delimited JSON requests over a Unix socket. */
#ifndef ZL_CTL_H
#define ZL_CTL_H

#include <stddef.h>

/* Answers one request line; returns a malloc'd reply line (no newline). */
char *zl_ctl_handle_line(const char *line, size_t len, int *shutdown);

/* Serves the socket at path until shutdown or zl.quit; returns 0 or -1. */
int zl_ctl_serve(const char *path);

#endif
