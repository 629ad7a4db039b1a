// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iopcache: the pages the broker's threads add to the page cache, from
 * the tracepoint filemap:mm_filemap_add_to_page_cache. A page is added
 * when a read (sendfile, read, a fault, readahead) needs one that is not
 * cached: the data comes from disk. A consumer reading old data makes the
 * network thread that sends its fetch response add pages, and sleep on
 * them, while every other connection of that thread waits (KAFKA-7504).
 *
 * The tracepoint fires for every page added on the host: past the tgid
 * test it does one hash lookup by thread. Adds are not sent one by one (a
 * cold read adds thousands a second): each thread's run of adds to one
 * file, with no gap over gap_ns, is sent once, when the thread adds to
 * another file or after the gap; user space takes the runs left in the
 * map when it stops.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "iopcache.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 targ_tgid = 0;
const volatile __u64 gap_ns = 1000000;
/* The format has the folio's order (5.18 and later): 1 << order pages. */
const volatile __u32 has_order = 0;
/* BPF_RB_NO_WAKEUP when the reader polls the ring (the agent). */
const volatile __u64 ringbuf_flags = 0;

/* filemap:mm_filemap_add_to_page_cache, from its format in tracefs
 * (checked by user space before loading). */
struct add_ctx {
	__u64 common;
	__u64 pfn;
	__u64 i_ino;
	__u64 index;
	__u32 s_dev;
	__u8 order;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct iopcache_event);
} ksio_pruns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20); /* 1 MiB: 26k runs of 40 bytes */
} ksio_pevents SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PCNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} ksio_pcounters SEC(".maps");

static __always_inline void pcount(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&ksio_pcounters, &which);
	if (v)
		(*v)++;
}

/* Force the event type into BTF for bpf2go's -type. */
const struct iopcache_event *unused_iopcache_event __attribute__((unused));

static __always_inline void send_run(const struct iopcache_event *run)
{
	struct iopcache_event *e = bpf_ringbuf_reserve(&ksio_pevents, sizeof(*e), 0);
	if (!e) {
		pcount(PCNT_RINGBUF_DROPS);
		return;
	}
	*e = *run;
	bpf_ringbuf_submit(e, ringbuf_flags);
}

SEC("tracepoint/filemap/mm_filemap_add_to_page_cache")
int ksio_pcache_add(struct add_ctx *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	if ((__u32)(id >> 32) != targ_tgid)
		return 0;
	pcount(PCNT_ADDS);
	__u64 now = bpf_ktime_get_ns();
	__u32 tid = (__u32)id;
	__u64 pages = 1;
	if (has_order && ctx->order < 32)
		pages = 1ULL << ctx->order;
	struct iopcache_event *run = bpf_map_lookup_elem(&ksio_pruns, &tid);
	if (run) {
		if (run->ino == ctx->i_ino && run->dev == ctx->s_dev && now - run->end_ns <= gap_ns) {
			run->end_ns = now;
			run->pages += pages;
			return 0;
		}
		send_run(run);
	}
	struct iopcache_event fresh = {
		.start_ns = now, .end_ns = now, .ino = ctx->i_ino, .pages = pages, .tid = tid, .dev = ctx->s_dev,
	};
	if (bpf_map_update_elem(&ksio_pruns, &tid, &fresh, BPF_ANY))
		pcount(PCNT_RUNS_FULL);
	return 0;
}
