/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared between bpf/iorunq.bpf.c and internal/iotrace (via bpf2go's
 * -type flags): keep the layouts fixed-width and padded by hand. */
#ifndef __KSCOPE_IORUNQ_H
#define __KSCOPE_IORUNQ_H

#define RUNQ_COMM_LEN 16
/* Each CPU keeps its last RUNQ_SLICES run slices (power of two): who ran
 * while a broker thread waited there. */
#define RUNQ_SLICES 32
/* The tasks that ran the longest during a wait, by process. */
#define RUNQ_HOLDERS 3

/* A process that had the CPU while a broker thread waited for it: ns of
 * the wait it ran, and its thread that ran the longest. */
struct iorunq_holder {
	__u64 ns;
	__u32 tgid; /* 0: the CPU was idle */
	__u32 tid;
	char comm[RUNQ_COMM_LEN];
};

/* One broker thread that was runnable but not running for at least
 * min_latency_ns: from its wake-up (or its preemption) to the switch that
 * gave it a CPU. The holder is the task switched away from at that
 * switch: the one that had the CPU until the broker thread got it. */
struct iorunq_event {
	__u64 start_ns; /* bpf_ktime_get_ns (CLOCK_MONOTONIC) */
	__u64 end_ns;
	__u32 tid;
	__u32 cpu;         /* where it then ran */
	__u32 holder_tid;  /* 0: the idle task */
	__u32 holder_tgid;
	char holder_comm[RUNQ_COMM_LEN];
	__u32 preempted;   /* 1: preempted while it ran; 0: woken */
	/* 1: its cgroup (or an ancestor) was throttled by its CPU quota when
	 * the wait began: the thread waited for quota, not for a CPU. */
	__u32 throttled;
	/* From the CPU's last RUNQ_SLICES slices; ns 0: unused. */
	struct iorunq_holder holders[RUNQ_HOLDERS];
	/* Woken waits: the task that woke it (0: preempted, or woken from
	 * an interrupt with no task). A broker thread woken by another of
	 * the broker's waited for that one: a lock, a queue. */
	__u32 waker_tid;
	__u32 waker_tgid;
	char waker_comm[RUNQ_COMM_LEN];
	/* RUNQ_KIND_DELAY: a wait for a CPU (above). RUNQ_KIND_WAKE: the
	 * thread slept (start_ns to end_ns, the wake-up) and another thread
	 * of the broker woke it, or (timer 1) its own timeout ended the sleep:
	 * no cpu, holders or preempted. */
	__u32 kind;
	/* 1: the wake-up ran in a timer's expiry (hrtimer), whatever task the
	 * CPU was running: a timed wait ran out. waker_* are 0 then. */
	__u32 timer;
};

#define RUNQ_KIND_DELAY 0
#define RUNQ_KIND_WAKE 1

enum iorunq_counter {
	RCNT_RINGBUF_DROPS = 0, /* delays lost: ring buffer full */
	RCNT_START_FULL = 1,    /* delays not timed: start map full */
	RCNT_MAX = 2,
};

#endif
