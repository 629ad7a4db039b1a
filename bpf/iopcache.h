/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared between bpf/iopcache.bpf.c and internal/iotrace (via bpf2go's
 * -type flags): keep the layouts fixed-width and padded by hand. */
#ifndef __KSCOPE_IOPCACHE_H
#define __KSCOPE_IOPCACHE_H

/* A run of pages one broker thread added to the page cache reading one
 * file: from the first add to the last, with no gap over gap_ns. */
struct iopcache_event {
	__u64 start_ns; /* bpf_ktime_get_ns (CLOCK_MONOTONIC) */
	__u64 end_ns;
	__u64 ino;
	__u64 pages;
	__u32 tid;
	__u32 dev; /* the kernel's dev_t: major << 20 | minor */
};

enum iopcache_counter {
	PCNT_ADDS = 0,          /* the broker's page adds seen */
	PCNT_RINGBUF_DROPS = 1, /* runs lost: ring buffer full */
	PCNT_RUNS_FULL = 2,     /* adds not followed: run map full */
	PCNT_MAX = 3,
};

#endif
