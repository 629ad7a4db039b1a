/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared between bpf/iowait.bpf.c and internal/iotrace (via bpf2go's
 * -type flags): keep the layouts fixed-width and padded by hand. */
#ifndef __KSCOPE_IOWAIT_H
#define __KSCOPE_IOWAIT_H

#define WAIT_STACK_DEPTH 32

/* One broker thread's stay off the CPU after it went to sleep
 * uninterruptibly (D state), at or above min_latency_ns: from the switch
 * away to the switch back, so it includes the wait for a CPU after the
 * wake-up. The kernel stack is where it went to sleep. */
struct iowait_event {
	__u64 start_ns; /* bpf_ktime_get_ns (CLOCK_MONOTONIC) */
	__u64 end_ns;
	__u32 tid;
	__s32 stack_id; /* in ksio_wstacks; negative: not recorded */
};

enum iowait_counter {
	WCNT_RINGBUF_DROPS = 0, /* waits lost: ring buffer full */
	WCNT_START_FULL = 1,    /* waits not timed: start map full */
	WCNT_STACK_LOST = 2,    /* stacks not recorded (map full, or error) */
	WCNT_MAX = 3,
};

#endif
