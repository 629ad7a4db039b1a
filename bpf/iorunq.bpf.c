// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iorunq: run-queue latency of the broker's threads, as libbpf-tools'
 * runqslower measures it, restricted to one process. A broker thread
 * that is runnable but waits for a CPU (because another task has it)
 * stops as surely as one blocked on a disk, but no system call and no
 * kernel wait shows it.
 *
 * A broker thread's start is kept by tid when it becomes runnable: woken
 * (sched_waking, sched_wakeup_new) or switched away while still runnable
 * (preempted, or yielding). The switch that brings it back onto a CPU ends
 * the interval; at or above min_latency_ns it goes to user space with the
 * task switched away at that moment (prev: the one that had the CPU).
 *
 * Who had the CPU meanwhile: every switch of the machine appends the run
 * slice that just ended (its process, thread and comm) to its CPU's ring
 * of the last RUNQ_SLICES slices; when a broker thread's wait ends, the
 * slices of that CPU overlapping the wait are summed by process into the
 * RUNQ_HOLDERS largest. A wait longer than the ring covers names only its
 * last part's holders. And whether its cgroup's CPU quota was used up
 * (the cgroup throttled) when the wait began: then it waited for quota.
 *
 * Events are submitted without waking the reader (BPF_RB_NO_WAKEUP): it
 * polls the ring every few milliseconds instead. A wake-up per event (a
 * few hundred a second) cost the reader more CPU than the events.
 *
 * BTF raw tracepoints (tp_btf), as bpf/iosteal.bpf.c: the tasks come as
 * typed pointers, so reading their pid and tgid is a plain load, and the
 * tgid test comes before any map operation: the three programs run on
 * every wake-up and context switch of the machine, and for other
 * processes' tasks they do nothing else.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "iorunq.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 targ_tgid = 0;
const volatile __u64 min_latency_ns = 0;

#define TASK_RUNNING 0x0000

struct cfs_rq {
	int throttle_count; /* > 0: it or an ancestor is throttled */
} __attribute__((preserve_access_index));

struct sched_entity {
	struct cfs_rq *cfs_rq; /* CONFIG_FAIR_GROUP_SCHED */
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;
	int tgid;
	struct sched_entity se;
	_Bool throttled; /* 6.18+: task-based throttling */
} __attribute__((preserve_access_index));

/* One run slice of a CPU: who ran from start to end. */
struct runq_slice {
	__u64 start;
	__u64 end;
	__u32 tgid;
	__u32 tid;
	char comm[RUNQ_COMM_LEN];
};

struct runq_cpu {
	__u64 cur_start; /* when the running task got the CPU */
	__u32 next;      /* the next slot of s to write */
	__u32 pad;
	struct runq_slice s[RUNQ_SLICES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct runq_cpu);
} ksio_rcpu SEC(".maps");

struct runq_start {
	__u64 ts;
	__u32 preempted;
	__u32 throttled;
	__u32 waker_tid;
	__u32 waker_tgid;
	char waker_comm[RUNQ_COMM_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tid */
	__type(value, struct runq_start);
} ksio_rstart SEC(".maps");

/* When each broker thread went to sleep, by tid (LRU: a thread that
 * exits asleep leaves its entry behind). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} ksio_rsleep SEC(".maps");

/* How deep this CPU is in interrupt work that wakes tasks in the name of
 * whatever task it interrupted: [IRQ_TIMER] timer expiries
 * (hrtimer_expire_entry/exit), [IRQ_SOFT] softirqs (softirq_entry/exit:
 * the network's receive path among them). */
#define IRQ_TIMER 0
#define IRQ_SOFT 1
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} ksio_rirq SEC(".maps");

/* What a wake-up ran in. */
#define WAKE_TASK 0  /* a task: the waker */
#define WAKE_TIMER 1 /* a timer's expiry: the sleep's own timeout */
#define WAKE_IRQ 2   /* a softirq: no task woke it */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20); /* 1 MiB: 18k delays of 56 bytes */
} ksio_revents SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RCNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} ksio_rcounters SEC(".maps");

static __always_inline void rcount(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&ksio_rcounters, &which);
	if (v)
		(*v)++;
}

/* Force the event type into BTF for bpf2go's -type. */
const struct iorunq_event *unused_iorunq_event __attribute__((unused));

/* Whether p's cgroup, or an ancestor, is throttled by its CPU quota: the
 * task's own flag where throttling is per task (6.18+), else its cfs_rq's
 * count of throttled ancestors. */
static __always_inline __u32 throttled(struct task_struct *p)
{
	if (bpf_core_field_exists(p->throttled) && p->throttled)
		return 1;
	if (bpf_core_field_exists(p->se.cfs_rq)) {
		struct cfs_rq *cq = p->se.cfs_rq;
		if (cq && cq->throttle_count > 0)
			return 1;
	}
	return 0;
}

/* A wake-up starts the wait unless one is running already: a thread
 * preempted while it prepared to sleep stays on the run queue and may be
 * woken there; it has been runnable since its preemption. Entries of
 * threads that went to sleep are deleted at that switch, so an entry found
 * here is such a wait. */
/* wake reports a broker thread woken by another of the broker's threads
 * after a sleep of at least min_latency_ns: it waited for that thread (a
 * lock it held, a queue it filled). A wake-up from a timer's expiry (ctx
 * WAKE_TIMER) is reported too, with no waker: a timed wait that ran out, such
 * as the JVM's contended monitor, whose waiter parks for 1, 8, 64, 512 ms
 * in turn and then waits for its owner: only the last sleep is ended by
 * the thread it waited for. Wake-ups from other processes and from
 * softirqs (the network) are not reported. */
static __always_inline void wake(__u32 tid, __u64 now, int ctx)
{
	__u64 *slept = bpf_map_lookup_elem(&ksio_rsleep, &tid);
	if (!slept)
		return;
	__u64 since = *slept;
	bpf_map_delete_elem(&ksio_rsleep, &tid);
	__u64 id = bpf_get_current_pid_tgid();
	/* now <= since: woken while still going to sleep (the waker ran on
	 * another CPU before this one finished the switch): no sleep. */
	if (now <= since || now - since < min_latency_ns)
		return;
	if (ctx == WAKE_IRQ || (ctx == WAKE_TASK && ((__u32)(id >> 32) != targ_tgid || (__u32)id == tid)))
		return;
	struct iorunq_event *e = bpf_ringbuf_reserve(&ksio_revents, sizeof(*e), 0);
	if (!e) {
		rcount(RCNT_RINGBUF_DROPS);
		return;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->kind = RUNQ_KIND_WAKE;
	e->start_ns = since;
	e->end_ns = now;
	e->tid = tid;
	if (ctx == WAKE_TIMER) {
		e->timer = 1;
	} else {
		e->waker_tid = (__u32)id;
		e->waker_tgid = (__u32)(id >> 32);
		bpf_get_current_comm(e->waker_comm, sizeof(e->waker_comm));
	}
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

static __always_inline int irq_depth(__u32 which)
{
	__u32 *depth = bpf_map_lookup_elem(&ksio_rirq, &which);
	return depth ? *depth : 0;
}

/* wake_ctx says what a wake-up on this CPU now runs in: a timer's expiry
 * (first: the hrtimer softirq runs expiries too), a softirq, or a task. A
 * wake-up in interrupt work is not the interrupted task's. */
static __always_inline int wake_ctx(void)
{
	if (irq_depth(IRQ_TIMER) > 0)
		return WAKE_TIMER;
	if (irq_depth(IRQ_SOFT) > 0)
		return WAKE_IRQ;
	return WAKE_TASK;
}

static __always_inline int woken(struct task_struct *p)
{
	if (p->tgid != targ_tgid)
		return 0;
	__u32 tid = p->pid;
	struct runq_start s = { .ts = bpf_ktime_get_ns(), .throttled = throttled(p) };
	int ctx = wake_ctx();
	wake(tid, s.ts, ctx);
	/* The wake-up runs in the waker's context, or in interrupt work,
	 * which has no waker. */
	if (ctx == WAKE_TASK) {
		__u64 id = bpf_get_current_pid_tgid();
		s.waker_tid = (__u32)id;
		s.waker_tgid = (__u32)(id >> 32);
		bpf_get_current_comm(s.waker_comm, sizeof(s.waker_comm));
	}
	long err = bpf_map_update_elem(&ksio_rstart, &tid, &s, BPF_NOEXIST);
	if (err && err != -17 /* EEXIST */)
		rcount(RCNT_START_FULL);
	return 0;
}

/* Arguments: the task woken. sched_waking, not sched_wakeup: it runs in
 * the waker's context even when the wake-up itself is queued to another
 * CPU (ttwu_queue_wakelist), where sched_wakeup fires later, in whatever
 * task that CPU ran. The wait starts a few microseconds earlier. */
SEC("tp_btf/sched_waking")
int ksio_runq_wakeup(__u64 *ctx)
{
	return woken((struct task_struct *)ctx[0]);
}

SEC("tp_btf/sched_wakeup_new")
int ksio_runq_wakeup_new(__u64 *ctx)
{
	return woken((struct task_struct *)ctx[0]);
}

/* Counted, not flagged, since a hard timer expiry can interrupt a soft
 * one (or a softirq) on the same CPU; the exits are attached first and
 * never take a count below 0, so work under way while the programs
 * attach cannot leave it raised. */
static __always_inline void irq_enter(__u32 which)
{
	__u32 *depth = bpf_map_lookup_elem(&ksio_rirq, &which);
	if (depth)
		*depth += 1;
}

static __always_inline void irq_exit(__u32 which)
{
	__u32 *depth = bpf_map_lookup_elem(&ksio_rirq, &which);
	if (depth && *depth > 0)
		*depth -= 1;
}

/* A timer's expiry, from hrtimer_interrupt or the hrtimer softirq: the
 * sleeper timers of futex waits and nanosleep expire here. */
SEC("tp_btf/hrtimer_expire_entry")
int ksio_runq_timer_entry(__u64 *ctx)
{
	irq_enter(IRQ_TIMER);
	return 0;
}

SEC("tp_btf/hrtimer_expire_exit")
int ksio_runq_timer_exit(__u64 *ctx)
{
	irq_exit(IRQ_TIMER);
	return 0;
}

/* A softirq, on irq exit, at local_bh_enable or in ksoftirqd: the network
 * receive path wakes a socket's reader from here, in whatever task the
 * CPU was running (on a real NIC, often a broker thread). */
SEC("tp_btf/softirq_entry")
int ksio_runq_softirq_entry(__u64 *ctx)
{
	irq_enter(IRQ_SOFT);
	return 0;
}

SEC("tp_btf/softirq_exit")
int ksio_runq_softirq_exit(__u64 *ctx)
{
	irq_exit(IRQ_SOFT);
	return 0;
}

/* slice ends the running task's slice at now: appended to the CPU's
 * ring, prev (current) is its owner. */
static __always_inline struct runq_cpu *slice(__u64 now)
{
	__u32 zero = 0;
	struct runq_cpu *rc = bpf_map_lookup_elem(&ksio_rcpu, &zero);
	if (!rc)
		return 0;
	struct runq_slice *sl = &rc->s[rc->next & (RUNQ_SLICES - 1)];
	__u64 id = bpf_get_current_pid_tgid();
	sl->start = rc->cur_start;
	sl->end = now;
	sl->tgid = (__u32)(id >> 32);
	sl->tid = (__u32)id;
	bpf_get_current_comm(sl->comm, sizeof(sl->comm));
	rc->next++;
	rc->cur_start = now;
	return rc;
}

/* holders sums the CPU's slices overlapping [start, end) by process into
 * e->holders, keeping the RUNQ_HOLDERS largest seen (a process that comes
 * after they are full replaces the smallest when it has run longer). */
static __always_inline void holders(struct runq_cpu *rc, __u64 start, __u64 end, struct iorunq_event *e)
{
	__u64 longest[RUNQ_HOLDERS] = {};
	for (int i = 0; i < RUNQ_SLICES; i++) {
		struct runq_slice *sl = &rc->s[i];
		__u64 a = sl->start > start ? sl->start : start;
		__u64 b = sl->end < end ? sl->end : end;
		if (b <= a)
			continue;
		__u64 ns = b - a;
		int slot = -1, smallest = 0;
		for (int j = 0; j < RUNQ_HOLDERS; j++) {
			if (e->holders[j].ns && e->holders[j].tgid == sl->tgid) {
				slot = j;
				break;
			}
			if (e->holders[j].ns < e->holders[smallest].ns)
				smallest = j;
		}
		if (slot < 0) {
			if (e->holders[smallest].ns >= ns)
				continue;
			slot = smallest;
			e->holders[slot].ns = 0;
			e->holders[slot].tgid = sl->tgid;
			longest[slot] = 0;
		}
		e->holders[slot].ns += ns;
		if (ns > longest[slot]) {
			longest[slot] = ns;
			e->holders[slot].tid = sl->tid;
			__builtin_memcpy(e->holders[slot].comm, sl->comm, RUNQ_COMM_LEN);
		}
	}
}

/* Arguments of sched_switch (5.18 and later): preempt, prev, next,
 * prev_state. It runs on the switching CPU, in prev's context. */
SEC("tp_btf/sched_switch")
int ksio_runq_switch(__u64 *ctx)
{
	struct task_struct *prev = (struct task_struct *)ctx[1];
	struct task_struct *next = (struct task_struct *)ctx[2];
	__u64 now = bpf_ktime_get_ns();
	struct runq_cpu *rc = slice(now);

	if (prev->tgid == targ_tgid) {
		__u32 tid = prev->pid;
		/* Still runnable: preempted, or its sleep undone (a signal),
		 * or a yield. prev_state is what __schedule acted on; a
		 * preempted task stays queued whatever its state says. */
		if ((__u8)ctx[0] || (__u32)ctx[3] == TASK_RUNNING) {
			struct runq_start s = { .ts = now, .preempted = 1, .throttled = throttled(prev) };
			if (bpf_map_update_elem(&ksio_rstart, &tid, &s, BPF_ANY))
				rcount(RCNT_START_FULL);
		} else {
			/* Going to sleep (or exiting): a wake-up recorded while
			 * it still ran is void. */
			bpf_map_delete_elem(&ksio_rstart, &tid);
			bpf_map_update_elem(&ksio_rsleep, &tid, &now, BPF_ANY);
		}
	}

	if (next->tgid != targ_tgid)
		return 0;
	__u32 tid = next->pid;
	struct runq_start *s = bpf_map_lookup_elem(&ksio_rstart, &tid);
	if (!s)
		return 0;
	__u64 start = s->ts;
	__u32 preempted = s->preempted, thr = s->throttled;
	if (now - start < min_latency_ns) {
		bpf_map_delete_elem(&ksio_rstart, &tid);
		return 0;
	}
	struct iorunq_event *e = bpf_ringbuf_reserve(&ksio_revents, sizeof(*e), 0);
	if (!e) {
		rcount(RCNT_RINGBUF_DROPS);
		bpf_map_delete_elem(&ksio_rstart, &tid);
		return 0;
	}
	e->start_ns = start;
	e->end_ns = now;
	e->tid = tid;
	e->cpu = bpf_get_smp_processor_id();
	__u64 id = bpf_get_current_pid_tgid(); /* prev: the switch runs in its context */
	e->holder_tid = (__u32)id;
	e->holder_tgid = (__u32)(id >> 32);
	bpf_get_current_comm(e->holder_comm, sizeof(e->holder_comm));
	e->kind = RUNQ_KIND_DELAY;
	e->timer = 0;
	e->preempted = preempted;
	e->throttled = thr;
	e->waker_tid = preempted ? 0 : s->waker_tid;
	e->waker_tgid = preempted ? 0 : s->waker_tgid;
	__builtin_memcpy(e->waker_comm, s->waker_comm, RUNQ_COMM_LEN);
	if (preempted)
		__builtin_memset(e->waker_comm, 0, RUNQ_COMM_LEN);
	bpf_map_delete_elem(&ksio_rstart, &tid);
	__builtin_memset(e->holders, 0, sizeof(e->holders));
	if (rc)
		holders(rc, start, now, e);
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}
