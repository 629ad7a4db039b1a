/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared between bpf/iosteal.bpf.c and internal/iotrace (via bpf2go's
 * -type flags): keep the layouts fixed-width and padded by hand. */
#ifndef __KSCOPE_IOSTEAL_H
#define __KSCOPE_IOSTEAL_H

/* Time the hypervisor took from one CPU between two context switches on
 * it: one task (tid, or the idle task) had the CPU from start_ns to
 * end_ns, and stolen_ns of that was spent with the virtual CPU not
 * running at all. */
struct iosteal_event {
	__u64 start_ns; /* bpf_ktime_get_ns (CLOCK_MONOTONIC) */
	__u64 end_ns;
	__u64 stolen_ns;
	__u32 cpu;
	__u32 tid;  /* the task that had the CPU in between (0: idle) */
	__u32 tgid; /* its process */
	__u32 pad;
};

enum iosteal_counter {
	SCNT_RINGBUF_DROPS = 0, /* episodes lost: ring buffer full */
	SCNT_SWITCHES = 1,      /* context switches seen */
	SCNT_MAX = 2,
};

#endif
