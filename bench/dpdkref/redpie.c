/*
 * redpie.c: a reference harness that times DPDK's RED and PIE decision
 * helpers (rte_red, rte_pie from librte_sched) plus a minimal C ring, in the
 * scenarios of aqmkit's Go table (bench/packet_test.go, BenchmarkPacket), and
 * prints the results in Go benchmark format.
 *
 * This is aqmkit's own code. It only calls DPDK's public API; no DPDK source
 * is copied here. Build and run it with run.sh beside this file; README.md
 * explains what each row means.
 *
 * One op is one packet through the Go harness's step: advance the virtual
 * clock, build a 32-byte packet, ask the AQM whether to admit it, push it on
 * the ring if admitted, then pop (telling the AQM) while the ring holds more
 * than the scenario's depth. Time is the virtual clock the caller passes in,
 * as in the Go table; the wall clock is read only twice per timed run
 * (clock_gettime(CLOCK_MONOTONIC) around many millions of ops).
 *
 * -mem and -mem-stats add two variants of every row (see "memory variants"
 * below): all state in memory at every packet, and additionally the
 * per-packet counters aqmkit's queues keep.
 */
#define _GNU_SOURCE
#ifndef ALLOW_EXPERIMENTAL_API
#define ALLOW_EXPERIMENTAL_API 1 /* rte_pie's functions are marked experimental */
#endif

#include <errno.h>
#include <sched.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_log.h>
#include <rte_random.h>
#include <rte_red.h>
#include <rte_pie.h>

/* The memory variants' PIE loops are built with the flatten attribute (see
 * run_pie_mem), which would also inline this out-of-line helper of DPDK's
 * header. The normal PIE loop calls it; so that the only difference between
 * the two is where the state lives, this repeats its prototype (DPDK 22.11)
 * with noinline. If a newer header changes its signature, update or drop this
 * line: it affects only the mem and memstats PIE rows. */
static void _calc_drop_probability(const struct rte_pie_config *pie_cfg, struct rte_pie *pie, uint64_t time)
	__attribute__((noinline));

/* pkt mirrors aqm.Packet[uint64] field for field (Payload uint64, Size and
 * Hash uint32, ECN uint8, Enqueued int64 nanoseconds), so one ring slot moves
 * the same 32 bytes as a packet in the Go table. */
struct pkt {
	uint64_t payload;
	uint32_t size;
	uint32_t hash;
	uint8_t ecn;
	int64_t enqueued;
};
_Static_assert(sizeof(struct pkt) == 32, "pkt must be 32 bytes like aqm.Packet[uint64]");

/* ring is a fixed-capacity FIFO shaped like aqmkit's internal/ring: a power
 * of two buffer, a mask, a head index and a count (head and count are kept
 * apart by the mask: adjacent, GCC -O2 merges "head++, n--" into one 8-byte
 * vector update that then stalls on store forwarding behind push's 4-byte
 * store of n, an artefact that would make the C baseline 3x slower), and a
 * slot is cleared on pop. */
#define RING_SIZE 1024u /* power of two, above the 101 packets the scenarios hold */

struct ring {
	struct pkt *buf;
	uint32_t head;
	uint32_t mask;
	uint32_t n;
	uint32_t max;
};

static struct pkt ring_buf[RING_SIZE];

static void ring_reset(struct ring *r)
{
	memset(ring_buf, 0, sizeof ring_buf);
	*r = (struct ring){.buf = ring_buf, .mask = RING_SIZE - 1u, .max = RING_SIZE};
}

/* ring_push stores the packet field by field straight into its slot. (Passing
 * a struct pkt by value makes GCC -O2 build it on the stack with overlapping
 * stores of different widths and copy it with 16-byte loads, which stall on
 * store forwarding: another compiler artefact that would inflate the C
 * baseline.) */
static inline int ring_push(struct ring *r, uint64_t payload, uint32_t size, int64_t enqueued)
{
	if (r->n >= r->max)
		return 0;
	struct pkt *s = &r->buf[(r->head + r->n) & r->mask];
	s->payload = payload;
	s->size = size;
	s->hash = 0; /* one flow, as the scenarios */
	s->ecn = 0;  /* Not-ECT */
	s->enqueued = enqueued;
	r->n++;
	return 1;
}

static inline int ring_pop(struct ring *r, struct pkt *out)
{
	if (r->n == 0)
		return 0;
	uint32_t i = r->head & r->mask;
	*out = r->buf[i];
	memset(&r->buf[i], 0, sizeof r->buf[i]);
	r->head++;
	r->n--;
	return 1;
}

/* Results leave through volatile sinks so the compiler must do every op. */
static volatile uint64_t sink_payload;
static volatile uint64_t sink_signals;

static struct ring rq; /* reused (and reset) by every run */

/* scenario mirrors a row of the Go table's Scenario list. */
struct scenario {
	const char *name;
	uint32_t depth;   /* standing queue kept after each enqueue */
	uint64_t step_ns; /* virtual time between packets */
};

static const struct scenario sc_idle = {"idle", 0, 1000};
static const struct scenario sc_standing = {"standing", 100, 10000};
static const struct scenario sc_congested = {"congested", 100, 1000000};
/* DPDK's PIE estimates the delay as queued packets times the measured time
 * per departed byte, about 1500 times below the real sojourn for 1500-byte
 * packets, so at the Go table's 1 ms per packet it never sees congestion.
 * This extra row slows the clock until its own estimate is above the 15 ms
 * target (100 packets * ~11 s per 16 KiB / 2^14 B ~= 67 ms), so its
 * probability update and drop check run on every packet. */
static const struct scenario sc_pie_est = {"congested-est", 100, 1000000000};

#define PKT_SIZE 1500u
#define WARM_PACKETS 20000u /* untimed steps before each timed run, as in Go */

static uint64_t tsc_hz;
static int verbose; /* -v: print each AQM's final state to stderr */

/* ns_to_cycles converts a virtual step to TSC cycles, the unit rte_pie's
 * configuration is kept in (rte_pie_config_init converts milliseconds with
 * rte_get_tsc_hz). rte_red is given the same unit for uniformity. */
static uint64_t ns_to_cycles(uint64_t ns)
{
	return (uint64_t)((double)ns * (double)tsc_hz / 1e9 + 0.5);
}

static double ts_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* result of one timed run */
struct result {
	double ns_per_op;       /* CLOCK_MONOTONIC, like go test's ns/op */
	double cpu_ns_per_op;   /* CLOCK_THREAD_CPUTIME_ID: excludes time descheduled */
	double signals_per_pkt; /* drops per offered packet, as the Go table's metric */
};

/* A timed run reads both clocks before and after the loop, nothing inside. */
static double t0_wall, t0_cpu;

static void timer_start(void)
{
	t0_cpu = ts_ns(CLOCK_THREAD_CPUTIME_ID);
	t0_wall = ts_ns(CLOCK_MONOTONIC);
}

static struct result timer_stop(uint64_t iters, uint64_t signals)
{
	double wall = ts_ns(CLOCK_MONOTONIC) - t0_wall;
	double cpu = ts_ns(CLOCK_THREAD_CPUTIME_ID) - t0_cpu;
	return (struct result){wall / (double)iters, cpu / (double)iters, (double)signals / (double)iters};
}

/* ---- bare ring: push one, pop one, 100 standing (Go: BenchmarkPacket/ring) ---- */

static __attribute__((noinline)) struct result run_ring(uint64_t iters)
{
	struct ring *r = &rq;
	ring_reset(r);
	for (uint32_t i = 0; i < 100; i++)
		ring_push(r, i, PKT_SIZE, 0);
	uint64_t sum = 0;
	struct pkt p = {0};
	timer_start();
	for (uint64_t i = 0; i < iters; i++) {
		ring_push(r, i, PKT_SIZE, 0);
		ring_pop(r, &p);
		sum += p.payload;
	}
	struct result res = timer_stop(iters, 0);
	sink_payload = sum;
	return res;
}

/* ---- drop-tail FIFO through the harness (Go: BenchmarkPacket/fifo/...) ---- */

#define FIFO_LIMIT 10000u /* as the Go table's FIFO; never reached here */

static __attribute__((noinline)) struct result run_fifo(const struct scenario *sc, uint64_t iters)
{
	struct ring *r = &rq;
	ring_reset(r);
	const uint64_t dt = sc->step_ns;
	const uint32_t depth = sc->depth;
	uint64_t now = 1000000000, seq = 0, sum = 0, drops = 0;
	struct pkt p = {0};

#define FIFO_STEP()                                                            \
	do {                                                                   \
		now += dt;                                                     \
		seq++;                                                         \
		if (r->n < FIFO_LIMIT)                                         \
			ring_push(r, seq, PKT_SIZE, (int64_t)now); \
		else                                                           \
			drops++;                                               \
		while (r->n > depth) {                                         \
			ring_pop(r, &p);                                       \
			sum += p.payload;                                      \
		}                                                              \
	} while (0)

	for (uint32_t i = 0; i < WARM_PACKETS; i++)
		FIFO_STEP();
	drops = 0;
	timer_start();
	for (uint64_t i = 0; i < iters; i++)
		FIFO_STEP();
	struct result res = timer_stop(iters, drops);
#undef FIFO_STEP
	sink_payload = sum;
	sink_signals = drops;
	return res;
}

/* ---- rte_red decision plus the ring ---- */

/* RED parameters. The filter weight 2^-9 (about Floyd's 0.002) and max_p 1/10
 * are the classic choices; the thresholds put a standing queue of 100 packets
 * below min_th ("standing": no drops) or halfway between min_th and max_th
 * ("congested": the probabilistic drop code runs on every packet). */
#define RED_WQ_LOG2 9
#define RED_MAXP_INV 10

static __attribute__((noinline)) struct result run_red(const struct scenario *sc, uint64_t iters)
{
	struct rte_red_config cfg;
	struct rte_red red;
	uint16_t min_th = 200, max_th = 600;
	if (sc == &sc_congested) {
		min_th = 50;
		max_th = 150;
	}
	if (rte_red_config_init(&cfg, RED_WQ_LOG2, min_th, max_th, RED_MAXP_INV) != 0 ||
	    rte_red_rt_data_init(&red) != 0) {
		fprintf(stderr, "redpie: rte_red init failed\n");
		exit(1);
	}
	/* Same random stream every run (rte_red's generator is a global LCG). */
	rte_red_rand_seed = 12345;
	rte_red_rand_val = rte_fast_rand();

	struct ring *r = &rq;
	ring_reset(r);
	const uint64_t dt = ns_to_cycles(sc->step_ns);
	const uint32_t depth = sc->depth;
	uint64_t now = ns_to_cycles(1000000000), seq = 0, sum = 0, drops = 0;
	struct pkt p = {0};

	/* The caller tells rte_red when the queue went empty, so that the next
	 * arrival decays the average over the idle time. */
#define RED_STEP()                                                             \
	do {                                                                   \
		now += dt;                                                     \
		seq++;                                                         \
		if (rte_red_enqueue(&cfg, &red, r->n, now) == 0)               \
			ring_push(r, seq, PKT_SIZE, (int64_t)now); \
		else                                                           \
			drops++;                                               \
		while (r->n > depth) {                                         \
			ring_pop(r, &p);                                       \
			sum += p.payload;                                      \
			if (r->n == 0)                                         \
				rte_red_mark_queue_empty(&red, now);           \
		}                                                              \
	} while (0)

	for (uint32_t i = 0; i < WARM_PACKETS; i++)
		RED_STEP();
	drops = 0;
	timer_start();
	for (uint64_t i = 0; i < iters; i++)
		RED_STEP();
	struct result res = timer_stop(iters, drops);
#undef RED_STEP
	if (verbose)
		fprintf(stderr, "redpie: red/%s end: avg=%.2f packets (min_th %u, max_th %u) count=%u\n",
			sc->name, (double)red.avg / (1u << RTE_RED_SCALING) / (1u << RED_WQ_LOG2), min_th,
			max_th, red.count);
	sink_payload = sum;
	sink_signals = drops;
	return res;
}

/* ---- rte_pie enqueue/dequeue plus the ring ---- */

/* PIE parameters in DPDK's units: RFC 8033's 15 ms target, 15 ms update
 * interval and 150 ms burst allowance; a tail-drop threshold of 500 packets,
 * far above the 101 packets held, which (at DPDK's 10% of it) also switches
 * PIE on once 50 packets are queued, so "standing" and "congested" run with
 * PIE active and "idle" never activates it. */
#define PIE_QDELAY_REF_MS 15
#define PIE_UPDATE_MS 15
#define PIE_MAX_BURST_MS 150
#define PIE_TAILQ_TH 500

static __attribute__((noinline)) struct result run_pie(const struct scenario *sc, uint64_t iters)
{
	struct rte_pie_config cfg;
	struct rte_pie pie;
	if (rte_pie_config_init(&cfg, PIE_QDELAY_REF_MS, PIE_UPDATE_MS, PIE_MAX_BURST_MS, PIE_TAILQ_TH) != 0 ||
	    rte_pie_rt_data_init(&pie) != 0) {
		fprintf(stderr, "redpie: rte_pie init failed\n");
		exit(1);
	}
	rte_srand(12345); /* rte_pie draws from rte_rand */

	struct ring *r = &rq;
	ring_reset(r);
	const uint64_t dt = ns_to_cycles(sc->step_ns);
	const uint32_t depth = sc->depth;
	uint64_t now = ns_to_cycles(1000000000), seq = 0, sum = 0, drops = 0;
	struct pkt p = {0};

	/* rte_pie counts admitted packets itself but leaves the decrement at
	 * dequeue to the caller (as DPDK's own rte_sched does before calling
	 * rte_pie_dequeue). */
#define PIE_STEP()                                                             \
	do {                                                                   \
		now += dt;                                                     \
		seq++;                                                         \
		if (rte_pie_enqueue(&cfg, &pie, r->n, PKT_SIZE, now) == 0)     \
			ring_push(r, seq, PKT_SIZE, (int64_t)now); \
		else                                                           \
			drops++;                                               \
		while (r->n > depth) {                                         \
			ring_pop(r, &p);                                       \
			sum += p.payload;                                      \
			pie.qlen--;                                            \
			pie.qlen_bytes -= p.size;                              \
			rte_pie_dequeue(&pie, p.size, now);                    \
		}                                                              \
	} while (0)

	for (uint32_t i = 0; i < WARM_PACKETS; i++)
		PIE_STEP();
	drops = 0;
	timer_start();
	for (uint64_t i = 0; i < iters; i++)
		PIE_STEP();
	struct result res = timer_stop(iters, drops);
#undef PIE_STEP
	if (verbose)
		fprintf(stderr,
			"redpie: pie/%s end: active=%u drop_prob=%g accu_prob=%g qdelay_old=%" PRIu64
			" cycles (target %" PRIu64 ") burst_allowance=%u qlen=%" PRIu64 "\n",
			sc->name, pie.active, pie.drop_prob, pie.accu_prob, pie.qdelay_old, cfg.qdelay_ref,
			pie.burst_allowance, pie.qlen);
	if (pie.qlen != r->n) {
		fprintf(stderr, "redpie: rte_pie qlen %" PRIu64 " != ring length %u\n", pie.qlen, r->n);
		exit(1);
	}
	sink_payload = sum;
	sink_signals = drops;
	return res;
}

/* ---- memory variants: -mem and -mem-stats ---- */

/*
 * In the rows above, the harness's own loop state (virtual clock, sequence
 * number, payload sum, drop count) lives in registers for the whole timed
 * loop, and the compiler is free to keep there any queue or AQM field it can
 * prove nothing else touches. A queue in a Go program, or in a proxy that
 * does other work between packets, finds its state in memory at every
 * packet. The memory variants put all of that state in static structures
 * (the harness's loop state in md, the AQM state and configuration in
 * mred/mpie, the ring in rq as before) and end every packet with a compiler
 * barrier: an empty asm statement with a "memory" clobber. It emits no
 * instruction, but the compiler must store every field written during the
 * packet before it and load every field read after it, once per packet.
 *
 * The memstats variant also keeps the counters every aqmkit queue keeps per
 * packet (aqm.Stats plus the byte backlog): the largest offered size (a
 * compare and a conditional store), packets and bytes enqueued, dequeued and
 * dropped, and the backlog in bytes.
 */
#define MEM_BARRIER() __asm__ __volatile__("" ::: "memory")

/* drv is the harness's loop state, as the fields of the Go harness's driver. */
struct drv {
	uint64_t now, dt, seq, sum, drops;
	uint32_t depth;
};

/* qstats is the memstats variant's per-queue counters. */
struct qstats {
	uint64_t enq_pkts, enq_bytes;
	uint64_t deq_pkts, deq_bytes;
	uint64_t drop_pkts, drop_bytes;
	int64_t backlog;
	uint32_t max_size;
};

static struct drv md;
static struct qstats mst;
static struct rte_red_config mred_cfg;
static struct rte_red mred;
static struct rte_pie_config mpie_cfg;
static struct rte_pie mpie;

static inline void st_offer(uint32_t size)
{
	if (size > mst.max_size)
		mst.max_size = size;
}

static inline void st_enq(uint32_t size)
{
	mst.enq_pkts++;
	mst.enq_bytes += size;
	mst.backlog += size;
}

static inline void st_deq(uint32_t size)
{
	mst.deq_pkts++;
	mst.deq_bytes += size;
	mst.backlog -= size;
}

static inline void st_drop(uint32_t size)
{
	mst.drop_pkts++;
	mst.drop_bytes += size;
}

/* mem_reset starts a memory-variant run: fresh ring, loop state and
 * counters. */
static void mem_reset(uint64_t start, uint64_t dt, uint32_t depth)
{
	ring_reset(&rq);
	md = (struct drv){.now = start, .dt = dt, .depth = depth};
	mst = (struct qstats){0};
}

/* mem_drops reads the drop count the variant keeps: the harness's own in
 * mem, the queue's counter in memstats. */
static inline uint64_t mem_drops(int stats)
{
	return stats ? mst.drop_pkts : md.drops;
}

/* mem_check verifies the memstats counters against the ring at the end of a
 * run: Enqueued = Dequeued + Len, and the backlog is Len full-size packets. */
static void mem_check(int stats, const char *what)
{
	if (!stats)
		return;
	if (mst.enq_pkts != mst.deq_pkts + rq.n || mst.enq_bytes != mst.deq_bytes + (uint64_t)mst.backlog ||
	    mst.backlog != (int64_t)rq.n * PKT_SIZE || mst.max_size != PKT_SIZE) {
		fprintf(stderr, "redpie: memstats/%s: counters disagree with the ring (n=%u)\n", what, rq.n);
		exit(1);
	}
}

/* The bodies below are instantiated twice each, with stats a constant 0 or 1,
 * so the mem rows carry no test of it. */
#define ALWAYS_INLINE static inline __attribute__((always_inline))

ALWAYS_INLINE struct result ring_mem(uint64_t iters, const int stats)
{
	struct ring *r = &rq;
	mem_reset(0, 0, 100);
	for (uint32_t i = 0; i < 100; i++)
		ring_push(r, i, PKT_SIZE, 0);
	if (stats) {
		for (uint32_t i = 0; i < 100; i++) {
			st_offer(PKT_SIZE);
			st_enq(PKT_SIZE);
		}
	}
	struct pkt p = {0};
	MEM_BARRIER();
	timer_start();
	for (uint64_t i = 0; i < iters; i++) {
		if (stats)
			st_offer(PKT_SIZE);
		ring_push(r, md.seq, PKT_SIZE, 0);
		if (stats)
			st_enq(PKT_SIZE);
		ring_pop(r, &p);
		md.sum += p.payload;
		if (stats)
			st_deq(p.size);
		md.seq++;
		MEM_BARRIER();
	}
	struct result res = timer_stop(iters, 0);
	mem_check(stats, "ring");
	sink_payload = md.sum;
	return res;
}

ALWAYS_INLINE struct result fifo_mem(const struct scenario *sc, uint64_t iters, const int stats)
{
	struct ring *r = &rq;
	mem_reset(1000000000, sc->step_ns, sc->depth);
	struct pkt p = {0};

#define FIFO_MEM_STEP()                                                        \
	do {                                                                   \
		md.now += md.dt;                                               \
		md.seq++;                                                      \
		if (stats)                                                     \
			st_offer(PKT_SIZE);                                    \
		if (r->n < FIFO_LIMIT) {                                       \
			ring_push(r, md.seq, PKT_SIZE, (int64_t)md.now);       \
			if (stats)                                             \
				st_enq(PKT_SIZE);                              \
		} else if (stats) {                                            \
			st_drop(PKT_SIZE);                                     \
		} else {                                                       \
			md.drops++;                                            \
		}                                                              \
		while (r->n > md.depth) {                                      \
			ring_pop(r, &p);                                       \
			md.sum += p.payload;                                   \
			if (stats)                                             \
				st_deq(p.size);                                \
		}                                                              \
		MEM_BARRIER();                                                 \
	} while (0)

	for (uint32_t i = 0; i < WARM_PACKETS; i++)
		FIFO_MEM_STEP();
	uint64_t drops0 = mem_drops(stats);
	timer_start();
	for (uint64_t i = 0; i < iters; i++)
		FIFO_MEM_STEP();
	uint64_t drops = mem_drops(stats) - drops0;
	struct result res = timer_stop(iters, drops);
#undef FIFO_MEM_STEP
	mem_check(stats, "fifo");
	sink_payload = md.sum;
	sink_signals = drops;
	return res;
}

ALWAYS_INLINE struct result red_mem(const struct scenario *sc, uint64_t iters, const int stats)
{
	uint16_t min_th = 200, max_th = 600;
	if (sc == &sc_congested) {
		min_th = 50;
		max_th = 150;
	}
	if (rte_red_config_init(&mred_cfg, RED_WQ_LOG2, min_th, max_th, RED_MAXP_INV) != 0 ||
	    rte_red_rt_data_init(&mred) != 0) {
		fprintf(stderr, "redpie: rte_red init failed\n");
		exit(1);
	}
	rte_red_rand_seed = 12345;
	rte_red_rand_val = rte_fast_rand();

	struct ring *r = &rq;
	mem_reset(ns_to_cycles(1000000000), ns_to_cycles(sc->step_ns), sc->depth);
	struct pkt p = {0};

#define RED_MEM_STEP()                                                         \
	do {                                                                   \
		md.now += md.dt;                                               \
		md.seq++;                                                      \
		if (stats)                                                     \
			st_offer(PKT_SIZE);                                    \
		if (rte_red_enqueue(&mred_cfg, &mred, r->n, md.now) == 0) {    \
			ring_push(r, md.seq, PKT_SIZE, (int64_t)md.now);       \
			if (stats)                                             \
				st_enq(PKT_SIZE);                              \
		} else if (stats) {                                            \
			st_drop(PKT_SIZE);                                     \
		} else {                                                       \
			md.drops++;                                            \
		}                                                              \
		while (r->n > md.depth) {                                      \
			ring_pop(r, &p);                                       \
			md.sum += p.payload;                                   \
			if (stats)                                             \
				st_deq(p.size);                                \
			if (r->n == 0)                                         \
				rte_red_mark_queue_empty(&mred, md.now);       \
		}                                                              \
		MEM_BARRIER();                                                 \
	} while (0)

	for (uint32_t i = 0; i < WARM_PACKETS; i++)
		RED_MEM_STEP();
	uint64_t drops0 = mem_drops(stats);
	timer_start();
	for (uint64_t i = 0; i < iters; i++)
		RED_MEM_STEP();
	uint64_t drops = mem_drops(stats) - drops0;
	struct result res = timer_stop(iters, drops);
#undef RED_MEM_STEP
	if (verbose)
		fprintf(stderr, "redpie: %s/red/%s end: avg=%.2f packets (min_th %u, max_th %u) count=%u\n",
			stats ? "memstats" : "mem", sc->name,
			(double)mred.avg / (1u << RTE_RED_SCALING) / (1u << RED_WQ_LOG2), min_th, max_th,
			mred.count);
	mem_check(stats, "red");
	sink_payload = md.sum;
	sink_signals = drops;
	return res;
}

ALWAYS_INLINE struct result pie_mem(const struct scenario *sc, uint64_t iters, const int stats)
{
	if (rte_pie_config_init(&mpie_cfg, PIE_QDELAY_REF_MS, PIE_UPDATE_MS, PIE_MAX_BURST_MS, PIE_TAILQ_TH) != 0 ||
	    rte_pie_rt_data_init(&mpie) != 0) {
		fprintf(stderr, "redpie: rte_pie init failed\n");
		exit(1);
	}
	rte_srand(12345);

	struct ring *r = &rq;
	mem_reset(ns_to_cycles(1000000000), ns_to_cycles(sc->step_ns), sc->depth);
	struct pkt p = {0};

#define PIE_MEM_STEP()                                                         \
	do {                                                                   \
		md.now += md.dt;                                               \
		md.seq++;                                                      \
		if (stats)                                                     \
			st_offer(PKT_SIZE);                                    \
		if (rte_pie_enqueue(&mpie_cfg, &mpie, r->n, PKT_SIZE, md.now) == 0) { \
			ring_push(r, md.seq, PKT_SIZE, (int64_t)md.now);       \
			if (stats)                                             \
				st_enq(PKT_SIZE);                              \
		} else if (stats) {                                            \
			st_drop(PKT_SIZE);                                     \
		} else {                                                       \
			md.drops++;                                            \
		}                                                              \
		while (r->n > md.depth) {                                      \
			ring_pop(r, &p);                                       \
			md.sum += p.payload;                                   \
			if (stats)                                             \
				st_deq(p.size);                                \
			mpie.qlen--;                                           \
			mpie.qlen_bytes -= p.size;                             \
			rte_pie_dequeue(&mpie, p.size, md.now);                \
		}                                                              \
		MEM_BARRIER();                                                 \
	} while (0)

	for (uint32_t i = 0; i < WARM_PACKETS; i++)
		PIE_MEM_STEP();
	uint64_t drops0 = mem_drops(stats);
	timer_start();
	for (uint64_t i = 0; i < iters; i++)
		PIE_MEM_STEP();
	uint64_t drops = mem_drops(stats) - drops0;
	struct result res = timer_stop(iters, drops);
#undef PIE_MEM_STEP
	if (verbose)
		fprintf(stderr,
			"redpie: %s/pie/%s end: active=%u drop_prob=%g accu_prob=%g qdelay_old=%" PRIu64
			" cycles (target %" PRIu64 ") burst_allowance=%u qlen=%" PRIu64 "\n",
			stats ? "memstats" : "mem", sc->name, mpie.active, mpie.drop_prob, mpie.accu_prob,
			mpie.qdelay_old, mpie_cfg.qdelay_ref, mpie.burst_allowance, mpie.qlen);
	if (mpie.qlen != r->n) {
		fprintf(stderr, "redpie: rte_pie qlen %" PRIu64 " != ring length %u\n", mpie.qlen, r->n);
		exit(1);
	}
	mem_check(stats, "pie");
	sink_payload = md.sum;
	sink_signals = drops;
	return res;
}
#undef ALWAYS_INLINE

static __attribute__((noinline)) struct result run_ring_mem(uint64_t iters) { return ring_mem(iters, 0); }
static __attribute__((noinline)) struct result run_ring_memstats(uint64_t iters) { return ring_mem(iters, 1); }
static __attribute__((noinline)) struct result run_fifo_mem(const struct scenario *sc, uint64_t iters)
{
	return fifo_mem(sc, iters, 0);
}
static __attribute__((noinline)) struct result run_fifo_memstats(const struct scenario *sc, uint64_t iters)
{
	return fifo_mem(sc, iters, 1);
}
static __attribute__((noinline)) struct result run_red_mem(const struct scenario *sc, uint64_t iters)
{
	return red_mem(sc, iters, 0);
}
static __attribute__((noinline)) struct result run_red_memstats(const struct scenario *sc, uint64_t iters)
{
	return red_mem(sc, iters, 1);
}
/* Without flatten, the extra call sites of rte_pie_enqueue in these loops
 * make GCC 12 keep it out of line, here and in the normal run_pie too; with
 * it, every PIE loop inlines rte_pie_enqueue and rte_pie_dequeue and calls
 * _calc_drop_probability, as run_pie did before these variants existed. */
static __attribute__((noinline, flatten)) struct result run_pie_mem(const struct scenario *sc, uint64_t iters)
{
	return pie_mem(sc, iters, 0);
}
static __attribute__((noinline, flatten)) struct result run_pie_memstats(const struct scenario *sc, uint64_t iters)
{
	return pie_mem(sc, iters, 1);
}

/* ---- burst rows (Go: BenchmarkBurst/...) ---- */

/*
 * The burst rows process packets n at a time, as DPDK's rx_burst/tx_burst
 * loops and the Go table's BenchmarkBurst do: one time reading per burst
 * (the virtual clock advances by n steps), n decisions and ring pushes, then
 * pops while the ring holds more than the scenario's depth. The timed count
 * is packets, so ns/op is per packet.
 */

static __attribute__((noinline)) struct result run_ring_burst(uint64_t iters, uint32_t n)
{
	struct ring *r = &rq;
	ring_reset(r);
	for (uint32_t i = 0; i < 100; i++)
		ring_push(r, i, PKT_SIZE, 0);
	uint64_t sum = 0, seq = 0;
	struct pkt p = {0};
	uint64_t bursts = iters / n;
	timer_start();
	for (uint64_t b = 0; b < bursts; b++) {
		for (uint32_t i = 0; i < n; i++)
			ring_push(r, ++seq, PKT_SIZE, 0);
		for (uint32_t i = 0; i < n; i++) {
			ring_pop(r, &p);
			sum += p.payload;
		}
	}
	struct result res = timer_stop(bursts * n, 0);
	sink_payload = sum;
	return res;
}

static __attribute__((noinline)) struct result run_fifo_burst(const struct scenario *sc, uint64_t iters, uint32_t n)
{
	struct ring *r = &rq;
	ring_reset(r);
	const uint64_t dt = sc->step_ns * n;
	const uint32_t depth = sc->depth;
	uint64_t now = 1000000000, seq = 0, sum = 0, drops = 0;
	struct pkt p = {0};
#define FIFO_BURST()                                                           \
	do {                                                                   \
		now += dt;                                                     \
		for (uint32_t i = 0; i < n; i++) {                             \
			seq++;                                                 \
			if (r->n < FIFO_LIMIT)                                 \
				ring_push(r, seq, PKT_SIZE, (int64_t)now);     \
			else                                                   \
				drops++;                                       \
		}                                                              \
		while (r->n > depth) {                                         \
			ring_pop(r, &p);                                       \
			sum += p.payload;                                      \
		}                                                              \
	} while (0)
	for (uint32_t i = 0; i < WARM_PACKETS / n; i++)
		FIFO_BURST();
	drops = 0;
	uint64_t bursts = iters / n;
	timer_start();
	for (uint64_t b = 0; b < bursts; b++)
		FIFO_BURST();
	struct result res = timer_stop(bursts * n, drops);
#undef FIFO_BURST
	sink_payload = sum;
	sink_signals = drops;
	return res;
}

static __attribute__((noinline)) struct result run_red_burst(const struct scenario *sc, uint64_t iters, uint32_t n)
{
	struct rte_red_config cfg;
	struct rte_red red;
	uint16_t min_th = 200, max_th = 600;
	if (sc == &sc_congested) {
		min_th = 50;
		max_th = 150;
	}
	if (rte_red_config_init(&cfg, RED_WQ_LOG2, min_th, max_th, RED_MAXP_INV) != 0 ||
	    rte_red_rt_data_init(&red) != 0) {
		fprintf(stderr, "redpie: rte_red init failed\n");
		exit(1);
	}
	rte_red_rand_seed = 12345;
	rte_red_rand_val = rte_fast_rand();
	struct ring *r = &rq;
	ring_reset(r);
	const uint64_t dt = ns_to_cycles(sc->step_ns) * n;
	const uint32_t depth = sc->depth;
	uint64_t now = ns_to_cycles(1000000000), seq = 0, sum = 0, drops = 0;
	struct pkt p = {0};
#define RED_BURST()                                                            \
	do {                                                                   \
		now += dt;                                                     \
		for (uint32_t i = 0; i < n; i++) {                             \
			seq++;                                                 \
			if (rte_red_enqueue(&cfg, &red, r->n, now) == 0)       \
				ring_push(r, seq, PKT_SIZE, (int64_t)now);     \
			else                                                   \
				drops++;                                       \
		}                                                              \
		while (r->n > depth) {                                         \
			ring_pop(r, &p);                                       \
			sum += p.payload;                                      \
			if (r->n == 0)                                         \
				rte_red_mark_queue_empty(&red, now);           \
		}                                                              \
	} while (0)
	for (uint32_t i = 0; i < WARM_PACKETS / n; i++)
		RED_BURST();
	drops = 0;
	uint64_t bursts = iters / n;
	timer_start();
	for (uint64_t b = 0; b < bursts; b++)
		RED_BURST();
	struct result res = timer_stop(bursts * n, drops);
#undef RED_BURST
	sink_payload = sum;
	sink_signals = drops;
	return res;
}

/* ---- driver ---- */

enum kind { K_RING, K_FIFO, K_RED, K_PIE };

struct bench {
	const char *algo;
	enum kind kind;
	const struct scenario *sc; /* NULL for the bare ring */
	uint32_t burst;            /* 0: one packet per step; n: the burst row for bursts of n */
};

static const struct bench benches[] = {
	{"fifo", K_FIFO, &sc_idle, 0},
	{"fifo", K_FIFO, &sc_standing, 0},
	{"fifo", K_FIFO, &sc_congested, 0},
	{"red", K_RED, &sc_idle, 0},
	{"red", K_RED, &sc_standing, 0},
	{"red", K_RED, &sc_congested, 0},
	{"pie", K_PIE, &sc_idle, 0},
	{"pie", K_PIE, &sc_standing, 0},
	{"pie", K_PIE, &sc_congested, 0},
	{"pie", K_PIE, &sc_pie_est, 0},
	{"ring", K_RING, NULL, 0},
	{"ring", K_RING, NULL, 8},
	{"ring", K_RING, NULL, 32},
	{"ring", K_RING, NULL, 128},
	{"fifo", K_FIFO, &sc_idle, 32},
	{"fifo", K_FIFO, &sc_standing, 32},
	{"fifo", K_FIFO, &sc_congested, 32},
	{"red", K_RED, &sc_idle, 8},
	{"red", K_RED, &sc_idle, 32},
	{"red", K_RED, &sc_idle, 128},
	{"red", K_RED, &sc_standing, 8},
	{"red", K_RED, &sc_standing, 32},
	{"red", K_RED, &sc_standing, 128},
	{"red", K_RED, &sc_congested, 8},
	{"red", K_RED, &sc_congested, 32},
	{"red", K_RED, &sc_congested, 128},
};

/* The variants, selected with -variants (or -mem, -mem-stats); each names its
 * rows with its own path segment after the prefix. */
enum variant { V_NORMAL, V_MEM, V_MEMSTATS, V_COUNT };

static const char *const variant_names[V_COUNT] = {"normal", "mem", "memstats"};
static const char *const variant_segments[V_COUNT] = {"", "mem/", "memstats/"};

static void usage(void)
{
	fprintf(stderr, "usage: redpie [-count N] [-iters M] [-prefix NAME] [-cpu C] [-run SUBSTR] [-v]\n"
			"              [-mem] [-mem-stats] [-variants normal,mem,memstats|all]\n");
	exit(2);
}

/* parse_variants adds the variants a comma-separated list names to *mask. */
static void parse_variants(const char *list, unsigned *mask)
{
	char buf[128];
	if (strlen(list) >= sizeof buf)
		usage();
	strcpy(buf, list);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		if (strcmp(tok, "all") == 0) {
			*mask |= (1u << V_COUNT) - 1u;
			continue;
		}
		int v = 0;
		while (v < V_COUNT && strcmp(tok, variant_names[v]) != 0)
			v++;
		if (v == V_COUNT)
			usage();
		*mask |= 1u << v;
	}
}

static struct result run_bench(const struct bench *bn, enum variant v, uint64_t iters)
{
	if (bn->burst != 0) { /* the burst rows have the normal variant only */
		switch (bn->kind) {
		case K_RING:
			return run_ring_burst(iters, bn->burst);
		case K_FIFO:
			return run_fifo_burst(bn->sc, iters, bn->burst);
		default:
			return run_red_burst(bn->sc, iters, bn->burst);
		}
	}
	switch (bn->kind) {
	case K_RING:
		return v == V_NORMAL ? run_ring(iters) : v == V_MEM ? run_ring_mem(iters) : run_ring_memstats(iters);
	case K_FIFO:
		return v == V_NORMAL ? run_fifo(bn->sc, iters)
		       : v == V_MEM  ? run_fifo_mem(bn->sc, iters)
				     : run_fifo_memstats(bn->sc, iters);
	case K_RED:
		return v == V_NORMAL ? run_red(bn->sc, iters)
		       : v == V_MEM  ? run_red_mem(bn->sc, iters)
				     : run_red_memstats(bn->sc, iters);
	default:
		return v == V_NORMAL ? run_pie(bn->sc, iters)
		       : v == V_MEM  ? run_pie_mem(bn->sc, iters)
				     : run_pie_memstats(bn->sc, iters);
	}
}

static uint64_t parse_u64(const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-')
		usage();
	return (uint64_t)v;
}

int main(int argc, char **argv)
{
	uint64_t count = 1, iters = 20000000, cpu = 0;
	int pin = 0; /* pin to -cpu; by default run wherever the scheduler likes, as go test does */
	const char *prefix = "DPDK", *run = NULL;
	unsigned variants = 0; /* bit v set: run variant v; none given: normal */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-v") == 0) {
			verbose = 1;
			continue;
		}
		if (strcmp(argv[i], "-mem") == 0) {
			variants |= 1u << V_MEM;
			continue;
		}
		if (strcmp(argv[i], "-mem-stats") == 0) {
			variants |= 1u << V_MEMSTATS;
			continue;
		}
		if (i + 1 >= argc)
			usage();
		if (strcmp(argv[i], "-count") == 0)
			count = parse_u64(argv[++i]);
		else if (strcmp(argv[i], "-iters") == 0)
			iters = parse_u64(argv[++i]);
		else if (strcmp(argv[i], "-prefix") == 0)
			prefix = argv[++i];
		else if (strcmp(argv[i], "-cpu") == 0) {
			cpu = parse_u64(argv[++i]);
			pin = 1;
		}
		else if (strcmp(argv[i], "-run") == 0)
			run = argv[++i];
		else if (strcmp(argv[i], "-variants") == 0)
			parse_variants(argv[++i], &variants);
		else
			usage();
	}
	if (iters == 0)
		usage();
	if (variants == 0)
		variants = 1u << V_NORMAL;

	/* EAL is needed for the TSC frequency (rte_pie_config_init) and sets up
	 * rte_rand. No hugepages, no PCI probing, no shared configuration files
	 * (--no-shconf), no telemetry socket, one lcore. EAL's log goes to
	 * stderr so stdout stays benchmark format. */
	rte_openlog_stream(stderr);
	cpu_set_t free_set;
	if (sched_getaffinity(0, sizeof free_set, &free_set) != 0) {
		perror("redpie: sched_getaffinity");
		return 1;
	}
	char lcore[24];
	snprintf(lcore, sizeof lcore, "%" PRIu64, cpu);
	char *eal_argv[] = {
		argv[0], "--no-huge", "--no-pci", "-m", "256", "-l", lcore,
		"--no-shconf", "--no-telemetry", "--log-level", "*:error", NULL,
	};
	int eal_argc = (int)RTE_DIM(eal_argv) - 1;
	if (rte_eal_init(eal_argc, eal_argv) < 0) {
		fprintf(stderr, "redpie: rte_eal_init failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	/* EAL pinned this thread to the lcore's CPU. On a shared machine a
	 * thread pinned to one busy CPU waits for it while the other may be
	 * idle, so unless -cpu was given, give the thread its old CPU set back
	 * (the DPDK helpers timed here do not care where they run). */
	if (!pin && sched_setaffinity(0, sizeof free_set, &free_set) != 0) {
		perror("redpie: sched_setaffinity");
		return 1;
	}
	tsc_hz = rte_get_tsc_hz();
	if (tsc_hz == 0) {
		fprintf(stderr, "redpie: rte_get_tsc_hz returned 0\n");
		return 1;
	}
	fprintf(stderr, "redpie: TSC %.3f MHz, %" PRIu64 " iterations per run\n", (double)tsc_hz / 1e6, iters);

	/* The header lines match `go test`'s so benchstat files line up; the
	 * name suffix is the online CPU count, which is Go's GOMAXPROCS here. */
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	printf("goos: linux\n");
#if defined(__x86_64__)
	printf("goarch: amd64\n");
#elif defined(__aarch64__)
	printf("goarch: arm64\n");
#endif
	printf("pkg: github.com/aqmkit/aqmkit/bench\n");
	FILE *ci = fopen("/proc/cpuinfo", "r");
	if (ci != NULL) {
		char line[256];
		while (fgets(line, sizeof line, ci) != NULL) {
			if (strncmp(line, "model name", 10) == 0) {
				char *v = strchr(line, ':');
				if (v != NULL) {
					v++;
					while (*v == ' ' || *v == '\t')
						v++;
					v[strcspn(v, "\n")] = '\0';
					printf("cpu: %s\n", v);
				}
				break;
			}
		}
		fclose(ci);
	}

	/* Each repetition runs the selected variants of a row back to back, so
	 * that a change in the machine's load hits them alike. */
	for (size_t b = 0; b < RTE_DIM(benches); b++) {
		const struct bench *bn = &benches[b];
		char names[V_COUNT][128];
		unsigned todo = 0;
		for (int v = 0; v < V_COUNT; v++) {
			if (!(variants & (1u << v)) || (bn->burst != 0 && v != V_NORMAL))
				continue;
			if (bn->burst != 0 && bn->sc != NULL)
				snprintf(names[v], sizeof names[v], "Benchmark%s/burst/%s/%s/%u-%ld", prefix,
					 bn->algo, bn->sc->name, bn->burst, ncpu);
			else if (bn->burst != 0)
				snprintf(names[v], sizeof names[v], "Benchmark%s/burst/%s/%u-%ld", prefix,
					 bn->algo, bn->burst, ncpu);
			else if (bn->sc != NULL)
				snprintf(names[v], sizeof names[v], "Benchmark%s/%s%s/%s-%ld", prefix,
					 variant_segments[v], bn->algo, bn->sc->name, ncpu);
			else
				snprintf(names[v], sizeof names[v], "Benchmark%s/%s%s-%ld", prefix,
					 variant_segments[v], bn->algo, ncpu);
			if (run == NULL || strstr(names[v], run) != NULL)
				todo |= 1u << v;
		}
		for (uint64_t c = 0; c < count && todo != 0; c++) {
			for (int v = 0; v < V_COUNT; v++) {
				if (!(todo & (1u << v)))
					continue;
				struct result res = run_bench(bn, (enum variant)v, iters);
				printf("%s\t%" PRIu64 "\t%.3f ns/op\t%.3f cpu-ns/op", names[v], iters, res.ns_per_op,
				       res.cpu_ns_per_op);
				if (bn->kind != K_RING)
					printf("\t%.4f signals/pkt", res.signals_per_pkt);
				printf("\n");
				fflush(stdout);
			}
		}
	}
	rte_eal_cleanup();
	return 0;
}
