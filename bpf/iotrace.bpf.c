// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iotrace: latency of every write, pwrite64, writev, pwritev, pwritev2,
 * fsync and fdatasync of one process (a Kafka broker), from the syscalls
 * tracepoints only: no kprobes and no fentry, which many kernels refuse.
 *
 * sys_enter records the start time, the file (device, inode) and its
 * offset per thread; sys_exit counts the call in a log2 histogram per
 * (device, inode, op) and, when it took at least min_latency_ns, sends it
 * to user space through a ring buffer. Ring-buffer losses are counted.
 *
 * Kernel types, settings, shared maps and the counting code are in
 * iotrace_common.h; timing a call, from its fd to its histogram, in
 * iosyscall.h, which bpf/iosysfn.bpf.c shares.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "iosyscall.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The syscalls tracepoints' records (see events/syscalls/<name>/format):
 * 8 bytes of common fields, the syscall number padded to 8, then the
 * arguments or the return value. */
struct sys_enter_ctx {
	__u64 common;
	__s64 nr;
	__u64 args[6];
};

struct sys_exit_ctx {
	__u64 common;
	__s64 nr;
	__s64 ret;
};

static __always_inline int on_enter(struct sys_enter_ctx *ctx, __u32 op, __s64 pos)
{
	__u32 tid;
	if (!target_thread(&tid))
		return 0;
	return sys_enter_file(tid, (__s32)ctx->args[0], op, pos);
}

static __always_inline int on_exit(struct sys_exit_ctx *ctx)
{
	__u32 tid;
	if (!target_thread(&tid))
		return 0;
	return sys_exit_file(tid, ctx->ret);
}

/* pos -2: read the file position at entry; -1: no offset (fsyncs). Program
 * names are kept within the kernel's 15 characters and share the ksio_
 * prefix, so that `bpftool prog show` and the leak test can find them. */

SEC("tracepoint/syscalls/sys_enter_write")
int ksio_e_write(struct sys_enter_ctx *ctx) { return on_enter(ctx, OP_WRITE, -2); }

SEC("tracepoint/syscalls/sys_enter_pwrite64")
int ksio_e_pwrite64(struct sys_enter_ctx *ctx) { return on_enter(ctx, OP_PWRITE64, (__s64)ctx->args[3]); }

SEC("tracepoint/syscalls/sys_enter_writev")
int ksio_e_writev(struct sys_enter_ctx *ctx) { return on_enter(ctx, OP_WRITEV, -2); }

/* On 64-bit kernels pos_l holds the whole offset. */
SEC("tracepoint/syscalls/sys_enter_pwritev")
int ksio_e_pwritev(struct sys_enter_ctx *ctx) { return on_enter(ctx, OP_PWRITEV, (__s64)ctx->args[3]); }

/* pwritev2 with offset -1 writes at the current position. */
SEC("tracepoint/syscalls/sys_enter_pwritev2")
int ksio_e_pwritev2(struct sys_enter_ctx *ctx)
{
	__s64 pos = (__s64)ctx->args[3];
	return on_enter(ctx, OP_PWRITEV2, pos == -1 ? -2 : pos);
}

SEC("tracepoint/syscalls/sys_enter_fsync")
int ksio_e_fsync(struct sys_enter_ctx *ctx) { return on_enter(ctx, OP_FSYNC, -1); }

SEC("tracepoint/syscalls/sys_enter_fdatasync")
int ksio_e_fdsync(struct sys_enter_ctx *ctx) { return on_enter(ctx, OP_FDATASYNC, -1); }

SEC("tracepoint/syscalls/sys_exit_write")
int ksio_x_write(struct sys_exit_ctx *ctx) { return on_exit(ctx); }

SEC("tracepoint/syscalls/sys_exit_pwrite64")
int ksio_x_pwrite64(struct sys_exit_ctx *ctx) { return on_exit(ctx); }

SEC("tracepoint/syscalls/sys_exit_writev")
int ksio_x_writev(struct sys_exit_ctx *ctx) { return on_exit(ctx); }

SEC("tracepoint/syscalls/sys_exit_pwritev")
int ksio_x_pwritev(struct sys_exit_ctx *ctx) { return on_exit(ctx); }

SEC("tracepoint/syscalls/sys_exit_pwritev2")
int ksio_x_pwritev2(struct sys_exit_ctx *ctx) { return on_exit(ctx); }

SEC("tracepoint/syscalls/sys_exit_fsync")
int ksio_x_fsync(struct sys_exit_ctx *ctx) { return on_exit(ctx); }

SEC("tracepoint/syscalls/sys_exit_fdatasync")
int ksio_x_fdsync(struct sys_exit_ctx *ctx) { return on_exit(ctx); }
