// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iojournal: what lies under a broker's writes, per device of its log
 * directories: ext4 jbd2 commits (with jbd2_run_stats' phases), ext4
 * fast commits, ext4 fsyncs, XFS iclog writes and log forces, and block
 * requests. Tracepoints
 * only, as bpf/iotrace.bpf.c: no kprobes and no fentry.
 *
 * Each start tracepoint keeps its start time in a hash map keyed by what
 * the end tracepoint also sees (device and transaction, lsn, sector, or
 * thread); the end counts the interval in a log2 histogram per (device,
 * kind) and, at or above min_latency_ns, sends it through a ring buffer.
 * These tracepoints fire for every device and process on the host: the
 * device filter (ksio_jdevs) is the first thing each program checks.
 *
 * The tracepoint records are declared from the formats in
 * /sys/kernel/tracing/events/<group>/<name>/format; user space checks the
 * running kernel's formats against these offsets before attaching
 * (internal/iotrace/tpformat.go).
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "iojournal.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u64 min_latency_ns = 0;
/* BPF_RB_NO_WAKEUP when the reader polls the ring (the agent): a wake-up
 * per event is work in the traced thread's context that no one waits
 * for. Set by user space before loading. */
const volatile __u64 ringbuf_flags = 0;

/* jbd2:jbd2_start_commit and jbd2:jbd2_end_commit */
struct jbd2_commit_ctx {
	__u64 common;
	__u32 dev;
	char sync_commit;
	char pad[3];
	__u32 transaction;
	__u32 head; /* end_commit only */
};

/* jbd2:jbd2_run_stats: phases in jiffies */
struct jbd2_run_stats_ctx {
	__u64 common;
	__u32 dev;
	__u32 tid;
	__u64 wait;
	__u64 request_delay;
	__u64 running;
	__u64 locked;
	__u64 flushing;
	__u64 logging;
	__u32 handle_count;
	__u32 blocks;
	__u32 blocks_logged;
};

/* ext4:ext4_sync_file_enter */
struct ext4_sync_enter_ctx {
	__u64 common;
	__u32 dev;
	__u32 pad;
	__u64 ino;
	__u64 parent;
	__s32 datasync;
};

/* ext4:ext4_sync_file_exit */
struct ext4_sync_exit_ctx {
	__u64 common;
	__u32 dev;
	__u32 pad;
	__u64 ino;
	__s32 ret;
};

/* ext4:ext4_fc_commit_start */
struct ext4_fc_start_ctx {
	__u64 common;
	__u32 dev;
	__u32 tid;
};

/* ext4:ext4_fc_commit_stop */
struct ext4_fc_stop_ctx {
	__u64 common;
	__u32 dev;
	__s32 nblks;
	__s32 reason;
	__s32 num_fc;
	__s32 num_fc_ineligible;
	__s32 nblks_agg;
	__u32 tid;
};

/* xfs:xlog_iclog_write and xfs:xlog_iclog_sync_done (the xlog_iclog_class) */
struct xlog_iclog_ctx {
	__u64 common;
	__u32 dev;
	__u32 state;
	__s32 refcount;
	__u32 offset;
	__u32 flags;
	__u32 pad;
	__u64 lsn;
};

/* xfs:xfs_log_force */
struct xfs_log_force_ctx {
	__u64 common;
	__u32 dev;
};

/* block:block_rq_issue (6.x, with ioprio) */
struct block_rq_issue_ctx {
	__u64 common;
	__u32 dev;
	__u32 pad;
	__u64 sector;
	__u32 nr_sector;
	__u32 bytes;
	__u16 ioprio;
	char rwbs[10];
};

/* block:block_rq_complete */
struct block_rq_complete_ctx {
	__u64 common;
	__u32 dev;
	__u32 pad;
	__u64 sector;
	__u32 nr_sector;
	__s32 error;
	__u16 ioprio;
	char rwbs[10];
};

/* The devices traced: the log directories' file systems (super_block
 * s_dev, which is also the journal's and the block requests' device for a
 * file system on a whole disk or loop device), and the disks holding
 * them when they are partitions. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u8);
} ksio_jdevs SEC(".maps");

/* jbd2 commits in flight: (dev, transaction) -> the event being built,
 * since jbd2_run_stats and jbd2_end_commit may come in either order. */
struct jbd2_key {
	__u32 dev;
	__u32 tid;
};

struct jbd2_state {
	struct iojournal_event e;
	__u8 ended;
	__u8 pad[7];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct jbd2_key);
	__type(value, struct jbd2_state);
} ksio_jcommits SEC(".maps");

/* Starts of the other intervals. */
struct start_key {
	__u64 id;  /* lsn, sector or thread */
	__u32 dev; /* 0 for fsyncs: keyed by thread */
	__u32 kind;
};

struct start_val {
	__u64 ts;
	__u64 ino;
	__u32 bytes;
	__u8 sync;
	char rwbs[8];
	__u8 pad[3];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct start_key);
	__type(value, struct start_val);
} ksio_jstarts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct iojournal_hist_key);
	__type(value, struct iojournal_hist);
} ksio_jhists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22); /* 4 MiB: 32k events of 128 bytes */
} ksio_jevents SEC(".maps");

/* Put the shared types into the BTF for bpf2go's -type. */
const struct iojournal_event *unused_jevent __attribute__((unused));
const struct iojournal_hist_key *unused_jkey __attribute__((unused));

enum {
	JCNT_RINGBUF_DROPS = 0, /* slow intervals lost: ring buffer full */
	JCNT_HIST_FULL = 1,     /* intervals not counted: ksio_jhists full */
	JCNT_START_FULL = 2,    /* intervals not timed: a start map full */
	JCNT_MAX = 3,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, JCNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} ksio_jcounters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct iojournal_hist);
} ksio_jzero SEC(".maps");

static __always_inline void jcount(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&ksio_jcounters, &which);
	if (v)
		(*v)++;
}

static __always_inline int traced(__u32 dev)
{
	return bpf_map_lookup_elem(&ksio_jdevs, &dev) != NULL;
}

static __always_inline __u32 jlog2(__u64 v)
{
	__u32 r = 0;
#pragma unroll
	for (int i = 32; i > 0; i /= 2) {
		if (v >= (1ULL << i)) {
			v >>= i;
			r += i;
		}
	}
	return r;
}

static __always_inline void hist_add(__u32 dev, __u32 kind, __u64 lat, __u64 bytes)
{
	struct iojournal_hist_key key = { .dev = dev, .kind = kind };
	struct iojournal_hist *h = bpf_map_lookup_elem(&ksio_jhists, &key);
	if (!h) {
		__u32 zero = 0;
		struct iojournal_hist *z = bpf_map_lookup_elem(&ksio_jzero, &zero);
		if (z)
			bpf_map_update_elem(&ksio_jhists, &key, z, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&ksio_jhists, &key);
	}
	if (!h) {
		jcount(JCNT_HIST_FULL);
		return;
	}
	__u32 slot = jlog2(lat);
	if (slot >= JMAX_SLOTS)
		slot = JMAX_SLOTS - 1;
	__sync_fetch_and_add(&h->slots[slot], 1);
	__sync_fetch_and_add(&h->count, 1);
	__sync_fetch_and_add(&h->total_ns, lat);
	__sync_fetch_and_add(&h->bytes, bytes);
}

static __always_inline void emit(const struct iojournal_event *src)
{
	struct iojournal_event *e = bpf_ringbuf_reserve(&ksio_jevents, sizeof(*e), 0);
	if (!e) {
		jcount(JCNT_RINGBUF_DROPS);
		return;
	}
	__builtin_memcpy(e, src, sizeof(*e));
	bpf_ringbuf_submit(e, ringbuf_flags);
}

/* --- jbd2 --------------------------------------------------------------- */

/* A commit is complete once both jbd2_end_commit and jbd2_run_stats were
 * seen: count it, and send it when slow. */
static __always_inline void jbd2_finish(struct jbd2_key *k, struct jbd2_state *st)
{
	__u64 lat = st->e.end_ns - st->e.start_ns;
	hist_add(st->e.dev, JK_JBD2_COMMIT, lat, 0);
	if (lat >= min_latency_ns)
		emit(&st->e);
	bpf_map_delete_elem(&ksio_jcommits, k);
}

SEC("tracepoint/jbd2/jbd2_start_commit")
int ksio_jbd2_start(struct jbd2_commit_ctx *ctx)
{
	if (!traced(ctx->dev))
		return 0;
	struct jbd2_key k = { .dev = ctx->dev, .tid = ctx->transaction };
	struct jbd2_state st = {};
	st.e.start_ns = bpf_ktime_get_ns();
	st.e.dev = ctx->dev;
	st.e.id = ctx->transaction;
	st.e.kind = JK_JBD2_COMMIT;
	st.e.sync = ctx->sync_commit;
	if (bpf_map_update_elem(&ksio_jcommits, &k, &st, BPF_ANY))
		jcount(JCNT_START_FULL);
	return 0;
}

SEC("tracepoint/jbd2/jbd2_end_commit")
int ksio_jbd2_end(struct jbd2_commit_ctx *ctx)
{
	if (!traced(ctx->dev))
		return 0;
	struct jbd2_key k = { .dev = ctx->dev, .tid = ctx->transaction };
	struct jbd2_state *st = bpf_map_lookup_elem(&ksio_jcommits, &k);
	if (!st)
		return 0; /* started before we attached */
	st->e.end_ns = bpf_ktime_get_ns();
	st->ended = 1;
	if (st->e.has_stats)
		jbd2_finish(&k, st);
	return 0;
}

SEC("tracepoint/jbd2/jbd2_run_stats")
int ksio_jbd2_stats(struct jbd2_run_stats_ctx *ctx)
{
	if (!traced(ctx->dev))
		return 0;
	struct jbd2_key k = { .dev = ctx->dev, .tid = ctx->tid };
	struct jbd2_state *st = bpf_map_lookup_elem(&ksio_jcommits, &k);
	if (!st)
		return 0;
	st->e.wait = ctx->wait;
	st->e.request_delay = ctx->request_delay;
	st->e.running = ctx->running;
	st->e.locked = ctx->locked;
	st->e.flushing = ctx->flushing;
	st->e.logging = ctx->logging;
	st->e.handle_count = ctx->handle_count;
	st->e.blocks = ctx->blocks;
	st->e.blocks_logged = ctx->blocks_logged;
	st->e.has_stats = 1;
	if (st->ended)
		jbd2_finish(&k, st);
	return 0;
}

/* --- ext4 fsync ----------------------------------------------------------- */

/* Keyed by thread: ext4_sync_file runs in the caller's thread. */
SEC("tracepoint/ext4/ext4_sync_file_enter")
int ksio_ext4_fs_in(struct ext4_sync_enter_ctx *ctx)
{
	if (!traced(ctx->dev))
		return 0;
	struct start_key k = { .id = bpf_get_current_pid_tgid(), .kind = JK_EXT4_FSYNC };
	struct start_val v = { .ts = bpf_ktime_get_ns(), .ino = ctx->ino, .sync = ctx->datasync != 0 };
	if (bpf_map_update_elem(&ksio_jstarts, &k, &v, BPF_ANY))
		jcount(JCNT_START_FULL);
	return 0;
}

SEC("tracepoint/ext4/ext4_sync_file_exit")
int ksio_ext4_fs_out(struct ext4_sync_exit_ctx *ctx)
{
	if (!traced(ctx->dev))
		return 0;
	__u64 id = bpf_get_current_pid_tgid();
	struct start_key k = { .id = id, .kind = JK_EXT4_FSYNC };
	struct start_val *v = bpf_map_lookup_elem(&ksio_jstarts, &k);
	if (!v)
		return 0;
	__u64 end = bpf_ktime_get_ns();
	__u64 lat = end - v->ts;
	hist_add(ctx->dev, JK_EXT4_FSYNC, lat, 0);
	if (lat >= min_latency_ns) {
		struct iojournal_event e = {};
		e.start_ns = v->ts;
		e.end_ns = end;
		e.id = ctx->ino;
		e.dev = ctx->dev;
		e.kind = JK_EXT4_FSYNC;
		e.err = ctx->ret;
		e.tid = (__u32)id;
		e.pid = (__u32)(id >> 32);
		e.sync = v->sync;
		emit(&e);
	}
	bpf_map_delete_elem(&ksio_jstarts, &k);
	return 0;
}

/* --- ext4 fast commits ----------------------------------------------------- */

/* ext4_fc_commit runs in the fsyncing thread, from its start tracepoint
 * to its stop (ext4_fc_update_stats) in the same thread: keyed by thread
 * and device. The interval covers the fast-commit blocks' writes and
 * waits, a wait for another thread's fast or full commit in progress
 * (then reason SKIPPED), and the full jbd2 commit an ineligible one falls
 * back to. */
SEC("tracepoint/ext4/ext4_fc_commit_start")
int ksio_ext4_fc_in(struct ext4_fc_start_ctx *ctx)
{
	if (!traced(ctx->dev))
		return 0;
	struct start_key k = { .id = bpf_get_current_pid_tgid(), .dev = ctx->dev, .kind = JK_EXT4_FC_COMMIT };
	struct start_val v = { .ts = bpf_ktime_get_ns() };
	if (bpf_map_update_elem(&ksio_jstarts, &k, &v, BPF_ANY))
		jcount(JCNT_START_FULL);
	return 0;
}

SEC("tracepoint/ext4/ext4_fc_commit_stop")
int ksio_ext4_fc_out(struct ext4_fc_stop_ctx *ctx)
{
	if (!traced(ctx->dev))
		return 0;
	__u64 id = bpf_get_current_pid_tgid();
	struct start_key k = { .id = id, .dev = ctx->dev, .kind = JK_EXT4_FC_COMMIT };
	struct start_val *v = bpf_map_lookup_elem(&ksio_jstarts, &k);
	if (!v)
		return 0;
	__u64 end = bpf_ktime_get_ns();
	__u64 lat = end - v->ts;
	hist_add(ctx->dev, JK_EXT4_FC_COMMIT, lat, 0);
	if (lat >= min_latency_ns) {
		struct iojournal_event e = {};
		e.start_ns = v->ts;
		e.end_ns = end;
		e.id = ctx->tid;
		e.dev = ctx->dev;
		e.kind = JK_EXT4_FC_COMMIT;
		e.blocks = ctx->nblks > 0 ? ctx->nblks : 0;
		e.fc_status = ctx->reason >= 0 && ctx->reason < 255 ? ctx->reason : 255;
		e.tid = (__u32)id;
		e.pid = (__u32)(id >> 32);
		emit(&e);
	}
	bpf_map_delete_elem(&ksio_jstarts, &k);
	return 0;
}

/* --- XFS log -------------------------------------------------------------- */

/* An iclog (in-core log buffer) is submitted with xlog_iclog_write and its
 * I/O completes with xlog_iclog_sync_done; both report the iclog header's
 * lsn, which names it until it is reused. */
SEC("tracepoint/xfs/xlog_iclog_write")
int ksio_xlog_write(struct xlog_iclog_ctx *ctx)
{
	if (!traced(ctx->dev))
		return 0;
	struct start_key k = { .id = ctx->lsn, .dev = ctx->dev, .kind = JK_XLOG_WRITE };
	struct start_val v = { .ts = bpf_ktime_get_ns(), .bytes = ctx->offset };
	if (bpf_map_update_elem(&ksio_jstarts, &k, &v, BPF_ANY))
		jcount(JCNT_START_FULL);
	return 0;
}

SEC("tracepoint/xfs/xlog_iclog_sync_done")
int ksio_xlog_done(struct xlog_iclog_ctx *ctx)
{
	if (!traced(ctx->dev))
		return 0;
	struct start_key k = { .id = ctx->lsn, .dev = ctx->dev, .kind = JK_XLOG_WRITE };
	struct start_val *v = bpf_map_lookup_elem(&ksio_jstarts, &k);
	if (!v)
		return 0;
	__u64 end = bpf_ktime_get_ns();
	__u64 lat = end - v->ts;
	hist_add(ctx->dev, JK_XLOG_WRITE, lat, v->bytes);
	if (lat >= min_latency_ns) {
		struct iojournal_event e = {};
		e.start_ns = v->ts;
		e.end_ns = end;
		e.id = ctx->lsn;
		e.dev = ctx->dev;
		e.kind = JK_XLOG_WRITE;
		e.bytes = v->bytes;
		emit(&e);
	}
	bpf_map_delete_elem(&ksio_jstarts, &k);
	return 0;
}

/* A log force has no end tracepoint: it is counted, with no latency. */
SEC("tracepoint/xfs/xfs_log_force")
int ksio_xfs_force(struct xfs_log_force_ctx *ctx)
{
	if (!traced(ctx->dev))
		return 0;
	hist_add(ctx->dev, JK_XFS_FORCE, 0, 0);
	return 0;
}

/* --- block layer ------------------------------------------------------------ */

/* The request's operation from its rwbs string (blk_fill_rwbs): an
 * optional 'F' for a preflush, then the operation: R, W, D (discard), DE
 * (secure erase), F (a cache flush on its own) or N (anything else), then
 * the flags F (FUA), A, S, M. So "F", "FF", "FS"... are flushes, "FWS" a
 * write after a preflush. */
static __always_inline __u32 blk_kind(const char *rwbs)
{
	char c = rwbs[0];
	if (c == 'F') {
		c = rwbs[1];
		if (c != 'R' && c != 'W' && c != 'D' && c != 'N')
			return JK_BLK_FLUSH;
	}
	switch (c) {
	case 'R':
		return JK_BLK_READ;
	case 'W':
		return JK_BLK_WRITE;
	default:
		return JK_BLK_OTHER;
	}
}

SEC("tracepoint/block/block_rq_issue")
int ksio_rq_issue(struct block_rq_issue_ctx *ctx)
{
	if (!traced(ctx->dev))
		return 0;
	struct start_key k = { .id = ctx->sector, .dev = ctx->dev, .kind = JK_BLK_READ };
	struct start_val v = { .ts = bpf_ktime_get_ns(), .bytes = ctx->bytes };
	__builtin_memcpy(v.rwbs, ctx->rwbs, sizeof(v.rwbs));
	if (bpf_map_update_elem(&ksio_jstarts, &k, &v, BPF_ANY))
		jcount(JCNT_START_FULL);
	return 0;
}

SEC("tracepoint/block/block_rq_complete")
int ksio_rq_done(struct block_rq_complete_ctx *ctx)
{
	if (!traced(ctx->dev))
		return 0;
	/* All block requests share one start kind: the key is (dev, sector). */
	struct start_key k = { .id = ctx->sector, .dev = ctx->dev, .kind = JK_BLK_READ };
	struct start_val *v = bpf_map_lookup_elem(&ksio_jstarts, &k);
	if (!v)
		return 0;
	__u64 end = bpf_ktime_get_ns();
	__u64 lat = end - v->ts;
	__u32 kind = blk_kind(v->rwbs);
	hist_add(ctx->dev, kind, lat, v->bytes);
	if (lat >= min_latency_ns) {
		struct iojournal_event e = {};
		e.start_ns = v->ts;
		e.end_ns = end;
		e.id = ctx->sector;
		e.dev = ctx->dev;
		e.kind = kind;
		e.bytes = v->bytes;
		e.err = ctx->error;
		__builtin_memcpy(e.rwbs, v->rwbs, sizeof(e.rwbs));
		emit(&e);
	}
	bpf_map_delete_elem(&ksio_jstarts, &k);
	return 0;
}
