/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit and fuzz tests of the control protocol handler (ctl*.c, trial*.c),
 * without EAL: no ports are probed and no worker runs. The one worker's
 * handshakes are simulated by the test where a trial has to finish.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <rte_log.h>

#include "check.h"
#include "ctl.h"
#include "trial.h"
#include "zlgen.h"

struct zl_app zl; /* main.c, which defines it, is not linked */

static uint64_t lcg_state = 20251121;

/* Fixed-seed 64-bit LCG; returns the high 32 bits. */
static uint32_t
lcg_next(void)
{
	lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(lcg_state >> 32);
}

/* Uniform-ish value in [0, n). */
static uint32_t
rnd(uint32_t n)
{
	return n ? lcg_next() % n : 0;
}

static unsigned long nb_replies;

/*
 * Sends one line through zl_ctl_handle_line and checks the reply's form:
 * one line of ASCII JSON, an object, "ok" a boolean, a non-empty "error" string
 * when ok is false, and the request's "id" echoed. Returns the parsed reply
 * (caller frees) or NULL after counting a failure.
 */
static json_t *
ask_n(const char *line, size_t len, const char *where)
{
	json_error_t jerr;
	json_t *rep, *ok, *err, *req, *id;
	int shutdown = 0, good = 1;
	char *out = zl_ctl_handle_line(line, len, &shutdown);
	size_t i;

	nb_replies++;
	if (out == NULL) {
		check_fail++;
		fprintf(stderr, "%s: no reply (NULL) to a %zu-byte request: %.120s\n", where, len, line);
		return NULL;
	}
	for (i = 0; out[i]; i++)
		if ((unsigned char)out[i] >= 0x80 || out[i] == '\n' || out[i] == '\r')
			good = 0;
	if (!good) {
		check_fail++;
		fprintf(stderr, "%s: reply is not one ASCII line: %.200s\n", where, out);
	}
	rep = json_loads(out, JSON_REJECT_DUPLICATES, &jerr);
	if (rep == NULL || !json_is_object(rep)) {
		check_fail++;
		fprintf(stderr, "%s: reply is not a JSON object: %.200s\n", where, out);
		free(out);
		json_decref(rep);
		return NULL;
	}
	ok = json_object_get(rep, "ok");
	err = json_object_get(rep, "error");
	if (!json_is_boolean(ok)) {
		good = 0;
	} else if (json_is_false(ok)) {
		if (!json_is_string(err) || json_string_length(err) == 0)
			good = 0;
	} else if (err != NULL) {
		good = 0;
	}
	/* the id is echoed whenever the request was an object carrying one */
	req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (json_is_object(req)) {
		id = json_object_get(req, "id");
		if (id != NULL && !json_equal(id, json_object_get(rep, "id")))
			good = 0;
		if (id == NULL && json_object_get(rep, "id") != NULL)
			good = 0;
	} else if (json_object_get(rep, "id") != NULL) {
		good = 0;
	}
	json_decref(req);
	if (good) {
		check_pass++;
	} else {
		check_fail++;
		fprintf(stderr, "%s: bad reply %.300s\n  to %.300s\n", where, out, line);
	}
	free(out);
	return rep;
}

/* ask_n for a NUL-terminated line. */
static json_t *
ask(const char *line, const char *where)
{
	return ask_n(line, strlen(line), where);
}

#define ASK(line) ask((line), __FILE__ ":" RTE_STR(__LINE__))

/* True if the reply has ok == want; prints the reply otherwise. */
static int
reply_ok_is(json_t *rep, int want)
{
	json_t *ok = rep ? json_object_get(rep, "ok") : NULL;
	int is = json_is_true(ok);

	if (rep != NULL && is != want) {
		char *s = json_dumps(rep, JSON_COMPACT);

		fprintf(stderr, "  unexpected reply: %s\n", s ? s : "?");
		free(s);
	}
	return rep != NULL && is == want;
}

/* Sends a line that must fail; returns the error text (static copy) for extra checks. */
static const char *
expect_error(const char *line, const char *where)
{
	static char msg[512];
	json_t *rep = ask(line, where);

	msg[0] = '\0';
	if (!reply_ok_is(rep, 0)) {
		check_fail++;
		fprintf(stderr, "%s: expected an error reply\n", where);
	} else {
		check_pass++;
		snprintf(msg, sizeof(msg), "%s", json_string_value(json_object_get(rep, "error")));
	}
	json_decref(rep);
	return msg;
}

/* Sends a line that must succeed; returns the reply (caller frees) or NULL. */
static json_t *
expect_ok(const char *line, const char *where)
{
	json_t *rep = ask(line, where);

	if (!reply_ok_is(rep, 1)) {
		check_fail++;
		fprintf(stderr, "%s: expected ok\n", where);
		json_decref(rep);
		return NULL;
	}
	check_pass++;
	return rep;
}

#define EXPECT_ERROR(line) expect_error((line), __FILE__ ":" RTE_STR(__LINE__))
#define EXPECT_OK(line) expect_ok((line), __FILE__ ":" RTE_STR(__LINE__))

/* Integer member of an object, or -12345 when missing or not an integer. */
static json_int_t
get_i(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? json_integer_value(v) : -12345;
}

/* True if member key of o is the string want. */
static int
str_is(json_t *o, const char *key, const char *want)
{
	json_t *v = json_object_get(o, key);

	return json_is_string(v) && strcmp(json_string_value(v), want) == 0;
}

/* The request checks listed in the brief, with no port at all. */
static void
test_requests(void)
{
	static char big[100 * 1024 + 1];
	json_t *rep;
	const char *msg;
	size_t i;

	EXPECT_ERROR("this is not json");
	EXPECT_ERROR("");
	EXPECT_ERROR("   ");
	EXPECT_ERROR("{}");
	EXPECT_ERROR("[]");
	EXPECT_ERROR("[{\"cmd\":\"hello\"}]");
	EXPECT_ERROR("\"hello\"");
	EXPECT_ERROR("42");
	EXPECT_ERROR("null");
	EXPECT_ERROR("{\"cmd\":5}");
	EXPECT_ERROR("{\"cmd\":null}");
	EXPECT_ERROR("{\"cmd\":[\"hello\"]}");
	msg = EXPECT_ERROR("{\"cmd\":\"frobnicate\"}");
	CHECK(strstr(msg, "frobnicate") != NULL);
	EXPECT_ERROR("{\"cmd\":\"HELLO\"}");
	EXPECT_ERROR("{\"cmd\":\"hello\",\"proto\":2}");
	EXPECT_ERROR("{\"cmd\":\"hello\",\"proto\":\"1\"}");
	EXPECT_ERROR("{\"cmd\":\"hello\",\"proto\":1.0}");
	EXPECT_ERROR("{\"cmd\":\"hello\",\"cmd\":\"status\"}"); /* duplicate key */
	EXPECT_ERROR("{\"cmd\":\"hello\"} {\"cmd\":\"hello\"}");
	EXPECT_ERROR("{\"cmd\":\"hello\"");

	/* configure without streams, with bad streams, with a port that does not exist */
	EXPECT_ERROR("{\"cmd\":\"configure\"}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":{}}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[5]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{}]}");
	msg = EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0}]}");
	CHECK(strstr(msg, "port") != NULL);
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":3}]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":-1}]}");
	msg = EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"colour\":\"red\"}]}");
	CHECK(strstr(msg, "colour") != NULL);

	/* start before configure, both and neither of duration_s and frames */
	msg = EXPECT_ERROR("{\"cmd\":\"start\",\"duration_s\":1}");
	CHECK(strstr(msg, "configure") != NULL);
	msg = EXPECT_ERROR("{\"cmd\":\"start\",\"duration_s\":1,\"frames\":100}");
	CHECK(strstr(msg, "exactly one") != NULL);
	msg = EXPECT_ERROR("{\"cmd\":\"start\"}");
	CHECK(strstr(msg, "exactly one") != NULL);
	EXPECT_ERROR("{\"cmd\":\"start\",\"duration_s\":0}");
	EXPECT_ERROR("{\"cmd\":\"start\",\"duration_s\":-1}");
	EXPECT_ERROR("{\"cmd\":\"start\",\"duration_s\":\"10\"}");
	EXPECT_ERROR("{\"cmd\":\"start\",\"frames\":0}");
	EXPECT_ERROR("{\"cmd\":\"start\",\"frames\":1.5}");
	EXPECT_ERROR("{\"cmd\":\"start\",\"frames\":1e300}");
	EXPECT_ERROR("{\"cmd\":\"start\",\"frames\":-1e300}");
	EXPECT_ERROR("{\"cmd\":\"start\",\"frames\":9.2233720368547758e18}");
	EXPECT_ERROR("{\"cmd\":\"start\",\"frames\":99999999999999999999}");
	EXPECT_ERROR("{\"cmd\":\"start\",\"frames\":10,\"trial\":65536}");
	EXPECT_ERROR("{\"cmd\":\"start\",\"frames\":10,\"drain_ms\":-1}");

	/* result before any trial, stop when idle */
	msg = EXPECT_ERROR("{\"cmd\":\"result\"}");
	CHECK(strstr(msg, "start") != NULL);
	EXPECT_ERROR("{\"cmd\":\"result\",\"wait_s\":-1}");
	EXPECT_ERROR("{\"cmd\":\"result\",\"wait_s\":\"x\"}");
	EXPECT_ERROR("{\"cmd\":\"result\",\"wait_s\":0.01}");
	EXPECT_ERROR("{\"cmd\":\"stop\"}");

	/* invalid UTF-8: raw bytes, in a string, in a key, an overlong encoding */
	EXPECT_ERROR("\xff\xfe\xfd");
	EXPECT_ERROR("{\"cmd\":\"\xff\"}");
	EXPECT_ERROR("{\"cmd\xc3\":\"hello\"}");
	EXPECT_ERROR("{\"cmd\":\"hello\",\"id\":\"\xc0\xaf\"}");
	EXPECT_ERROR("{\"cmd\":\"hello\",\"id\":\"\xed\xa0\x80\"}"); /* a UTF-16 surrogate */
	/* a NUL byte inside the line */
	{
		static const char nul[] = "{\"cmd\":\"hel\0lo\"}";

		rep = ask_n(nul, sizeof(nul) - 1, __FILE__ ":nul");
		CHECK(reply_ok_is(rep, 0));
		json_decref(rep);
	}
	/* 100 kB of nested brackets, and of nested objects */
	memset(big, '[', sizeof(big) - 1);
	EXPECT_ERROR(big);
	for (i = 0; i + 5 < sizeof(big) - 1; i += 5)
		memcpy(big + i, "{\"a\":", 5);
	EXPECT_ERROR(big);
	/* a long unknown command name is cut in the message, which stays valid UTF-8 */
	memset(big, 0, sizeof(big));
	strcpy(big, "{\"cmd\":\"");
	for (i = 0; i < 30; i++)
		strcat(big, "\xe2\x82\xac"); /* euro sign, 3 bytes */
	strcat(big, "\"}");
	EXPECT_ERROR(big);
	for (i = 0; i < 4; i++) {
		size_t k;

		/* unknown stream keys of 3-byte characters: the 256 B message cut lands mid-character */
		strcpy(big, "{\"cmd\":\"configure\",\"streams\":[{\"");
		for (k = 0; k < 100 + i; k++)
			strcat(big, "\xe2\x82\xac");
		strcat(big, "\":1}]}");
		EXPECT_ERROR(big);
	}

	/* valid requests */
	rep = EXPECT_OK("{\"cmd\":\"status\"}");
	if (rep != NULL) {
		CHECK(json_is_string(json_object_get(rep, "state")));
		CHECK(str_is(rep, "state", "idle"));
		CHECK(json_is_false(json_object_get(rep, "configured")));
		json_decref(rep);
	}
	rep = EXPECT_OK("{\"cmd\":\"hello\",\"id\":\"abc\"}");
	if (rep != NULL) {
		CHECK(str_is(rep, "id", "abc"));
		CHECK_EQ_U64(get_i(rep, "proto"), ZL_PROTO_VERSION);
		CHECK_EQ_U64(get_i(rep, "tsc_hz"), 1000000000);
		CHECK_EQ_U64(get_i(rep, "nb_ports"), 0);
		CHECK_EQ_U64(get_i(rep, "max_streams"), ZL_MAX_STREAMS);
		CHECK_EQ_U64(get_i(rep, "max_frame"), ZL_MAX_FRAME);
		CHECK(json_is_string(json_object_get(rep, "dpdk")));
		CHECK(json_is_string(json_object_get(rep, "zlgen")));
		CHECK(json_is_array(json_object_get(rep, "lcores")));
		json_decref(rep);
	}
	rep = EXPECT_OK("{\"cmd\":\"hello\",\"proto\":1,\"id\":{\"a\":[1,2,null]}}");
	json_decref(rep);
	rep = EXPECT_OK("{\"cmd\":\"hello\",\"id\":null}");
	json_decref(rep);
	rep = EXPECT_OK("  {\"cmd\" : \"ports\", \"id\": 7 }  ");
	if (rep != NULL) {
		CHECK(json_is_array(json_object_get(rep, "ports")));
		CHECK_EQ_U64(json_array_size(json_object_get(rep, "ports")), 0);
		CHECK_EQ_U64(get_i(rep, "id"), 7);
		json_decref(rep);
	}
	/* errors echo the id too */
	EXPECT_ERROR("{\"cmd\":\"stop\",\"id\":123456789012}");
	EXPECT_ERROR("{\"cmd\":\"nope\",\"id\":[\"x\"]}");
	EXPECT_ERROR("{\"cmd\":5,\"id\":\"q\"}");
	{
		int shutdown = 0;
		char *out = zl_ctl_handle_line("{\"cmd\":\"shutdown\",\"id\":9}", 25, &shutdown);

		CHECK(out != NULL && strcmp(out, "{\"ok\":true,\"id\":9}") == 0);
		CHECK_EQ_U64(shutdown, 1);
		free(out);
	}
}

/* Marks the one worker as done transmitting and idle for the current generation. */
static void
worker_ack(void)
{
	zl.workers[0].tx_done_gen = zl.sync.gen;
	zl.workers[0].idle_gen = zl.sync.gen;
}

/* With one fake port (no ethdev behind it): configure, start, stop and result. */
static void
test_trial_flow(void)
{
	json_t *rep, *res, *st, *lat;
	const char *msg;
	uint32_t i;

	zl.nb_ports = 1;
	zl.ports[0].id = 0;
	zl.ports[0].nb_rxq = 1;
	zl.ports[0].nb_txq = 2;
	zl.ports[0].max_frame = 1518;
	snprintf(zl.ports[0].name, sizeof(zl.ports[0].name), "fake0");
	for (i = 0; i < 6; i++)
		zl.ports[0].mac.addr_bytes[i] = (uint8_t)(0x02 + i);

	/* field checks that need a port */
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":1}]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"queue\":2}]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"frame_size\":63}]}");
	msg = EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"frame_size\":9000}]}");
	CHECK(strstr(msg, "1518") != NULL);
	/* a tagged stream of 64 B frames (the default size), as every tester sends them */
	rep = EXPECT_OK("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"vlan\":5}]}");
	json_decref(rep);
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"vlan\":5,\"frame_size\":63}]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"vlan\":4096,\"frame_size\":64}]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"flows\":0}]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"flows\":1048577}]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"flows\":1000,"
		"\"flow_fields\":[\"src_port\"],\"src_port\":65000}]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"flows\":10,"
		"\"flow_fields\":[\"dst_ip\"],\"dst_ip\":\"255.255.255.250\"}]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"flow_fields\":[\"ttl\"]}]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"flows\":2,\"flow_fields\":[]}]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"src_ip\":\"1.2.3\"}]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"src_ip\":\"1.2.3.256\"}]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"src_ip\":\"1.2.3.4x\"}]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"dst_mac\":\"02:00:00:00:00\"}]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"rate_pps\":-1}]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"rate_pps\":1e13}]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"imix\":[[64,1]],\"frame_size\":64}]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"imix\":[]}]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"imix\":[[64,0]]}]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"imix\":[[64,1000],[128,25]]}]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"imix\":[[64,1],[9000,1]]}]}");
	EXPECT_ERROR("{\"cmd\":\"configure\",\"idle_sleep_us\":100001,\"streams\":[{\"port\":0}]}");
	{
		/* 65 streams */
		char *line = malloc(65 * 12 + 64);
		size_t k;

		strcpy(line, "{\"cmd\":\"configure\",\"streams\":[");
		for (k = 0; k < 65; k++)
			strcat(line, k ? ",{\"port\":0}" : "{\"port\":0}");
		strcat(line, "]}");
		EXPECT_ERROR(line);
		free(line);
	}
	/* the second stream's fault is named, and the first's flows are freed */
	msg = EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"flows\":1000},{\"port\":0,\"vlan\":-2}]}");
	CHECK(strstr(msg, "streams[1]") != NULL);

	/* a valid configuration: two streams, IMIX, VLAN, stepped ports */
	rep = EXPECT_OK("{\"cmd\":\"configure\",\"id\":1,\"idle_sleep_us\":0,\"streams\":["
		"{\"port\":0,\"queue\":1,\"rate_pps\":1000000,\"frame_size\":128,\"flows\":1024,"
		"\"flow_fields\":[\"src_ip\",\"dst_ip\"],\"src_mac\":\"02:00:00:00:00:01\","
		"\"dst_mac\":\"02:00:00:00:00:02\",\"src_ip\":\"198.18.0.1\",\"dst_ip\":\"198.19.1.1\","
		"\"src_port\":1024,\"dst_port\":1024,\"vlan\":-1,\"vlan_pcp\":0},"
		"{\"port\":0,\"imix\":[[68,7],[570,4],[1518,1]],\"vlan\":100,\"vlan_pcp\":3,\"flows\":16,"
		"\"flow_fields\":[\"src_port\",\"dst_port\"],\"rate_pps\":2.5e5}]}");
	if (rep != NULL) {
		CHECK_EQ_U64(get_i(rep, "streams"), 2);
		json_decref(rep);
	}
	CHECK_EQ_U64(zl.nb_streams, 2);
	CHECK_EQ_U64(zl.streams[0].pps, 1000000);
	CHECK_EQ_U64(zl.streams[0].queue, 1);
	CHECK_EQ_U64(zl.streams[0].spec.src_ip, 0xc6120001);
	CHECK_EQ_U64(zl.streams[0].spec.dst_ip, 0xc6130101);
	CHECK_EQ_U64(zl.streams[0].spec.nb_flows, 1024);
	CHECK_EQ_U64(zl.streams[0].tmpl.nb_flows, 1024);
	CHECK_EQ_U64(zl.streams[0].nb_sizes, 1);
	CHECK_EQ_U64(zl.streams[0].sizes[0], 128);
	CHECK_EQ_U64(zl.streams[1].pps, 250000);
	CHECK_EQ_U64(zl.streams[1].nb_sizes, 12);
	CHECK_EQ_U64(zl.streams[1].spec.vlan, 100);
	CHECK_EQ_U64(zl.streams[1].tmpl.l2_len, 18);
	CHECK_EQ_U64(zl.streams[1].spec.src_mac[5], 0x07);  /* the port's MAC by default */
	CHECK_EQ_U64(zl.streams[1].spec.flow_mask, ZL_FLOW_SRC_PORT | ZL_FLOW_DST_PORT);
	{
		unsigned int c64 = 0, c570 = 0, c1518 = 0;

		for (i = 0; i < zl.streams[1].nb_sizes; i++) {
			c64 += zl.streams[1].sizes[i] == 68;
			c570 += zl.streams[1].sizes[i] == 570;
			c1518 += zl.streams[1].sizes[i] == 1518;
		}
		CHECK_EQ_U64(c64, 7);
		CHECK_EQ_U64(c570, 4);
		CHECK_EQ_U64(c1518, 1);
		/* interleaved: never more than two 68 B frames in a row before a larger one */
		CHECK(zl.streams[1].sizes[0] == 68 && zl.streams[1].sizes[1] != 68);
	}
	CHECK_EQ_U64(zl.workers[0].nb_tx, 2);

	rep = EXPECT_OK("{\"cmd\":\"status\"}");
	if (rep != NULL) {
		CHECK(json_is_true(json_object_get(rep, "configured")));
		json_decref(rep);
	}
	EXPECT_ERROR("{\"cmd\":\"start\",\"frames\":10,\"rate_pps\":[1,2,3]}");
	EXPECT_ERROR("{\"cmd\":\"start\",\"frames\":10,\"rate_pps\":[1,\"2\"]}");
	EXPECT_ERROR("{\"cmd\":\"start\",\"frames\":10,\"rate_pps\":-5}");

	/* start: the trial runs (no worker moves it on) */
	rep = EXPECT_OK("{\"cmd\":\"start\",\"trial\":7,\"frames\":1000,\"drain_ms\":0,\"rate_pps\":[500,600]}");
	if (rep != NULL) {
		CHECK_EQ_U64(get_i(rep, "trial"), 7);
		json_decref(rep);
	}
	CHECK_EQ_U64(zl.streams[0].pps, 500);
	CHECK_EQ_U64(zl.streams[1].pps, 600);
	CHECK_EQ_U64(zl.streams[0].frames, 1000);
	CHECK_EQ_U64(zl.sync.phase, ZL_PHASE_RUN);
	CHECK_EQ_U64(zl.sync.trial_id, 7);
	CHECK_EQ_U64(zl.sync.end_tsc, UINT64_MAX);
	CHECK_EQ_U64(zl.streams[0].pace.gap_tsc, ZL_CATCHUP_FRAMES * 1000000000ull / 500);
	rep = EXPECT_OK("{\"cmd\":\"status\"}");
	if (rep != NULL) {
		CHECK(str_is(rep, "state", "running"));
		CHECK_EQ_U64(get_i(rep, "trial"), 7);
		json_decref(rep);
	}
	msg = EXPECT_ERROR("{\"cmd\":\"start\",\"frames\":10}");
	CHECK(strstr(msg, "running") != NULL);
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0}]}");
	msg = EXPECT_ERROR("{\"cmd\":\"result\"}");
	CHECK(strstr(msg, "still running") != NULL);

	/* what the worker would have counted: 10 sent, 9 distinct received, one duplicate */
	zl.streams[0].tx_pkts = 10;
	zl.streams[0].tx_bytes = 1280;
	for (i = 0; i < 10; i++) {
		if (i == 4)
			continue;
		zl_seq_record(&zl.workers[0].rx[0].seq, i);
		zl_hist_record(&zl.workers[0].rx[0].hist, 1000 + i);
		zl.workers[0].rx[0].pkts++;
	}
	zl_seq_record(&zl.workers[0].rx[0].seq, 2);
	zl.workers[0].rx[0].pkts++;
	zl.workers[0].rxp[0].pkts = 12;
	zl.workers[0].rxp[0].foreign = 2;

	rep = EXPECT_OK("{\"cmd\":\"stop\"}");
	json_decref(rep);
	worker_ack();
	rep = EXPECT_OK("{\"cmd\":\"result\",\"wait_s\":5}");
	res = rep ? json_object_get(rep, "result") : NULL;
	CHECK(json_is_object(res));
	if (json_is_object(res)) {
		CHECK_EQ_U64(get_i(res, "trial"), 7);
		CHECK(json_is_true(json_object_get(res, "stopped")));
		CHECK_EQ_U64(get_i(res, "drain_ms"), 0);
		CHECK(json_real_value(json_object_get(res, "tx_elapsed_s")) >= 0);
		CHECK(json_real_value(json_object_get(res, "tx_elapsed_s")) < 100);
		CHECK_EQ_U64(json_array_size(json_object_get(res, "streams")), 2);
		st = json_array_get(json_object_get(res, "streams"), 0);
		CHECK_EQ_U64(get_i(st, "tx_pkts"), 10);
		CHECK_EQ_U64(get_i(st, "tx_bytes"), 1280);
		CHECK_EQ_U64(get_i(st, "rx_pkts"), 10);
		CHECK_EQ_U64(get_i(st, "rx_unique"), 9);
		CHECK_EQ_U64(get_i(st, "lost"), 1);
		CHECK_EQ_U64(get_i(st, "seq_gaps"), 1);
		CHECK_EQ_U64(get_i(st, "duplicate"), 1);
		CHECK_EQ_U64(get_i(st, "reordered"), 0);
		CHECK_EQ_U64(get_i(st, "requested_pps"), 500);
		CHECK_EQ_U64(get_i(st, "flows"), 1024);
		lat = json_object_get(st, "latency_ns");
		CHECK_EQ_U64(get_i(lat, "count"), 9);
		CHECK_EQ_U64(get_i(lat, "min"), 1000);
		CHECK_EQ_U64(get_i(lat, "max"), 1009);
		CHECK_EQ_U64(get_i(lat, "p50"), 1006); /* rank 5 is 1005, bucket [1004, 1008) */
		CHECK(json_real_value(json_object_get(lat, "mean")) == (1000 + 1001 + 1002 + 1003 +
			1005 + 1006 + 1007 + 1008 + 1009) / 9.0);
		/* the non-zero buckets, [low, count]: 4 ns wide at 1000 ns (512..1023 in 128 sub-buckets) */
		lat = json_object_get(st, "latency_hist");
		CHECK_EQ_U64(json_array_size(lat), 3);
		CHECK_EQ_U64(json_integer_value(json_array_get(json_array_get(lat, 0), 0)), 1000);
		CHECK_EQ_U64(json_integer_value(json_array_get(json_array_get(lat, 0), 1)), 4);
		CHECK_EQ_U64(json_integer_value(json_array_get(json_array_get(lat, 1), 0)), 1004);
		CHECK_EQ_U64(json_integer_value(json_array_get(json_array_get(lat, 1), 1)), 3);
		CHECK_EQ_U64(json_integer_value(json_array_get(json_array_get(lat, 2), 0)), 1008);
		CHECK_EQ_U64(json_integer_value(json_array_get(json_array_get(lat, 2), 1)), 2);
		st = json_array_get(json_object_get(res, "streams"), 1);
		CHECK_EQ_U64(get_i(st, "tx_pkts"), 0);
		CHECK_EQ_U64(get_i(st, "rx_unique"), 0);
		CHECK_EQ_U64(get_i(json_object_get(st, "latency_ns"), "p99"), 0);
		CHECK_EQ_U64(json_array_size(json_object_get(st, "latency_hist")), 0);
		CHECK(json_is_array(json_object_get(st, "latency_hist")));
		st = json_array_get(json_object_get(res, "ports"), 0);
		CHECK_EQ_U64(get_i(st, "rx_pkts"), 12);
		CHECK_EQ_U64(get_i(st, "rx_foreign"), 2);
	}
	json_decref(rep);
	CHECK_EQ_U64(zl.sync.phase, ZL_PHASE_IDLE);
	rep = EXPECT_OK("{\"cmd\":\"status\"}");
	if (rep != NULL) {
		CHECK(str_is(rep, "state", "done"));
		json_decref(rep);
	}
	/* the result can be fetched again; stop is refused now */
	rep = EXPECT_OK("{\"cmd\":\"result\"}");
	json_decref(rep);
	EXPECT_ERROR("{\"cmd\":\"stop\"}");

	/* the next trial takes the next id; time mode; one rate for every stream */
	rep = EXPECT_OK("{\"cmd\":\"start\",\"duration_s\":0.5,\"drain_ms\":0,\"rate_pps\":1000}");
	if (rep != NULL) {
		CHECK_EQ_U64(get_i(rep, "trial"), 8);
		json_decref(rep);
	}
	CHECK_EQ_U64(zl.streams[1].pps, 1000);
	CHECK(zl.sync.end_tsc != UINT64_MAX);
	worker_ack();
	rep = EXPECT_OK("{\"cmd\":\"result\",\"wait_s\":5}");
	res = rep ? json_object_get(rep, "result") : NULL;
	if (json_is_object(res)) {
		CHECK(json_is_false(json_object_get(res, "stopped")));
		CHECK(json_real_value(json_object_get(res, "tx_window_s")) == 0.5);
		/* the rx statistics were reset by start */
		st = json_array_get(json_object_get(res, "streams"), 0);
		CHECK_EQ_U64(get_i(st, "rx_pkts"), 0);
		CHECK_EQ_U64(get_i(st, "tx_pkts"), 0);
	} else {
		CHECK(0);
	}
	json_decref(rep);

	/*
	 * stop right after start, before the scheduled first frame (1 ms later):
	 * transmission ends before it began; the elapsed time must not wrap
	 */
	rep = EXPECT_OK("{\"cmd\":\"start\",\"frames\":5,\"drain_ms\":0}");
	json_decref(rep);
	rep = EXPECT_OK("{\"cmd\":\"stop\"}");
	json_decref(rep);
	worker_ack();
	zl_trial_tick();
	CHECK_EQ_U64(zl_trial_state(), ZL_TRIAL_DONE);
	rep = EXPECT_OK("{\"cmd\":\"result\"}");
	res = rep ? json_object_get(rep, "result") : NULL;
	if (json_is_object(res)) {
		double el = json_real_value(json_object_get(res, "tx_elapsed_s"));

		CHECK_EQ_U64(get_i(res, "trial"), 9);
		CHECK(el >= 0 && el < 100);
		if (!(el >= 0 && el < 100))
			fprintf(stderr, "  tx_elapsed_s %g\n", el);
		CHECK(json_real_value(json_object_get(res, "tx_window_s")) == 0);
	} else {
		CHECK(0);
	}
	json_decref(rep);

	/*
	 * the drain ends as soon as every frame sent has arrived, never while one
	 * is missing (a lossy trial waits its whole drain_ms)
	 */
	rep = EXPECT_OK("{\"cmd\":\"start\",\"frames\":3,\"drain_ms\":60000}");
	json_decref(rep);
	zl.streams[0].tx_pkts = 3;
	zl_seq_record(&zl.workers[0].rx[0].seq, 0);
	zl_seq_record(&zl.workers[0].rx[0].seq, 2);
	zl_seq_record(&zl.workers[0].rx[0].seq, 2); /* a duplicate is no missing frame */
	rep = EXPECT_OK("{\"cmd\":\"stop\"}");
	json_decref(rep);
	worker_ack();
	zl_trial_tick();
	CHECK_EQ_U64(zl_trial_state(), ZL_TRIAL_DRAINING);
	CHECK(zl_trial_tick_ms() <= ZL_DRAIN_LOOK_MS);
	zl_trial_tick();
	CHECK_EQ_U64(zl_trial_state(), ZL_TRIAL_DRAINING);
	zl_seq_record(&zl.workers[0].rx[0].seq, 1); /* the last one arrives */
	zl_trial_tick();
	CHECK_EQ_U64(zl_trial_state(), ZL_TRIAL_DONE);
	rep = EXPECT_OK("{\"cmd\":\"result\"}");
	res = rep ? json_object_get(rep, "result") : NULL;
	if (json_is_object(res)) {
		double drained = json_real_value(json_object_get(res, "drained_ms"));

		CHECK_EQ_U64(get_i(res, "drain_ms"), 60000);
		CHECK(drained >= 0 && drained < 10000);
		st = json_array_get(json_object_get(res, "streams"), 0);
		CHECK_EQ_U64(get_i(st, "lost"), 0);
	} else {
		CHECK(0);
	}
	json_decref(rep);

	/* VXLAN: the outer headers of a remote VTEP, checked field by field */
	msg = EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"vxlan\":5}]}");
	CHECK(strstr(msg, "vxlan must be an object") != NULL);
	msg = EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"vxlan\":{\"vni\":1}}]}");
	CHECK(strstr(msg, "required") != NULL);
	msg = EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"vxlan\":{\"vni\":16777216,"
		"\"src_ip\":\"10.0.0.1\",\"dst_ip\":\"10.0.0.2\"}}]}");
	CHECK(strstr(msg, "streams[0].vxlan.vni must be 0..16777215") != NULL);
	msg = EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"vxlan\":{\"vni\":1,"
		"\"src_ip\":\"10.0.0.1\",\"dst_ip\":\"10.0.0\"}}]}");
	CHECK(strstr(msg, "vxlan.dst_ip") != NULL);
	msg = EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"vxlan\":{\"vni\":1,"
		"\"src_ip\":\"10.0.0.1\",\"dst_ip\":\"10.0.0.2\",\"src_mac\":\"x\"}}]}");
	CHECK(strstr(msg, "vxlan.src_mac") != NULL);
	msg = EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"vxlan\":{\"vni\":1,"
		"\"src_ip\":\"10.0.0.1\",\"dst_ip\":\"10.0.0.2\",\"udp_port\":0}}]}");
	CHECK(strstr(msg, "udp_port") != NULL);
	msg = EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"vxlan\":{\"vni\":1,"
		"\"src_ip\":\"10.0.0.1\",\"dst_ip\":\"10.0.0.2\",\"ttl\":3}}]}");
	CHECK(strstr(msg, "ttl is not a vxlan field") != NULL);
	/* a 1518 B stream in VXLAN on a port set up for 1518 B frames: the port carries the 50 B more */
	rep = EXPECT_OK("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"frame_size\":1518,\"vlan\":7,"
		"\"vxlan\":{\"vni\":5000,\"src_ip\":\"10.0.0.1\",\"dst_ip\":\"10.0.0.2\",\"dst_mac\":\"02:00:00:00:00:09\"}},"
		"{\"port\":0,\"vxlan\":{\"vni\":0,\"src_ip\":\"10.0.0.1\",\"dst_ip\":\"10.0.0.3\",\"udp_port\":8472}},"
		"{\"port\":0,\"vxlan\":{\"vni\":1,\"src_ip\":\"10.0.0.1\",\"dst_ip\":\"10.0.0.3\",\"udp_port\":8472}},"
		"{\"port\":0}]}");
	json_decref(rep);
	CHECK_EQ_U64(zl.nb_streams, 4);
	CHECK(zl.streams[0].vxlan && zl.streams[1].vxlan && !zl.streams[3].vxlan);
	CHECK_EQ_U64(zl.streams[0].vx_spec.vni, 5000);
	CHECK_EQ_U64(zl.streams[0].vx_spec.udp_port, 4789);
	CHECK_EQ_U64(zl.streams[0].vx_spec.src_ip, 0x0a000001);
	CHECK_EQ_U64(zl.streams[0].vx_spec.src_mac[5], 0x07);  /* the port's MAC by default */
	CHECK_EQ_U64(zl.streams[0].vx_spec.dst_mac[5], 0x09);
	CHECK_EQ_U64(zl.streams[0].vx_tmpl.hdr[42], 0x08);     /* the I flag, in the template */
	CHECK_EQ_U64(zl.streams[0].spec.vlan, 7);              /* the VLAN tags the inner frame */
	CHECK_EQ_U64(zl.streams[1].vx_spec.udp_port, 8472);
	/* received frames are decapsulated from 4789 and every stream's port, each once */
	CHECK_EQ_U64(zl.nb_vxlan_ports, 2);
	CHECK_EQ_U64(zl.vxlan_ports[0], 4789);
	CHECK_EQ_U64(zl.vxlan_ports[1], 8472);
	rep = EXPECT_OK("{\"cmd\":\"start\",\"frames\":5,\"drain_ms\":0}");
	json_decref(rep);
	zl.workers[0].rxp[0].vxlan = 3;
	rep = EXPECT_OK("{\"cmd\":\"stop\"}");
	json_decref(rep);
	worker_ack();
	zl_trial_tick();
	rep = EXPECT_OK("{\"cmd\":\"result\"}");
	res = rep ? json_object_get(rep, "result") : NULL;
	CHECK_EQ_U64(get_i(json_array_get(json_object_get(res, "ports"), 0), "rx_vxlan"), 3);
	json_decref(rep);

	/* a new configuration drops the result */
	rep = EXPECT_OK("{\"cmd\":\"configure\",\"streams\":[{\"port\":0}]}");
	json_decref(rep);
	CHECK_EQ_U64(zl.nb_streams, 1);
	CHECK_EQ_U64(zl.nb_vxlan_ports, 1);   /* 4789: always */
	CHECK_EQ_U64(zl.streams[0].spec.nb_flows, 1);
	CHECK_EQ_U64(zl.streams[0].sizes[0], 64);
	EXPECT_ERROR("{\"cmd\":\"result\"}");
	/* integral reals are integers */
	rep = EXPECT_OK("{\"cmd\":\"configure\",\"streams\":[{\"port\":0.0,\"frame_size\":1.28e2}]}");
	json_decref(rep);
	CHECK_EQ_U64(zl.streams[0].sizes[0], 128);
	EXPECT_ERROR("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"frame_size\":1e300}]}");
	rep = EXPECT_OK("{\"cmd\":\"ports\"}");
	if (rep != NULL) {
		st = json_array_get(json_object_get(rep, "ports"), 0);
		CHECK(str_is(st, "mac", "02:03:04:05:06:07"));
		CHECK_EQ_U64(get_i(st, "max_frame"), 1518);
		json_decref(rep);
	}
}

/* Sum of the integers of a JSON array. */
static uint64_t
sum_list(json_t *a)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < json_array_size(a); i++)
		n += (uint64_t)json_integer_value(json_array_get(a, i));
	return n;
}

/*
 * Per-interval counters (start's interval_ms): limits refused with one line,
 * the counters the workers would have written summed into the result and the
 * live "intervals" reply, trailing empty intervals left out, long lists paged.
 * Needs test_trial_flow's fake port.
 */
static void
test_intervals(void)
{
	json_t *rep, *res, *st, *iv;
	const char *msg;
	uint32_t i, n;

	zl.workers[0].nb_rxq = 1; /* a receiving worker: it gets receive counters */
	rep = EXPECT_OK("{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"rate_pps\":1000},{\"port\":0}]}");
	json_decref(rep);
	msg = EXPECT_ERROR("{\"cmd\":\"intervals\"}");
	CHECK(strstr(msg, "no trial since the last configure") != NULL);
	msg = EXPECT_ERROR("{\"cmd\":\"start\",\"duration_s\":1,\"interval_ms\":0}");
	CHECK(strstr(msg, "interval_ms must be 1..60000") != NULL);
	EXPECT_ERROR("{\"cmd\":\"start\",\"duration_s\":1,\"interval_ms\":60001}");
	EXPECT_ERROR("{\"cmd\":\"start\",\"duration_s\":1,\"interval_ms\":\"10\"}");
	/* catchup_max: at least one frame, a whole number */
	msg = EXPECT_ERROR("{\"cmd\":\"start\",\"duration_s\":1,\"catchup_max\":0}");
	CHECK(strstr(msg, "catchup_max") != NULL);
	EXPECT_ERROR("{\"cmd\":\"start\",\"duration_s\":1,\"catchup_max\":\"5\"}");
	/* the cap: a day of 1 ms intervals is 86.4 M of them; refused with one line, nothing started */
	msg = EXPECT_ERROR("{\"cmd\":\"start\",\"duration_s\":86400,\"interval_ms\":1}");
	CHECK(strstr(msg, "needs 86400000 intervals") != NULL && strstr(msg, "at most 1048576 per stream") != NULL);
	CHECK(!zl_trial_active());
	/* one interval more than 2^20 is refused too */
	msg = EXPECT_ERROR("{\"cmd\":\"start\",\"duration_s\":1048.577,\"interval_ms\":1}");
	CHECK(strstr(msg, "1048577 intervals") != NULL);
	/* frame-count mode: every stream needs a rate (stream 1 is unpaced) */
	msg = EXPECT_ERROR("{\"cmd\":\"start\",\"frames\":100,\"interval_ms\":10}");
	CHECK(strstr(msg, "stream 1 is unpaced") != NULL);
	CHECK(!zl_trial_active());

	/* a 50 ms trial of 10 ms intervals; what the sender and the receiver would have counted */
	rep = EXPECT_OK("{\"cmd\":\"start\",\"duration_s\":0.05,\"drain_ms\":0,\"interval_ms\":10}");
	json_decref(rep);
	n = zl.streams[0].ivl_cur.n;
	CHECK_EQ_U64(n, 5);
	CHECK(zl.streams[0].ivl_tx != NULL && zl.workers[0].rx[1].ivl != NULL);
	if (n != 5 || zl.streams[0].ivl_tx == NULL || zl.workers[0].rx[1].ivl == NULL)
		return;
	CHECK_EQ_U64(zl.streams[0].ivl_cur.len_tsc, 10000000);
	CHECK_EQ_U64(zl.workers[0].ivl_cur.start_tsc, zl.streams[1].ivl_cur.start_tsc);
	/* live, right after start: no interval is final yet */
	rep = EXPECT_OK("{\"cmd\":\"intervals\",\"from\":0}");
	if (rep != NULL) {
		CHECK(str_is(rep, "state", "running"));
		CHECK_EQ_U64(get_i(rep, "final"), 0);
		CHECK_EQ_U64(get_i(rep, "to"), 0);
		CHECK_EQ_U64(json_array_size(json_object_get(rep, "streams")), 2);
		json_decref(rep);
	}
	/* stream 0: 10 per interval for 4 intervals, interval 2 lost 7; 1 frame not placed */
	for (i = 0; i < 4; i++) {
		uint64_t tx = zl.streams[0].ivl_cur.start_tsc + i * 10000000ull + 5;

		zl.streams[0].ivl_tx[zl_ivl_index(&zl.streams[0].ivl_cur, tx)] += 10;
		zl.workers[0].rx[0].ivl[zl_ivl_index(&zl.workers[0].ivl_cur,
			zl_ivl_tx_tsc(tx + 100000, (uint32_t)tx))] += i == 2 ? 3 : 10;
	}
	zl.workers[0].rx[0].ivl[n] = 1;
	zl.streams[0].tx_pkts = 40;
	zl.streams[1].ivl_tx[0] = 4; /* stream 1: all in interval 0 */
	zl.workers[0].rx[1].ivl[0] = 4;
	msg = EXPECT_ERROR("{\"cmd\":\"intervals\",\"stream\":2}");
	CHECK(strstr(msg, "stream 2 is not configured") != NULL);
	EXPECT_ERROR("{\"cmd\":\"intervals\",\"from\":-1}");
	rep = EXPECT_OK("{\"cmd\":\"stop\"}");
	json_decref(rep);
	worker_ack();
	rep = EXPECT_OK("{\"cmd\":\"result\",\"wait_s\":5}");
	res = rep ? json_object_get(rep, "result") : NULL;
	st = json_array_get(json_object_get(res, "streams"), 0);
	iv = json_object_get(st, "intervals");
	CHECK(json_is_object(iv));
	if (json_is_object(iv)) {
		CHECK_EQ_U64(get_i(iv, "ms"), 10);
		CHECK_EQ_U64(json_array_size(json_object_get(iv, "tx")), 4); /* the empty 5th left out */
		CHECK_EQ_U64(json_integer_value(json_array_get(json_object_get(iv, "tx"), 2)), 10);
		CHECK_EQ_U64(json_integer_value(json_array_get(json_object_get(iv, "rx"), 2)), 3);
		CHECK_EQ_U64(sum_list(json_object_get(iv, "tx")), get_i(st, "tx_pkts"));
		CHECK_EQ_U64(sum_list(json_object_get(iv, "rx")), 33);
		CHECK_EQ_U64(get_i(iv, "rx_unplaced"), 1);
		CHECK(json_object_get(iv, "paged") == NULL);
	}
	iv = json_object_get(json_array_get(json_object_get(res, "streams"), 1), "intervals");
	CHECK_EQ_U64(json_array_size(json_object_get(iv, "rx")), 1);
	json_decref(rep);
	/* after the trial: every interval is final; from the 2nd on, one stream */
	rep = EXPECT_OK("{\"cmd\":\"intervals\",\"stream\":0,\"from\":1}");
	if (rep != NULL) {
		CHECK(str_is(rep, "state", "done"));
		CHECK_EQ_U64(get_i(rep, "final"), 4);
		CHECK_EQ_U64(get_i(rep, "from"), 1);
		CHECK_EQ_U64(get_i(rep, "to"), 4);
		CHECK_EQ_U64(get_i(rep, "ms"), 10);
		st = json_array_get(json_object_get(rep, "streams"), 0);
		CHECK_EQ_U64(json_array_size(json_object_get(rep, "streams")), 1);
		CHECK_EQ_U64(get_i(st, "id"), 0);
		CHECK_EQ_U64(sum_list(json_object_get(st, "tx")), 30);
		CHECK_EQ_U64(sum_list(json_object_get(st, "rx")), 23);
		CHECK_EQ_U64(get_i(st, "rx_unplaced"), 1);
		json_decref(rep);
	}
	rep = EXPECT_OK("{\"cmd\":\"intervals\",\"from\":9}");
	CHECK_EQ_U64(get_i(rep, "to"), 9); /* past the end: empty lists */
	CHECK_EQ_U64(json_array_size(json_object_get(json_array_get(json_object_get(rep, "streams"), 1), "tx")), 0);
	json_decref(rep);

	/* many intervals: the result gives their count, the lists come in pages */
	rep = EXPECT_OK("{\"cmd\":\"start\",\"duration_s\":100,\"drain_ms\":0,\"interval_ms\":1}");
	json_decref(rep);
	n = zl.streams[0].ivl_cur.n;
	CHECK_EQ_U64(n, 100000);
	for (i = 0; i < n && n == 100000; i++) {
		zl.streams[0].ivl_tx[i] = 2;
		zl.streams[1].ivl_tx[i] = 1;
		zl.workers[0].rx[0].ivl[i] = 2;
	}
	rep = EXPECT_OK("{\"cmd\":\"stop\"}");
	json_decref(rep);
	worker_ack();
	rep = EXPECT_OK("{\"cmd\":\"result\",\"wait_s\":5}");
	res = rep ? json_object_get(rep, "result") : NULL;
	iv = json_object_get(json_array_get(json_object_get(res, "streams"), 1), "intervals");
	CHECK(json_is_true(json_object_get(iv, "paged")));
	CHECK_EQ_U64(get_i(iv, "count"), 100000);
	CHECK(json_object_get(iv, "tx") == NULL);
	json_decref(rep);
	{
		uint32_t from = 0, pages = 0;
		uint64_t tx = 0, rx = 0;

		while (pages < 10) {
			char line[96];

			snprintf(line, sizeof(line), "{\"cmd\":\"intervals\",\"from\":%u}", from);
			rep = EXPECT_OK(line);
			if (rep == NULL)
				break;
			pages++;
			st = json_array_get(json_object_get(rep, "streams"), 0);
			CHECK(json_array_size(json_object_get(st, "tx")) <= ZL_IVL_PAGE / 2);
			tx += sum_list(json_object_get(st, "tx"));
			rx += sum_list(json_object_get(st, "rx"));
			from = (uint32_t)get_i(rep, "to");
			if (get_i(rep, "to") >= get_i(rep, "final")) {
				json_decref(rep);
				break;
			}
			json_decref(rep);
		}
		CHECK_EQ_U64(pages, 4); /* 32768 intervals a page for two streams */
		CHECK_EQ_U64(tx, 200000);
		CHECK_EQ_U64(rx, 200000);
	}
	/* a trial without interval_ms has none */
	rep = EXPECT_OK("{\"cmd\":\"start\",\"frames\":5,\"drain_ms\":0}");
	json_decref(rep);
	CHECK(zl.streams[0].ivl_tx == NULL && zl.workers[0].rx[0].ivl == NULL);
	msg = EXPECT_ERROR("{\"cmd\":\"intervals\"}");
	CHECK(strstr(msg, "has no intervals: start it with interval_ms") != NULL);
	rep = EXPECT_OK("{\"cmd\":\"stop\"}");
	json_decref(rep);
	worker_ack();
	zl_trial_tick();
	rep = EXPECT_OK("{\"cmd\":\"result\"}");
	res = rep ? json_object_get(rep, "result") : NULL;
	CHECK(json_is_object(res) && json_object_get(json_array_get(json_object_get(res, "streams"), 0),
		"intervals") == NULL);
	json_decref(rep);
	/* frame-count mode with rates: TX ends with the grid, sized for 1.5 x the time plus 1 s */
	rep = EXPECT_OK("{\"cmd\":\"start\",\"frames\":1000,\"drain_ms\":0,\"interval_ms\":100,"
		"\"rate_pps\":[1000,500]}");
	json_decref(rep);
	CHECK_EQ_U64(zl.streams[0].ivl_cur.n, 40); /* 2 s at 500 pps: 3 s + 1 s */
	CHECK_EQ_U64(zl.sync.end_tsc, zl.streams[0].ivl_cur.start_tsc + 40 * 100000000ull);
	rep = EXPECT_OK("{\"cmd\":\"stop\"}");
	json_decref(rep);
	worker_ack();
	zl_trial_tick();
	zl.workers[0].nb_rxq = 0;
}

static const char *const valid_lines[] = {
	"{\"cmd\":\"hello\",\"id\":1,\"proto\":1}",
	"{\"cmd\":\"ports\"}",
	"{\"cmd\":\"status\",\"id\":\"x\"}",
	"{\"cmd\":\"configure\",\"idle_sleep_us\":0,\"streams\":[{\"port\":0,\"queue\":0,\"rx_port\":0,"
		"\"rate_pps\":1000000,\"frame_size\":64,\"flows\":16,\"flow_fields\":[\"src_ip\",\"dst_ip\"],"
		"\"src_mac\":\"02:00:00:00:00:01\",\"dst_mac\":\"02:00:00:00:00:02\",\"src_ip\":\"198.18.0.1\","
		"\"dst_ip\":\"198.19.1.1\",\"src_port\":1024,\"dst_port\":1024,\"vlan\":-1,\"vlan_pcp\":0}]}",
	"{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"imix\":[[68,7],[570,4],[1518,1]],\"vlan\":5},"
		"{\"port\":0,\"frame_size\":1518}]}",
	"{\"cmd\":\"configure\",\"streams\":[{\"port\":0,\"vxlan\":{\"vni\":5000,\"src_mac\":\"02:00:00:00:00:01\","
		"\"dst_mac\":\"02:00:00:00:00:02\",\"src_ip\":\"10.0.0.1\",\"dst_ip\":\"10.0.0.2\",\"udp_port\":4789}}]}",
	"{\"cmd\":\"start\",\"trial\":7,\"duration_s\":10,\"drain_ms\":500,\"rate_pps\":500000}",
	"{\"cmd\":\"start\",\"frames\":1000,\"rate_pps\":[1000,2000],\"id\":[1]}",
	"{\"cmd\":\"stop\"}",
	"{\"cmd\":\"result\",\"wait_s\":0}",
	"{\"cmd\":\"start\",\"duration_s\":2,\"drain_ms\":100,\"interval_ms\":10}",
	"{\"cmd\":\"intervals\",\"stream\":0,\"from\":3}",
	"{\"cmd\":\"shutdown\",\"proto\":1}",
};

#define NB_VALID (sizeof(valid_lines) / sizeof(valid_lines[0]))

/* A random JSON value: extreme numbers, wrong types, odd strings. */
static json_t *
random_value(int depth)
{
	static const char *const strs[] = {
		"", "x", "hello", "configure", "02:00:00:00:00:01", "198.18.0.1", "255.255.255.255",
		"src_ip", "dst_port", "\xc3\xa9\xe2\x82\xac", "1e999", "-1", "\\u0000", "a\nb",
	};

	switch (rnd(depth > 2 ? 14 : 16)) {
	case 0: return json_integer(INT64_MAX);
	case 1: return json_integer(INT64_MIN);
	case 2: return json_integer((json_int_t)rnd(70000) - 2);
	case 3: return json_integer(-(json_int_t)rnd(5));
	case 4: return json_integer((json_int_t)1 << rnd(63));
	case 5: return json_real((double)rnd(100000) / (1 + rnd(7)));
	case 6: return json_real(1e300);
	case 7: return json_real(-1e-300);
	case 8: return json_real(9.2233720368547758e18);
	case 9: return json_string(strs[rnd(sizeof(strs) / sizeof(strs[0]))]);
	case 10: return json_null();
	case 11: return json_boolean(rnd(2));
	case 12: return json_integer(rnd(2) ? 65535 : 1048576);
	case 13: return json_real(-0.0);
	case 14: {
		json_t *a = json_array();
		uint32_t n = rnd(4), i;

		for (i = 0; i < n; i++)
			json_array_append_new(a, random_value(depth + 1));
		return a;
	}
	default: {
		json_t *o = json_object();

		json_object_set_new(o, rnd(2) ? "port" : "zz", random_value(depth + 1));
		return o;
	}
	}
}

/* Replaces, deletes or adds members of o and of the objects nested in it. */
static void
mutate_json(json_t *o, int depth)
{
	static const char *const keys[] = {
		"cmd", "id", "proto", "streams", "port", "queue", "rx_port", "rate_pps", "frame_size",
		"imix", "flows", "flow_fields", "src_mac", "dst_mac", "src_ip", "dst_ip", "src_port",
		"dst_port", "vlan", "vlan_pcp", "trial", "duration_s", "frames", "drain_ms", "wait_s",
		"idle_sleep_us", "vxlan", "vni", "udp_port", "bogus",
	};
	const char *key;
	json_t *v;
	void *tmp;

	if (json_is_object(o)) {
		json_object_foreach_safe(o, tmp, key, v) {
			uint32_t r = rnd(10);

			if (key[0] == 'c' && strcmp(key, "cmd") == 0 && rnd(4) != 0)
				continue; /* keep the command most of the time, to reach deeper code */
			if (r == 0)
				json_object_del(o, key);
			else if (r == 1)
				json_object_set_new(o, key, random_value(depth));
			else if (json_is_object(v) || json_is_array(v))
				mutate_json(v, depth + 1);
		}
		if (rnd(4) == 0)
			json_object_set_new(o, keys[rnd(sizeof(keys) / sizeof(keys[0]))], random_value(depth));
	} else if (json_is_array(o)) {
		size_t i;

		json_array_foreach(o, i, v) {
			uint32_t r = rnd(10);

			if (r == 0)
				json_array_set_new(o, i, random_value(depth));
			else if (json_is_object(v) || json_is_array(v))
				mutate_json(v, depth + 1);
		}
		if (rnd(5) == 0)
			json_array_append_new(o, random_value(depth));
	}
}

/* Builds one random request line into buf (at most cap bytes); returns its length. */
static size_t
random_line(char *buf, size_t cap)
{
	const char *base = valid_lines[rnd(NB_VALID)];
	size_t len = 0, i;
	uint32_t mode = rnd(8);

	if (mode == 0) {
		/* random bytes */
		len = rnd(300);
		for (i = 0; i < len; i++)
			buf[i] = (char)rnd(256);
		return len;
	}
	if (mode == 1) {
		/* random JSON-ish tokens */
		static const char *const tok[] = {
			"{", "}", "[", "]", ":", ",", "\"", "\"cmd\"", "\"hello\"", "\"start\"", "\"configure\"",
			"\"streams\"", "\"port\"", "0", "-1", "1e400", "1.5", "null", "true", "\\", "\\u00",
			"\\ud800", " ", "\"id\"", "99999999999999999999", "\xe2\x82", "\xf0\x9f\x98\x80",
		};
		uint32_t n = rnd(40);

		for (i = 0; i < n; i++) {
			const char *t = tok[rnd(sizeof(tok) / sizeof(tok[0]))];
			size_t l = strlen(t);

			if (len + l >= cap)
				break;
			memcpy(buf + len, t, l);
			len += l;
		}
		return len;
	}
	if (mode <= 4) {
		/* byte-level mutations of a valid line: delete, duplicate, replace, insert */
		uint32_t k, nmut = 1 + rnd(5);

		len = strlen(base);
		memcpy(buf, base, len);
		for (k = 0; k < nmut && len > 0; k++) {
			size_t at = rnd((uint32_t)len);

			switch (rnd(4)) {
			case 0:
				memmove(buf + at, buf + at + 1, len - at - 1);
				len--;
				break;
			case 1:
				if (len + 1 < cap) {
					memmove(buf + at + 1, buf + at, len - at);
					len++;
				}
				break;
			case 2:
				buf[at] = (char)rnd(256);
				break;
			default:
				if (len + 1 < cap) {
					memmove(buf + at + 1, buf + at, len - at);
					buf[at] = "0123456789-.e\"{}[],:x"[rnd(21)];
					len++;
				}
				break;
			}
		}
		return len;
	}
	/* structural mutations: valid JSON with odd members and values */
	{
		json_t *o = json_loads(base, 0, NULL);
		char *s;

		mutate_json(o, 0);
		if (rnd(3) == 0)
			mutate_json(o, 0);
		s = json_dumps(o, JSON_COMPACT | (rnd(2) ? JSON_ENSURE_ASCII : 0));
		json_decref(o);
		if (s == NULL)
			return 0;
		len = strlen(s);
		if (len >= cap)
			len = cap - 1;
		memcpy(buf, s, len);
		free(s);
		return len;
	}
}

/* Random and mutated requests: every reply is a well-formed JSON object. */
static void
test_fuzz(uint32_t rounds, int with_port)
{
	static char buf[8192];
	unsigned long fail0 = check_fail, ok = 0, started = 0;
	uint32_t r;

	for (r = 0; r < rounds; r++) {
		size_t len = random_line(buf, sizeof(buf));
		json_t *rep;

		buf[len] = '\0';
		rep = ask_n(buf, len, "fuzz");
		if (rep != NULL && json_is_true(json_object_get(rep, "ok")))
			ok++;
		json_decref(rep);
		if (zl_trial_active()) {
			/* no worker runs: end the trial as shutdown would */
			started++;
			worker_ack();
			zl_trial_abort();
		}
		if (check_fail - fail0 > 20) {
			fprintf(stderr, "fuzz: too many failures, stopping at round %u\n", r);
			break;
		}
	}
	printf("fuzz (%s): %u requests, %lu answered ok, %lu trials started\n",
		with_port ? "one fake port" : "no port", r, ok, started);
	CHECK(ok > 0);
	if (with_port)
		CHECK(started > 0);
}

/*
 * The socket server (zl_ctl_serve) runs in a thread of this process, driven
 * by test clients whose sockets never block: every wait has a deadline, so a
 * server that stalls fails a check instead of hanging the test.
 */

#define TCL_BUF (2u << 20) /* longest reply line a test client takes */

enum { TCL_LINE, TCL_EOF, TCL_TIMEOUT, TCL_ERROR };

/* A test client: its socket and what it received past the last line taken. */
struct tcl {
	int fd;
	size_t len;
	char *buf;
};

static struct {
	pthread_t tid;
	int lfd;
	int ret;
	char dir[32];
	char path[64];
} srv;

static int log_saved = -1;
static char log_path[64];

/* Monotonic time in milliseconds. */
static long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* CPU time the server thread has used, in milliseconds (-1 if unknown). */
static long
srv_cpu_ms(void)
{
	struct timespec ts;
	clockid_t cid;

	if (pthread_getcpuclockid(srv.tid, &cid) != 0 || clock_gettime(cid, &ts) != 0)
		return -1;
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* Sleeps ms milliseconds. */
static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Sends what zlgen writes to stderr into a file until log_end. */
static void
log_begin(void)
{
	int fd;

	fflush(stderr);
	snprintf(log_path, sizeof(log_path), "/tmp/zlctl-log.XXXXXX");
	fd = mkstemp(log_path);
	if (fd < 0) {
		perror("mkstemp");
		return;
	}
	log_saved = dup(2);
	dup2(fd, 2);
	close(fd);
}

/* Restores stderr and echoes the log there; returns the log (static, NUL-terminated). */
static const char *
log_end(void)
{
	static char text[16384];
	ssize_t n = 0;
	int fd;

	text[0] = '\0';
	if (log_saved < 0)
		return text;
	fflush(stderr);
	dup2(log_saved, 2);
	close(log_saved);
	log_saved = -1;
	fd = open(log_path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, text, sizeof(text) - 1);
		close(fd);
	}
	unlink(log_path);
	text[n > 0 ? n : 0] = '\0';
	fprintf(stderr, "%s", text);
	return text;
}

/* Occurrences of needle in hay. */
static unsigned int
count_str(const char *hay, const char *needle)
{
	unsigned int n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

/* Server thread: zl_ctl_serve on the socket test_serve opened. */
static void *
srv_main(void *arg)
{
	(void)arg;
	srv.ret = zl_ctl_serve(srv.lfd, srv.path);
	return NULL;
}

/* Connects a test client to the server; its socket is then made non-blocking. Returns 0 or -1. */
static int
tcl_connect(struct tcl *c)
{
	struct sockaddr_un a;

	memset(c, 0, sizeof(*c));
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", srv.path);
	c->buf = malloc(TCL_BUF);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->buf == NULL || c->fd < 0 || connect(c->fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
			fcntl(c->fd, F_SETFL, O_NONBLOCK) < 0) {
		fprintf(stderr, "test client: cannot connect to %s: %s\n", srv.path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Closes a test client (no request, no wait). */
static void
tcl_close(struct tcl *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	c->fd = -1;
	c->buf = NULL;
}

/* Sends n bytes within timeout_ms; returns 0, or -1 with errno (EPIPE: closed by zlgen; ETIMEDOUT). */
static int
tcl_send(struct tcl *c, const char *s, size_t n, long timeout_ms)
{
	long end = now_ms() + timeout_ms;
	size_t off = 0;

	while (off < n) {
		ssize_t w = send(c->fd, s + off, n - off, MSG_NOSIGNAL);
		struct pollfd p = { c->fd, POLLOUT, 0 };

		if (w > 0) {
			off += (size_t)w;
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		if (now_ms() >= end) {
			errno = ETIMEDOUT;
			return -1;
		}
		poll(&p, 1, (int)(end - now_ms()));
	}
	return 0;
}

/* Waits up to timeout_ms for one line; TCL_LINE sets *line (malloc'd, no newline), else why not. */
static int
tcl_line(struct tcl *c, long timeout_ms, char **line)
{
	long end = now_ms() + timeout_ms;

	*line = NULL;
	for (;;) {
		char *nl = memchr(c->buf, '\n', c->len);
		struct pollfd p = { c->fd, POLLIN, 0 };
		ssize_t r;

		if (nl != NULL) {
			size_t l = (size_t)(nl - c->buf);

			*line = malloc(l + 1);
			memcpy(*line, c->buf, l);
			(*line)[l] = '\0';
			memmove(c->buf, nl + 1, c->len - l - 1);
			c->len -= l + 1;
			return TCL_LINE;
		}
		if (c->len == TCL_BUF)
			return TCL_ERROR;
		r = recv(c->fd, c->buf + c->len, TCL_BUF - c->len, 0);
		if (r > 0) {
			c->len += (size_t)r;
			continue;
		}
		/* zlgen closing a socket with requests unread resets it, after the replies it holds */
		if (r == 0 || errno == ECONNRESET)
			return TCL_EOF;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return TCL_ERROR;
		if (now_ms() >= end)
			return TCL_TIMEOUT;
		poll(&p, 1, (int)(end - now_ms()));
	}
}

/* Reads one reply line within timeout_ms and parses it; NULL (and a note) if none came. */
static json_t *
tcl_reply(struct tcl *c, long timeout_ms, const char *where)
{
	static const char *const why[] = { "a line", "end of stream", "timeout", "error" };
	char *line;
	int st = tcl_line(c, timeout_ms, &line);
	json_t *rep;

	if (st != TCL_LINE) {
		fprintf(stderr, "%s: no reply: %s\n", where, why[st]);
		return NULL;
	}
	rep = json_loads(line, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(rep))
		fprintf(stderr, "%s: reply is not a JSON object: %.200s\n", where, line);
	free(line);
	return rep;
}

/* Sends a request line (newline added) and returns the parsed reply, or NULL. */
static json_t *
tcl_ask(struct tcl *c, const char *req, long timeout_ms, const char *where)
{
	if (tcl_send(c, req, strlen(req), timeout_ms) < 0 || tcl_send(c, "\n", 1, timeout_ms) < 0) {
		fprintf(stderr, "%s: cannot send: %s\n", where, strerror(errno));
		return NULL;
	}
	return tcl_reply(c, timeout_ms, where);
}

/* Reads until the server closes the stream; returns 1 if it did within timeout_ms, counts the bytes. */
static int
tcl_drain(struct tcl *c, long timeout_ms, size_t *bytes)
{
	long end = now_ms() + timeout_ms;

	*bytes = c->len;
	c->len = 0;
	for (;;) {
		ssize_t r = recv(c->fd, c->buf, TCL_BUF, 0);
		struct pollfd p = { c->fd, POLLIN, 0 };

		if (r > 0) {
			*bytes += (size_t)r;
			continue;
		}
		if (r == 0 || errno == ECONNRESET)
			return 1;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return 0;
		if (now_ms() >= end)
			return 0;
		poll(&p, 1, (int)(end - now_ms()));
	}
}

#define WHERE __FILE__ ":" RTE_STR(__LINE__)

/* A hello request whose id is a string of idlen copies of ch, with its newline; returns its length. */
static size_t
big_hello(char *buf, size_t idlen, char ch)
{
	size_t n = (size_t)sprintf(buf, "{\"cmd\":\"hello\",\"id\":\"");

	memset(buf + n, ch, idlen);
	n += idlen;
	n += (size_t)sprintf(buf + n, "\"}\n");
	return n;
}

/* True if the reply is an error whose message holds want. */
static int
error_has(json_t *rep, const char *want)
{
	json_t *e = rep ? json_object_get(rep, "error") : NULL;

	if (json_is_false(json_object_get(rep, "ok")) && json_is_string(e) &&
			strstr(json_string_value(e), want) != NULL)
		return 1;
	fprintf(stderr, "  expected an error with \"%s\", got %s\n", want,
		json_is_string(e) ? json_string_value(e) : "no error");
	return 0;
}

/* A line of exactly ZL_CTL_MAX_LINE bytes is served; one byte more is refused, naming the limit. */
static void
test_serve_line_limit(void)
{
	static const char head[] = "{\"cmd\":\"hello\",\"id\":\"max\"}";
	static const char next[] = "{\"cmd\":\"status\",\"id\":2}\n";
	const size_t max = ZL_CTL_MAX_LINE;
	char *big = malloc(2 * max + 64), limit[32];
	struct tcl c;
	json_t *rep;
	size_t n;

	snprintf(limit, sizeof(limit), "%zu bytes", max);
	if (big == NULL || tcl_connect(&c) < 0) {
		CHECK(0);
		free(big);
		return;
	}
	/* exactly the limit: a request padded with spaces (JSON whitespace) */
	memset(big, ' ', max);
	memcpy(big, head, sizeof(head) - 1);
	big[max] = '\n';
	CHECK(tcl_send(&c, big, max + 1, 5000) == 0);
	rep = tcl_reply(&c, 5000, WHERE);
	CHECK(reply_ok_is(rep, 1) && str_is(rep, "id", "max"));
	json_decref(rep);

	/* the same, its newline sent apart: the server's buffer is full to the limit when it comes */
	CHECK(tcl_send(&c, big, max, 5000) == 0);
	sleep_ms(100);
	CHECK(tcl_send(&c, "\n", 1, 5000) == 0);
	rep = tcl_reply(&c, 5000, WHERE);
	CHECK(reply_ok_is(rep, 1) && str_is(rep, "id", "max"));
	json_decref(rep);

	/* one byte over: an error that states the limit, then the next line is served */
	memset(big, ' ', max + 1);
	memcpy(big, head, sizeof(head) - 1);
	big[max + 1] = '\n';
	memcpy(big + max + 2, next, sizeof(next) - 1);
	CHECK(tcl_send(&c, big, max + 2 + sizeof(next) - 1, 5000) == 0);
	rep = tcl_reply(&c, 5000, WHERE);
	CHECK(error_has(rep, limit));
	json_decref(rep);
	rep = tcl_reply(&c, 5000, WHERE);
	CHECK(reply_ok_is(rep, 1) && get_i(rep, "id") == 2);
	json_decref(rep);

	/* one byte over with the newline apart, and a line over twice the limit: one error each */
	CHECK(tcl_send(&c, big, max + 1, 5000) == 0);
	sleep_ms(100);
	CHECK(tcl_send(&c, "\n", 1, 5000) == 0);
	rep = tcl_reply(&c, 5000, WHERE);
	CHECK(error_has(rep, limit));
	json_decref(rep);
	n = 2 * max + 10;
	memset(big, 'x', n);
	big[n++] = '\n';
	memcpy(big + n, next, sizeof(next) - 1);
	n += sizeof(next) - 1;
	CHECK(tcl_send(&c, big, n, 5000) == 0);
	rep = tcl_reply(&c, 5000, WHERE);
	CHECK(error_has(rep, limit));
	json_decref(rep);
	rep = tcl_reply(&c, 5000, WHERE);
	CHECK(reply_ok_is(rep, 1) && get_i(rep, "id") == 2);
	json_decref(rep);
	tcl_close(&c);
	free(big);
}

/*
 * A client that reads late gets every reply whole, even replies far larger than a
 * socket buffer; while its output waits, the server sleeps instead of spinning.
 */
static void
test_serve_slow_reader(void)
{
	const size_t idlen = 900 * 1024; /* 3 replies: 2.7 MB, under ZL_CTL_MAX_OUT */
	char *req = malloc(idlen + 64);
	struct tcl c;
	long cpu0, cpu1;
	int k;

	if (req == NULL || tcl_connect(&c) < 0) {
		CHECK(0);
		free(req);
		return;
	}
	for (k = 0; k < 3; k++)
		CHECK(tcl_send(&c, req, big_hello(req, idlen, (char)('a' + k)), 5000) == 0);
	sleep_ms(200); /* the server has read and answered all three */
	cpu0 = srv_cpu_ms();
	sleep_ms(300);
	cpu1 = srv_cpu_ms();
	CHECK(cpu0 >= 0 && cpu1 - cpu0 < 100);
	if (cpu1 - cpu0 >= 100)
		fprintf(stderr, "  server thread used %ld ms of CPU in 300 ms with output pending\n", cpu1 - cpu0);
	for (k = 0; k < 3; k++) {
		json_t *rep = tcl_reply(&c, 5000, WHERE);
		json_t *id = rep ? json_object_get(rep, "id") : NULL;

		CHECK(reply_ok_is(rep, 1));
		CHECK(json_is_string(id) && json_string_length(id) == idlen &&
			json_string_value(id)[0] == 'a' + k && json_string_value(id)[idlen - 1] == 'a' + k);
		json_decref(rep);
	}
	tcl_close(&c);
	free(req);
}

/* A client that half-closes after its requests (as socat does) still gets every reply, then EOF. */
static void
test_serve_half_close(void)
{
	const size_t idlen = 600 * 1024; /* more than a socket buffer: sent after the EOF was read */
	char *req = malloc(idlen + 64), *line;
	struct tcl c;
	json_t *rep;
	int k;

	if (req == NULL || tcl_connect(&c) < 0) {
		CHECK(0);
		free(req);
		return;
	}
	for (k = 0; k < 2; k++)
		CHECK(tcl_send(&c, req, big_hello(req, idlen, (char)('p' + k)), 5000) == 0);
	CHECK(shutdown(c.fd, SHUT_WR) == 0);
	sleep_ms(100);
	for (k = 0; k < 2; k++) {
		json_t *id;

		rep = tcl_reply(&c, 5000, WHERE);
		id = rep ? json_object_get(rep, "id") : NULL;
		CHECK(reply_ok_is(rep, 1) && json_is_string(id) && json_string_length(id) == idlen &&
			json_string_value(id)[0] == 'p' + k);
		json_decref(rep);
	}
	CHECK(tcl_line(&c, 2000, &line) == TCL_EOF);
	free(line);
	tcl_close(&c);
	free(req);
}

/*
 * A client that never reads does not stall the others; once its unsent replies
 * pass ZL_CTL_MAX_OUT it is dropped. Idle clients cost the server no CPU.
 */
static void
test_serve_stuck_reader(void)
{
	const size_t idlen = 512 * 1024; /* 12 replies: 6 MiB */
	char *req = malloc(idlen + 64);
	struct tcl c, d;
	json_t *rep;
	size_t n, got = 0;
	long t0, cpu0, cpu1;
	int k, sent = 0, err = 0;

	if (req == NULL || tcl_connect(&c) < 0 || tcl_connect(&d) < 0) {
		CHECK(0);
		free(req);
		return;
	}
	rep = tcl_ask(&d, "{\"cmd\":\"hello\"}", 2000, WHERE);
	CHECK(reply_ok_is(rep, 1));
	json_decref(rep);
	/* two idle clients: poll sleeps (no POLLOUT asked for without pending output) */
	cpu0 = srv_cpu_ms();
	sleep_ms(300);
	cpu1 = srv_cpu_ms();
	CHECK(cpu0 >= 0 && cpu1 - cpu0 < 50);
	if (cpu1 - cpu0 >= 50)
		fprintf(stderr, "  server thread used %ld ms of CPU in 300 ms, idle\n", cpu1 - cpu0);

	/* c asks for 3 MiB and reads none of it; d is answered at once meanwhile */
	n = big_hello(req, idlen, 'c');
	for (k = 0; k < 6; k++)
		CHECK(tcl_send(&c, req, n, 3000) == 0);
	t0 = now_ms();
	rep = tcl_ask(&d, "{\"cmd\":\"status\",\"id\":\"d\"}", 2000, WHERE);
	CHECK(reply_ok_is(rep, 1) && str_is(rep, "id", "d"));
	CHECK(now_ms() - t0 < 1000);
	json_decref(rep);

	/* 3 MiB more: over the limit, c is dropped (its later sends may fail) */
	for (k = 0; k < 6 && err == 0; k++) {
		if (tcl_send(&c, req, n, 3000) < 0)
			err = errno;
		else
			sent++;
	}
	CHECK(err == 0 || err == EPIPE || err == ECONNRESET);
	if (err != 0 && err != EPIPE && err != ECONNRESET)
		fprintf(stderr, "  sending to the stuck client: %s after %d requests\n", strerror(err), sent);
	t0 = now_ms();
	rep = tcl_ask(&d, "{\"cmd\":\"status\",\"id\":\"d2\"}", 2000, WHERE);
	CHECK(reply_ok_is(rep, 1) && str_is(rep, "id", "d2"));
	CHECK(now_ms() - t0 < 1000);
	json_decref(rep);
	/* c reaches the end of its stream without all of its replies */
	CHECK(tcl_drain(&c, 5000, &got) == 1);
	CHECK(got < 12 * (idlen + 100));
	tcl_close(&c);
	tcl_close(&d);
	free(req);
}

/* The clients past ZL_CTL_MAX_CLIENTS get one error line and are closed; a freed slot is reused. */
static void
test_serve_too_many(void)
{
	struct tcl c[ZL_CTL_MAX_CLIENTS + 2];
	char want[64], *line;
	json_t *rep;
	int i;

	snprintf(want, sizeof(want), "too many control clients (%d connected)", ZL_CTL_MAX_CLIENTS);
	for (i = 0; i < ZL_CTL_MAX_CLIENTS; i++) {
		/* a reply proves the client has its slot */
		CHECK(tcl_connect(&c[i]) == 0);
		rep = tcl_ask(&c[i], "{\"cmd\":\"hello\"}", 2000, WHERE);
		CHECK(reply_ok_is(rep, 1));
		json_decref(rep);
	}
	for (i = ZL_CTL_MAX_CLIENTS; i < ZL_CTL_MAX_CLIENTS + 2; i++) {
		CHECK(tcl_connect(&c[i]) == 0);
		/* the last asks first, as a usual client does: the send may fail, the reply is there */
		if (i == ZL_CTL_MAX_CLIENTS + 1)
			tcl_send(&c[i], "{\"cmd\":\"hello\"}\n", 16, 1000);
		rep = tcl_reply(&c[i], 2000, WHERE);
		CHECK(error_has(rep, want));
		json_decref(rep);
		CHECK(tcl_line(&c[i], 2000, &line) == TCL_EOF);
		free(line);
		tcl_close(&c[i]);
	}
	/* a client that left frees its slot for the next one */
	tcl_close(&c[0]);
	CHECK(tcl_connect(&c[0]) == 0);
	rep = tcl_ask(&c[0], "{\"cmd\":\"hello\",\"id\":0}", 2000, WHERE);
	CHECK(reply_ok_is(rep, 1) && get_i(rep, "id") == 0);
	json_decref(rep);
	for (i = 0; i < ZL_CTL_MAX_CLIENTS; i++)
		tcl_close(&c[i]);
}

/* Serves a socket in a thread, runs the socket tests against it, shuts it down by request. */
static void
test_serve(void)
{
	struct tcl c;
	json_t *rep;
	const char *log;
	char *line;
	struct timespec ts;
	int ok;

	snprintf(srv.dir, sizeof(srv.dir), "/tmp/zlctl.XXXXXX");
	if (mkdtemp(srv.dir) == NULL) {
		perror("mkdtemp");
		CHECK(0);
		return;
	}
	snprintf(srv.path, sizeof(srv.path), "%s/ctl", srv.dir);
	srv.lfd = zl_ctl_open(srv.path);
	CHECK(srv.lfd >= 0);
	if (srv.lfd < 0 || pthread_create(&srv.tid, NULL, srv_main, NULL) != 0) {
		CHECK(0);
		return;
	}
	log_begin();
	test_serve_line_limit();
	test_serve_slow_reader();
	test_serve_half_close();
	test_serve_stuck_reader();
	test_serve_too_many();

	/* shutdown is answered before the server stops, and the socket is removed */
	ok = tcl_connect(&c) == 0;
	CHECK(ok);
	rep = ok ? tcl_ask(&c, "{\"cmd\":\"shutdown\",\"id\":\"bye\"}", 2000, WHERE) : NULL;
	CHECK(reply_ok_is(rep, 1) && str_is(rep, "id", "bye"));
	json_decref(rep);
	CHECK(ok && tcl_line(&c, 2000, &line) == TCL_EOF);
	free(line);
	tcl_close(&c);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	if (pthread_timedjoin_np(srv.tid, NULL, &ts) != 0) {
		CHECK(0);
		fprintf(stderr, "the server did not stop on shutdown\n");
		zl.quit = 1;
		pthread_join(srv.tid, NULL);
		zl.quit = 0;
	}
	CHECK_EQ_U64(srv.ret, 0);
	CHECK(access(srv.path, F_OK) != 0);
	rmdir(srv.dir);
	log = log_end();
	/* one line for the dropped client, one for each refused one */
	CHECK_EQ_U64(count_str(log, "does not read its replies"), 1);
	CHECK_EQ_U64(count_str(log, "refused a control client: too many control clients"), 2);
}

/* zl_ctl_open: a socket path of 107 bytes works; what cannot be served fails with one line why. */
static void
test_ctl_open(void)
{
	char dir[] = "/tmp/zlctl.XXXXXX", path[160];
	struct stat st;
	const char *log;
	size_t n;
	int fd;

	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		CHECK(0);
		return;
	}
	log_begin();
	/* 108 bytes: sun_path has no room left for the NUL */
	n = (size_t)snprintf(path, sizeof(path), "%s/", dir);
	memset(path + n, 'p', 108 - n);
	path[108] = '\0';
	CHECK(zl_ctl_open(path) == -1);
	CHECK(access(path, F_OK) != 0);
	/* 107 bytes: the longest that fits; a socket of mode 0600 */
	path[107] = '\0';
	fd = zl_ctl_open(path);
	CHECK(fd >= 0);
	CHECK(lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0600);
	if (fd >= 0)
		zl_ctl_close(fd, path);
	CHECK(access(path, F_OK) != 0);
	/* a directory that does not exist */
	snprintf(path, sizeof(path), "%s/missing/ctl", dir);
	CHECK(zl_ctl_open(path) == -1);
	/* a file that is not a socket is neither used nor deleted */
	snprintf(path, sizeof(path), "%s/file", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	close(fd);
	CHECK(zl_ctl_open(path) == -1);
	CHECK(access(path, F_OK) == 0);
	unlink(path);
	CHECK(zl_ctl_open("") == -1);
	rmdir(dir);
	log = log_end();

	/* one line each, naming the fault */
	CHECK_EQ_U64(count_str(log, "\n"), 4);
	CHECK(strstr(log, "is 108 bytes, longer than the 107 a UNIX socket allows") != NULL);
	CHECK(strstr(log, "missing/ctl") != NULL && strstr(log, strerror(ENOENT)) != NULL);
	CHECK(strstr(log, "exists and is not a socket") != NULL);
	CHECK(strstr(log, "empty") != NULL);
}

/* Runs the control protocol tests and prints the summary line. */
int
main(void)
{
	/* DPDK libraries log through rte_log, which needs no EAL; keep the test output readable */
	rte_log_set_global_level(RTE_LOG_EMERG);

	zl.hz = 1000000000;
	zl.ns_mult = (uint64_t)1 << 32;
	zl.gap_tsc = 50000;
	zl.nb_ports = 0;
	zl.nb_workers = 1;
	/* struct zl_stream is cache-line aligned (main.c uses rte_zmalloc) */
	zl.streams = aligned_alloc(RTE_CACHE_LINE_SIZE, ZL_MAX_STREAMS * sizeof(struct zl_stream));
	zl.workers[0].rx = calloc(ZL_MAX_STREAMS, sizeof(struct zl_rx_stream));
	if (zl.streams == NULL || zl.workers[0].rx == NULL) {
		perror("alloc");
		return 2;
	}
	memset(zl.streams, 0, ZL_MAX_STREAMS * sizeof(struct zl_stream));

	test_requests();
	test_fuzz(20000, 0);
	test_ctl_open();
	test_serve();
	test_trial_flow();
	test_intervals();
	/* again with a port, so that configure and start can succeed; result never waits */
	zl.quit = 1;
	test_fuzz(20000, 1);
	printf("%lu requests answered\n", nb_replies);
	return check_report();
}
