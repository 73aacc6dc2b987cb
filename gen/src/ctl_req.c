/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control protocol, version 1: one JSON object per line each way.
 * Request: {"cmd": NAME, "id": ANY?, "proto": 1?, ...}; reply: {"ok": true,
 * "id": ..., ...} or {"ok": false, "id": ..., "error": "what is wrong"}.
 * This file reads request lines and checks their fields; ctl_cmd.c runs the
 * commands, ctl_stream.c reads stream objects. See gen/PROTOCOL.md for every field.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctl_priv.h"

/* {"ok": false, "error": fmt...}, the text cut to CTL_ERRLEN and kept ASCII. */
json_t *
ctl_reply_error(const char *fmt, ...)
{
	char buf[CTL_ERRLEN];
	va_list ap;
	size_t i;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* text from the request, cut by a length limit, may end mid UTF-8 sequence: keep ASCII */
	for (i = 0; buf[i] != '\0'; i++)
		if ((unsigned char)buf[i] >= 0x80)
			buf[i] = '?';
	return json_pack("{s:b,s:s}", "ok", 0, "error", buf);
}

/* {"ok": true}. */
json_t *
ctl_reply_ok(void)
{
	return json_pack("{s:b}", "ok", 1);
}

/* An error reply as a malloc'd line (no newline), for faults found before a request is parsed. */
char *
ctl_error_line(const char *msg)
{
	json_t *rep = ctl_reply_error("%s", msg);
	char *out = json_dumps(rep, JSON_COMPACT | JSON_ENSURE_ASCII);

	json_decref(rep);
	return out;
}

/* Reads optional integer key of obj in [lo, hi] into *out; returns 0, or -1 with err set. */
int
ctl_req_int(json_t *obj, const char *key, int64_t lo, int64_t hi, int64_t *out, char *err,
	const char *ctx)
{
	json_t *v = json_object_get(obj, key);

	if (v == NULL)
		return 0;
	/* the range test first: casting a double outside int64_t is undefined */
	if (json_is_real(v) && json_real_value(v) > -9.2e18 && json_real_value(v) < 9.2e18 &&
			json_real_value(v) == (double)(int64_t)json_real_value(v)) {
		*out = (int64_t)json_real_value(v);
	} else if (json_is_integer(v)) {
		*out = json_integer_value(v);
	} else {
		snprintf(err, CTL_ERRLEN, "%s%s must be an integer", ctx, key);
		return -1;
	}
	if (*out < lo || *out > hi) {
		snprintf(err, CTL_ERRLEN, "%s%s must be %lld..%lld, got %lld", ctx, key,
			(long long)lo, (long long)hi, (long long)*out);
		return -1;
	}
	return 0;
}

/* Checks "cmd" and "proto" of a request object; returns its command name, or NULL with *rep set. */
static const char *
req_cmd(json_t *req, json_t **rep)
{
	json_t *c = json_object_get(req, "cmd"), *p = json_object_get(req, "proto");

	if (!json_is_string(c)) {
		*rep = ctl_reply_error("request needs \"cmd\": one of hello, ports, configure, start, "
			"status, stop, result, intervals, shutdown");
		return NULL;
	}
	if (p != NULL && (!json_is_integer(p) || json_integer_value(p) != ZL_PROTO_VERSION)) {
		*rep = ctl_reply_error("protocol version mismatch: zlgen speaks proto %d", ZL_PROTO_VERSION);
		return NULL;
	}
	return json_string_value(c);
}

/* Answers one request line; returns a malloc'd reply line (no newline). */
char *
zl_ctl_handle_line(const char *line, size_t len, int *shutdown)
{
	json_error_t jerr;
	json_t *req, *rep = NULL, *id = NULL;
	const char *cmd;
	char *out;

	req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (req == NULL) {
		rep = ctl_reply_error("malformed JSON at column %d: %s", jerr.column, jerr.text);
	} else if (!json_is_object(req)) {
		rep = ctl_reply_error("a request must be a JSON object with a \"cmd\" field");
	} else {
		id = json_object_get(req, "id");
		cmd = req_cmd(req, &rep);
		if (cmd != NULL)
			rep = ctl_cmd_run(cmd, req, shutdown);
		if (id != NULL)
			json_object_set(rep, "id", id);
	}
	out = json_dumps(rep, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(rep);
	json_decref(req);
	return out;
}

/* Frees the flows of the first n parsed streams. */
static void
req_free_streams(struct zl_stream *streams, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(streams[i].flows);
}

/* Parses configure's streams and idle_sleep_us; returns 0, or -1 with err set and nothing held. */
int
ctl_req_configure(json_t *req, struct zl_stream *streams, uint16_t *n, uint32_t *idle_sleep_us,
	char *err)
{
	json_t *arr = json_object_get(req, "streams");
	size_t nb, i;
	int64_t x;

	if (!json_is_array(arr) || json_array_size(arr) == 0) {
		snprintf(err, CTL_ERRLEN, "configure needs streams: a non-empty list of stream objects");
		return -1;
	}
	nb = json_array_size(arr);
	if (nb > ZL_MAX_STREAMS) {
		snprintf(err, CTL_ERRLEN, "at most %u streams, got %zu", ZL_MAX_STREAMS, nb);
		return -1;
	}
	for (i = 0; i < nb; i++) {
		if (ctl_stream_parse(json_array_get(arr, i), (uint16_t)i, &streams[i], err) < 0) {
			req_free_streams(streams, i);
			return -1;
		}
	}
	x = *idle_sleep_us;
	if (ctl_req_int(req, "idle_sleep_us", 0, 100000, &x, err, "") < 0) {
		req_free_streams(streams, nb);
		return -1;
	}
	*idle_sleep_us = (uint32_t)x;
	*n = (uint16_t)nb;
	return 0;
}

/* Reads start's rate_pps (one rate, or one per configured stream) into tp, if given; returns 0 or -1. */
static int
req_rates(json_t *req, struct zl_trial_params *tp, char *err)
{
	json_t *v = json_object_get(req, "rate_pps");
	uint16_t i;

	if (v == NULL)
		return 0;
	if (json_is_number(v)) {
		if (json_number_value(v) < 0 || json_number_value(v) > 1e12) {
			snprintf(err, CTL_ERRLEN, "rate_pps must be >= 0 frames per second (0 = maximum)");
			return -1;
		}
		for (i = 0; i < zl.nb_streams; i++)
			tp->pps[i] = (uint64_t)(json_number_value(v) + 0.5);
	} else if (json_is_array(v) && json_array_size(v) == zl.nb_streams) {
		for (i = 0; i < zl.nb_streams; i++) {
			json_t *e = json_array_get(v, i);

			if (!json_is_number(e) || json_number_value(e) < 0 || json_number_value(e) > 1e12) {
				snprintf(err, CTL_ERRLEN, "rate_pps[%u] must be >= 0 frames per second", i);
				return -1;
			}
			tp->pps[i] = (uint64_t)(json_number_value(e) + 0.5);
		}
	} else {
		snprintf(err, CTL_ERRLEN, "rate_pps must be a number or a list with one rate per stream (%u)",
			zl.nb_streams);
		return -1;
	}
	tp->has_rates = true;
	return 0;
}

/* Parses start's fields into tp; returns 0, or -1 with err set. */
int
ctl_req_start(json_t *req, struct zl_trial_params *tp, char *err)
{
	json_t *v;
	int64_t x;

	memset(tp, 0, sizeof(*tp));
	tp->trial_id = -1;
	tp->drain_ms = 500;
	x = -1;
	if (ctl_req_int(req, "trial", 0, 65535, &x, err, "") < 0)
		return -1;
	tp->trial_id = (int)x;
	v = json_object_get(req, "duration_s");
	if (v != NULL) {
		if (!json_is_number(v) || json_number_value(v) <= 0 || json_number_value(v) > 86400) {
			snprintf(err, CTL_ERRLEN, "duration_s must be a number of seconds in (0, 86400]");
			return -1;
		}
		tp->duration_s = json_number_value(v);
	}
	x = 0;
	if (ctl_req_int(req, "frames", 1, INT64_MAX, &x, err, "") < 0)
		return -1;
	tp->frames = (uint64_t)x;
	if ((tp->duration_s > 0) == (tp->frames > 0)) {
		snprintf(err, CTL_ERRLEN, "start needs exactly one of duration_s (seconds) or frames (per stream)");
		return -1;
	}
	x = 500;
	if (ctl_req_int(req, "drain_ms", 0, 60000, &x, err, "") < 0)
		return -1;
	tp->drain_ms = (uint32_t)x;
	x = 0;
	if (ctl_req_int(req, "interval_ms", 1, ZL_IVL_MAX_MS, &x, err, "") < 0)
		return -1;
	tp->interval_ms = (uint32_t)x;
	x = 0;
	if (ctl_req_int(req, "catchup_max", 1, UINT32_MAX, &x, err, "") < 0)
		return -1;
	tp->catchup_max = (uint32_t)x;
	return req_rates(req, tp, err);
}

/* Parses intervals' stream (-1 if absent: every stream) and from (0 if absent); returns 0, or -1 with err set. */
int
ctl_req_intervals(json_t *req, int *stream, uint32_t *from, char *err)
{
	int64_t x = -1;

	if (ctl_req_int(req, "stream", 0, ZL_MAX_STREAMS - 1, &x, err, "") < 0)
		return -1;
	*stream = (int)x;
	x = 0;
	if (ctl_req_int(req, "from", 0, ZL_IVL_MAX, &x, err, "") < 0)
		return -1;
	*from = (uint32_t)x;
	return 0;
}

/* Parses result's wait_s (seconds, 0 if absent); returns 0, or -1 with err set. */
int
ctl_req_wait(json_t *req, double *wait_s, char *err)
{
	json_t *v = json_object_get(req, "wait_s");

	*wait_s = 0;
	if (v == NULL)
		return 0;
	if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 86400) {
		snprintf(err, CTL_ERRLEN, "wait_s must be a number of seconds in [0, 86400]");
		return -1;
	}
	*wait_s = json_number_value(v);
	return 0;
}
