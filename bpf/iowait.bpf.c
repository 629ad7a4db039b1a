// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iowait: where the broker's threads wait in the kernel. A thread that
 * blocks inside a write syscall shows up in bpf/iotrace.bpf.c; one that
 * blocks elsewhere while holding a partition's lock (a page fault on a
 * memory-mapped index file of a frozen or journal-bound file system, a
 * journal handle started from an mmap write) does not. This traces, for
 * the broker's threads only, every uninterruptible sleep (D state) of at
 * least min_latency_ns with the kernel stack it went to sleep on, from
 * sched:sched_switch alone (like libbpf-tools' offcputime, but tracepoint
 * only and D state only: interruptible sleeps are the JVM's own waits).
 *
 * sched_switch runs in the context of the thread switched away (prev):
 * its tgid identifies the broker, and prev_state says how it sleeps. The
 * thread's start time is kept by tid; the switch that brings it back
 * (next_pid) ends the interval.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "iowait.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 targ_tgid = 0;
const volatile __u64 min_latency_ns = 0;
/* BPF_RB_NO_WAKEUP when the reader polls the ring (the agent): a wake-up
 * per event is work in the traced thread's context that no one waits
 * for. Set by user space before loading. */
const volatile __u64 ringbuf_flags = 0;

#define TASK_UNINTERRUPTIBLE 0x0002

/* sched:sched_switch, from /sys/kernel/tracing/events/sched/sched_switch/format */
struct sched_switch_ctx {
	__u64 common;
	char prev_comm[16];
	__s32 prev_pid;
	__s32 prev_prio;
	__s64 prev_state;
	char next_comm[16];
	__s32 next_pid;
	__s32 next_prio;
};

struct wait_start {
	__u64 ts;
	__s64 stack_id;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct wait_start);
} ksio_wstart SEC(".maps");

/* How many threads ksio_wstart holds: nearly always none, so that the
 * switches of every thread on the host skip the lookup by next_pid, a
 * hash of the tid on every context switch (55k a second at the broker's
 * maximum here). An entry is counted when inserted and uncounted when
 * deleted; a thread is switched back in only after the switch away that
 * counted it has finished, so the switch in sees the count. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __s64);
} ksio_wpending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 8192);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, WAIT_STACK_DEPTH * sizeof(__u64));
} ksio_wstacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} ksio_wevents SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, WCNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} ksio_wcounters SEC(".maps");

static __always_inline void wcount(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&ksio_wcounters, &which);
	if (v)
		(*v)++;
}

/* Force the event type into BTF for bpf2go's -type. */
const struct iowait_event *unused_iowait_event __attribute__((unused));

SEC("tracepoint/sched/sched_switch")
int ksio_sched_switch(struct sched_switch_ctx *ctx)
{
	__u32 zero = 0;
	__s64 *pending = bpf_map_lookup_elem(&ksio_wpending, &zero);
	if (!pending)
		return 0;
	__u64 id = bpf_get_current_pid_tgid();
	__u64 now = 0;

	if ((__u32)(id >> 32) == targ_tgid && (ctx->prev_state & TASK_UNINTERRUPTIBLE)) {
		now = bpf_ktime_get_ns();
		struct wait_start s = { .ts = now };
		s.stack_id = bpf_get_stackid(ctx, &ksio_wstacks, 0);
		if (s.stack_id < 0)
			wcount(WCNT_STACK_LOST);
		__u32 tid = (__u32)id;
		/* A thread already in the map (its switch back was missed)
		 * is overwritten, not counted twice. */
		if (bpf_map_update_elem(&ksio_wstart, &tid, &s, BPF_NOEXIST) == 0)
			__sync_fetch_and_add(pending, 1);
		else if (bpf_map_update_elem(&ksio_wstart, &tid, &s, BPF_EXIST))
			wcount(WCNT_START_FULL);
	}

	if (*(volatile __s64 *)pending <= 0)
		return 0;
	__u32 next = (__u32)ctx->next_pid;
	struct wait_start *s = bpf_map_lookup_elem(&ksio_wstart, &next);
	if (!s)
		return 0;
	__u64 start = s->ts;
	__s64 stack_id = s->stack_id;
	if (bpf_map_delete_elem(&ksio_wstart, &next) == 0)
		__sync_fetch_and_add(pending, -1);
	if (!now)
		now = bpf_ktime_get_ns();
	if (now - start < min_latency_ns)
		return 0;
	struct iowait_event *e = bpf_ringbuf_reserve(&ksio_wevents, sizeof(*e), 0);
	if (!e) {
		wcount(WCNT_RINGBUF_DROPS);
		return 0;
	}
	e->start_ns = start;
	e->end_ns = now;
	e->tid = next;
	e->stack_id = (__s32)stack_id;
	bpf_ringbuf_submit(e, ringbuf_flags);
	return 0;
}
