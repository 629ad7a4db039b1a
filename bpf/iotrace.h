/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared between bpf/iotrace.bpf.c and internal/iotrace (via bpf2go's
 * -type flags): keep the layouts fixed-width and padded by hand. */
#ifndef __KSCOPE_IOTRACE_H
#define __KSCOPE_IOTRACE_H

#define MAX_SLOTS 40 /* log2 buckets of nanoseconds: up to 2^40 ns, 18 minutes */

/* The traced system calls, and (bpf/iofunc.bpf.c, where the kernel allows
 * fentry) file system functions. The Go side names them (internal/iotrace
 * Op). */
enum iotrace_op {
	OP_WRITE = 0,
	OP_PWRITE64 = 1,
	OP_WRITEV = 2,
	OP_PWRITEV = 3,
	OP_PWRITEV2 = 4,
	OP_FSYNC = 5,
	OP_FDATASYNC = 6,
	OP_EXT4_WRITE_ITER = 7,
	OP_XFS_WRITE_ITER = 8,
	OP_MAX = 9,
};

/* One call at or above min_latency_ns, sent through the ring buffer. */
struct iotrace_event {
	__u64 start_ns; /* bpf_ktime_get_ns (CLOCK_MONOTONIC) at sys_enter */
	__u64 end_ns;   /* at sys_exit */
	__s64 ret;      /* the syscall's return: bytes written, or -errno */
	__s64 pos;      /* file offset the write started at; -1 for fsyncs */
	__u64 ino;      /* inode of the file behind fd at sys_enter */
	__u32 dev;      /* its super block's kernel dev_t (major << 20 | minor) */
	__u32 tid;
	__s32 fd;
	__u32 op;       /* enum iotrace_op */
};

/* Histogram key: per file (device, inode) rather than per fd, so that an
 * fd closed and reused for another segment during the trace cannot mix two
 * files' counts. */
struct iotrace_hist_key {
	__u64 ino;
	__u32 dev;
	__u32 op;
};

/* Every call, slow or not, is counted here. */
struct iotrace_hist {
	__u64 slots[MAX_SLOTS]; /* slot i: latency in [2^i, 2^(i+1)) ns; slot 0 also holds 0 */
	__u64 count;
	__u64 bytes;    /* sum of positive returns of the write calls */
	__u64 total_ns;
	__u64 errors;   /* calls that returned -errno */
};

#endif /* __KSCOPE_IOTRACE_H */
