/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control channel internals shared by ctl.c and the protocol files, which call
 * one way only: ctl.c -> ctl_cmd.c -> ctl_req.c -> ctl_stream.c -> ctl_json.c.
 * Each part below is defined by the file it names.
 */
#ifndef ZL_CTL_PRIV_H
#define ZL_CTL_PRIV_H

#include <stdint.h>

#include <jansson.h>

#include "trial.h"

#define CTL_ERRLEN 256 /* longest error sentence in a reply, its NUL included */

/* ctl_json.c: replies and the integer field reader (jansson only). */

/* {"ok": false, "error": fmt...}, the text cut to CTL_ERRLEN and kept ASCII. */
json_t *ctl_reply_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* {"ok": true}. */
json_t *ctl_reply_ok(void);
/* An error reply as a malloc'd line (no newline), for faults found before a request is parsed. */
char *ctl_error_line(const char *msg);
/* Reads optional integer key of obj in [lo, hi] into *out; returns 0, or -1 with err set. */
int ctl_json_int(json_t *obj, const char *key, int64_t lo, int64_t hi, int64_t *out, char *err,
	const char *ctx);

/* ctl_stream.c: one stream object of configure. */

/* Parses stream object o (streams[idx]) into s, defaults filled in; returns 0, or -1 with err set. */
int ctl_stream_parse(json_t *o, uint16_t idx, struct zl_stream *s, char *err);

/* ctl_req.c: the fields of the requests. */

/* Parses configure's streams and idle_sleep_us; returns 0, or -1 with err set and nothing held. */
int ctl_req_configure(json_t *req, struct zl_stream *streams, uint16_t *n, uint32_t *idle_sleep_us,
	char *err);
/* Parses start's fields into tp; returns 0, or -1 with err set. */
int ctl_req_start(json_t *req, struct zl_trial_params *tp, char *err);
/* Parses intervals' stream (-1 if absent: every stream) and from (0 if absent); returns 0, or -1 with err set. */
int ctl_req_intervals(json_t *req, int *stream, uint32_t *from, char *err);
/* Parses result's wait_s (seconds, 0 if absent); returns 0, or -1 with err set. */
int ctl_req_wait(json_t *req, double *wait_s, char *err);

/* ctl_cmd.c: zl_ctl_handle_line (ctl.h), the top. */

#endif
