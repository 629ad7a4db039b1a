/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared between bpf/iorunq.bpf.c and internal/iotrace (via bpf2go's
 * -type flags): keep the layouts fixed-width and padded by hand. */
#ifndef __KSCOPE_IORUNQ_H
#define __KSCOPE_IORUNQ_H

#define RUNQ_COMM_LEN 16

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
	__u32 pad;
};

enum iorunq_counter {
	RCNT_RINGBUF_DROPS = 0, /* delays lost: ring buffer full */
	RCNT_START_FULL = 1,    /* delays not timed: start map full */
	RCNT_MAX = 2,
};

#endif
