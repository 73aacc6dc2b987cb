/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control protocol: the fields of the configure, start, intervals and result
 * requests, checked and read into C values (see gen/PROTOCOL.md for every
 * field). Stream objects are read by ctl_stream.c; ctl_cmd.c runs the commands.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_priv.h"

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
	if (ctl_json_int(req, "idle_sleep_us", 0, 100000, &x, err, "") < 0) {
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
	if (ctl_json_int(req, "trial", 0, 65535, &x, err, "") < 0)
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
	if (ctl_json_int(req, "frames", 1, INT64_MAX, &x, err, "") < 0)
		return -1;
	tp->frames = (uint64_t)x;
	if ((tp->duration_s > 0) == (tp->frames > 0)) {
		snprintf(err, CTL_ERRLEN, "start needs exactly one of duration_s (seconds) or frames (per stream)");
		return -1;
	}
	x = 500;
	if (ctl_json_int(req, "drain_ms", 0, 60000, &x, err, "") < 0)
		return -1;
	tp->drain_ms = (uint32_t)x;
	x = 0;
	if (ctl_json_int(req, "interval_ms", 1, ZL_IVL_MAX_MS, &x, err, "") < 0)
		return -1;
	tp->interval_ms = (uint32_t)x;
	x = 0;
	if (ctl_json_int(req, "catchup_max", 1, UINT32_MAX, &x, err, "") < 0)
		return -1;
	tp->catchup_max = (uint32_t)x;
	return req_rates(req, tp, err);
}

/* Parses intervals' stream (-1 if absent: every stream) and from (0 if absent); returns 0, or -1 with err set. */
int
ctl_req_intervals(json_t *req, int *stream, uint32_t *from, char *err)
{
	int64_t x = -1;

	if (ctl_json_int(req, "stream", 0, ZL_MAX_STREAMS - 1, &x, err, "") < 0)
		return -1;
	*stream = (int)x;
	x = 0;
	if (ctl_json_int(req, "from", 0, ZL_IVL_MAX, &x, err, "") < 0)
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
