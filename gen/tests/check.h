/* SPDX-License-Identifier: BSD-3-Clause */
/* Minimal assertion helpers shared by the zlgen unit tests. */
#ifndef ZL_CHECK_H
#define ZL_CHECK_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

static unsigned long check_pass;
static unsigned long check_fail;

/* Counts one check; prints where it failed. */
#define CHECK(cond) do { \
	if (cond) { \
		check_pass++; \
	} else { \
		check_fail++; \
		fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
	} \
} while (0)

/* Counts one equality check of two unsigned 64-bit values; prints both on failure. */
#define CHECK_EQ_U64(a, b) do { \
	uint64_t check_a_ = (uint64_t)(a), check_b_ = (uint64_t)(b); \
	if (check_a_ == check_b_) { \
		check_pass++; \
	} else { \
		check_fail++; \
		fprintf(stderr, "%s:%d: CHECK_EQ_U64 failed: %s == %s: %" PRIu64 " != %" PRIu64 \
			" (0x%" PRIx64 " != 0x%" PRIx64 ")\n", __FILE__, __LINE__, #a, #b, \
			check_a_, check_b_, check_a_, check_b_); \
	} \
} while (0)

/* Prints the summary line; returns the process exit status. */
static inline int
check_report(void)
{
	printf("%lu passed, %lu failed\n", check_pass, check_fail);
	return check_fail ? 1 : 0;
}

#endif
