/* zlcores: do the given cores run as independent CPUs, or do they share one physical core?
 *
 * One thread per core, pinned. Each round times every core alone (the others asleep), then all of them
 * together, on an integer kernel that keeps a core's multipliers busy (eight independent multiply-add
 * chains). Two hardware threads of one core (SMT siblings), or two virtual CPUs that a hypervisor runs
 * on one, split that throughput: together each gets about half of what it gets alone or less. Separate
 * cores keep about all of it. No DPDK: run it while nothing else of ours polls these cores.
 *
 * Prints one JSON object: {"cores": [...], "ms": M, "rounds": R, "alone_mops": [...],
 * "together_mops": [...], "ratio": [...]} (per core, the median over rounds; ratio = together / alone). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_CORES 64
#define QUIT (-1)

struct worker {
	alignas(64) pthread_t thread; /* a cache line each: a shared line would slow the workers, not the cores */
	int core;
	int index;
	_Atomic unsigned long long units; /* kernel runs done so far */
	int pin_error;
};

static _Atomic long long running_mask; /* bit i: worker i runs the kernel; QUIT: all leave */

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/* 1000 steps of eight independent chains: 8000 multiply-adds, bound by the core's multiply throughput */
static uint64_t kernel(uint64_t seed)
{
	uint64_t a = seed, b = seed + 1, c = seed + 2, d = seed + 3, e = seed + 4, f = seed + 5, g = seed + 6,
		 h = seed + 7;
	for (int k = 0; k < 1000; k++) {
		a = a * 3 + 1; b = b * 5 + 3; c = c * 7 + 5; d = d * 9 + 7;
		e = e * 11 + 9; f = f * 13 + 11; g = g * 15 + 13; h = h * 17 + 15;
		/* opaque to the compiler: no closed form, no vectors; the chains stay eight scalar ones */
		__asm__ volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e), "+r"(f), "+r"(g), "+r"(h));
	}
	return a ^ b ^ c ^ d ^ e ^ f ^ g ^ h;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(w->core, &set);
	w->pin_error = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
	uint64_t seed = (uint64_t)w->core + 1;
	for (;;) {
		long long mask = atomic_load(&running_mask);
		if (mask == QUIT)
			return NULL;
		if (!(mask >> w->index & 1)) {
			usleep(500); /* asleep: leaves the core to the others */
			continue;
		}
		seed ^= kernel(seed);
		/* only this worker writes its count */
		atomic_store_explicit(&w->units, atomic_load_explicit(&w->units, memory_order_relaxed) + 1,
				      memory_order_relaxed);
	}
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* kernel runs per second of each worker in mask over ms milliseconds */
static void measure(struct worker *w, int n, long long mask, int ms, double *rate)
{
	atomic_store(&running_mask, mask);
	usleep(20000); /* every worker of the mask is running */
	unsigned long long start[MAX_CORES];
	for (int i = 0; i < n; i++)
		start[i] = atomic_load(&w[i].units);
	double t0 = now_s();
	usleep((useconds_t)ms * 1000);
	double dt = now_s() - t0;
	for (int i = 0; i < n; i++)
		rate[i] = (atomic_load(&w[i].units) - start[i]) / dt;
	atomic_store(&running_mask, 0);
}

static int usage(const char *why)
{
	fprintf(stderr, "zlcores: %s\nusage: zlcores --cores 0,1[,...] [--ms 100] [--rounds 3]\n", why);
	return 2;
}

int main(int argc, char **argv)
{
	int cores[MAX_CORES], n = 0, ms = 100, rounds = 3;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--cores") && i + 1 < argc) {
			char *p = argv[++i], *end;
			while (*p) {
				long c = strtol(p, &end, 10);
				if (end == p || c < 0 || c >= CPU_SETSIZE || n == MAX_CORES)
					return usage("--cores takes a comma-separated list of core numbers");
				cores[n++] = (int)c;
				p = *end == ',' ? end + 1 : end;
				if (*end && *end != ',')
					return usage("--cores takes a comma-separated list of core numbers");
			}
		} else if (!strcmp(argv[i], "--ms") && i + 1 < argc) {
			ms = atoi(argv[++i]);
			if (ms < 10 || ms > 10000)
				return usage("--ms must be 10..10000");
		} else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
			rounds = atoi(argv[++i]);
			if (rounds < 1 || rounds > 100)
				return usage("--rounds must be 1..100");
		} else {
			return usage("unknown argument");
		}
	}
	if (n < 2)
		return usage("--cores needs at least two cores");

	struct worker w[MAX_CORES];
	memset(w, 0, sizeof w);
	for (int i = 0; i < n; i++) {
		w[i].core = cores[i];
		w[i].index = i;
		if (pthread_create(&w[i].thread, NULL, work, &w[i]) != 0) {
			fprintf(stderr, "zlcores: cannot start a thread: %s\n", strerror(errno));
			return 1;
		}
	}
	usleep(20000);
	int status = 0;
	for (int i = 0; i < n; i++)
		if (w[i].pin_error) {
			fprintf(stderr, "zlcores: cannot run on core %d: %s\n", w[i].core, strerror(w[i].pin_error));
			status = 1;
		}

	static double alone[MAX_CORES][100], together[MAX_CORES][100];
	double rate[MAX_CORES];
	for (int r = 0; r < rounds && !status; r++) {
		for (int i = 0; i < n; i++) {
			measure(w, n, 1LL << i, ms, rate);
			alone[i][r] = rate[i];
		}
		measure(w, n, (1LL << n) - 1, ms, rate);
		for (int i = 0; i < n; i++)
			together[i][r] = rate[i];
	}
	atomic_store(&running_mask, QUIT);
	for (int i = 0; i < n; i++)
		pthread_join(w[i].thread, NULL);
	if (status)
		return status;

	printf("{\"cores\": [");
	for (int i = 0; i < n; i++)
		printf("%s%d", i ? ", " : "", cores[i]);
	printf("], \"ms\": %d, \"rounds\": %d, \"alone_mops\": [", ms, rounds);
	double a[MAX_CORES], t[MAX_CORES];
	for (int i = 0; i < n; i++) {
		a[i] = median(alone[i], rounds) * 8000 / 1e6; /* 8000 multiply-adds per kernel run */
		t[i] = median(together[i], rounds) * 8000 / 1e6;
		printf("%s%.1f", i ? ", " : "", a[i]);
	}
	printf("], \"together_mops\": [");
	for (int i = 0; i < n; i++)
		printf("%s%.1f", i ? ", " : "", t[i]);
	printf("], \"ratio\": [");
	for (int i = 0; i < n; i++)
		printf("%s%.3f", i ? ", " : "", a[i] > 0 ? t[i] / a[i] : 0.0);
	printf("]}\n");
	return 0;
}
