/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control protocol, the leaf: reply objects and the integer field reader that
 * ctl.c and the protocol files share. It calls jansson only.
 */
#include <stdarg.h>
#include <stdio.h>

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
ctl_json_int(json_t *obj, const char *key, int64_t lo, int64_t hi, int64_t *out, char *err,
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
