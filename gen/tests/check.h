/* SPDX-License-Identifier: BSD-3-Clause */
/* Minimal assertion helpers shared by the zlgen unit tests. */
#ifndef ZL_CHECK_H
#define ZL_CHECK_H

#include <inttypes.h>
#include <stddef.h>
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

/* Reads a big-endian 16-bit value. */
static inline uint32_t
be16_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

/* Reads a big-endian 32-bit value. */
static inline uint32_t
be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Internet checksum of RFC 1071 over len bytes (0 when a header with its checksum verifies). */
static inline uint16_t
rfc1071(const uint8_t *p, size_t len)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint64_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (uint64_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum & 0xffff;
}

/* Prints the summary line; returns the process exit status. */
static inline int
check_report(void)
{
	printf("%lu passed, %lu failed\n", check_pass, check_fail);
	return check_fail ? 1 : 0;
}

#endif
