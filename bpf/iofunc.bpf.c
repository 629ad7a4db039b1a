// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iofunc: function-level timing of a broker's writes inside the file
 * system, with fentry/fexit on ext4_file_write_iter and
 * xfs_file_write_iter: the time from the file system taking the write to
 * its return, without the system call around it (fd lookup, the file
 * position lock of write(2), vfs checks). Loaded only where the kernel
 * allows BPF trampolines (internal/iotrace ProbeFunctionMode); elsewhere
 * the syscalls tracepoints of bpf/iotrace.bpf.c are all there is.
 *
 * Calls go into iotrace's maps (replaced at load time): the same
 * histograms, as ops OP_EXT4_WRITE_ITER and OP_XFS_WRITE_ITER, and the
 * same ring buffer, with fd -1.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "iotrace_common.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct kiocb {
	struct file *ki_filp;
	long long ki_pos;
} __attribute__((preserve_access_index));

/* Started calls per thread. Kept apart from the system calls' starts: a
 * write(2) and the file system call inside it are timed at once. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tid */
	__type(value, struct start);
} ksio_fstarts SEC(".maps");

static __always_inline int fn_enter(struct kiocb *iocb, __u32 op)
{
	__u64 id = bpf_get_current_pid_tgid();
	if ((__u32)(id >> 32) != targ_tgid)
		return 0;
	__u32 tid = (__u32)id;
	struct start s = {};
	s.fd = -1;
	s.op = op;
	if (!file_start(BPF_CORE_READ(iocb, ki_filp), &s))
		return 0;
	s.pos = BPF_CORE_READ(iocb, ki_pos);
	s.ts = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&ksio_fstarts, &tid, &s, BPF_ANY))
		count(CNT_START_FULL);
	return 0;
}

static __always_inline int fn_exit(__s64 ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	if ((__u32)(id >> 32) != targ_tgid)
		return 0;
	__u32 tid = (__u32)id;
	struct start *s = bpf_map_lookup_elem(&ksio_fstarts, &tid);
	if (!s)
		return 0; /* entered before we attached */
	finish(s, tid, bpf_ktime_get_ns(), ret);
	bpf_map_delete_elem(&ksio_fstarts, &tid);
	return 0;
}

/* ssize_t xxx_file_write_iter(struct kiocb *iocb, struct iov_iter *from):
 * a tracing program's context is the arguments, then (fexit) the return
 * value, each widened to 64 bits. */

SEC("fentry/ext4_file_write_iter")
int ksio_fe_ext4(__u64 *ctx) { return fn_enter((struct kiocb *)ctx[0], OP_EXT4_WRITE_ITER); }

SEC("fexit/ext4_file_write_iter")
int ksio_fx_ext4(__u64 *ctx) { return fn_exit((__s64)ctx[2]); }

SEC("fentry/xfs_file_write_iter")
int ksio_fe_xfs(__u64 *ctx) { return fn_enter((struct kiocb *)ctx[0], OP_XFS_WRITE_ITER); }

SEC("fexit/xfs_file_write_iter")
int ksio_fx_xfs(__u64 *ctx) { return fn_exit((__s64)ctx[2]); }
