// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iosysfn: the same timing of the traced process's write, pwrite64,
 * writev, pwritev, pwritev2, fsync and fdatasync calls as
 * bpf/iotrace.bpf.c, from fentry/fexit on the system call functions
 * (__x64_sys_write, ...) instead of the syscalls tracepoints. Loaded where
 * the kernel allows BPF trampolines (internal/iotrace sysfn.go); the
 * tracepoints are then not attached.
 *
 * Why: while any program is on a syscalls tracepoint, the kernel takes
 * every system call of every process through its slow path to the
 * tracepoints, and fills a trace record for every write of every process
 * before the program can check whose it is (bench/syscall-cost.sh). A
 * trampoline is entered only by the calls it is on, and goes straight to
 * the program, whose first test is the process.
 *
 * Maps are replaced by iotrace's at load time (iosyscall.h).
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "iosyscall.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* x86-64's system call functions take the user's registers (the
 * syscall wrapper, CONFIG_ARCH_HAS_SYSCALL_WRAPPER): arguments in di, si,
 * dx, r10, r8, r9. A tracing program's context holds the function's
 * arguments as typed pointers, so these are plain loads. */
struct pt_regs {
	unsigned long di;
	unsigned long r10;
} __attribute__((preserve_access_index));

static __always_inline int fn_enter(struct pt_regs *regs, __u32 op, int has_pos)
{
	__u32 tid;
	if (!target_thread(&tid))
		return 0;
	__s64 pos = -1; /* fsyncs */
	if (op == OP_WRITE || op == OP_WRITEV)
		pos = -2;
	if (has_pos) {
		/* pwrite64's pos, pwritev's and pwritev2's pos_l, which on
		 * 64-bit kernels holds the whole offset; pwritev2 with -1
		 * writes at the current position. */
		pos = (__s64)regs->r10;
		if (op == OP_PWRITEV2 && pos == -1)
			pos = -2;
	}
	return sys_enter_file(tid, (__s32)regs->di, op, pos);
}

static __always_inline int fn_exit(__s64 ret)
{
	__u32 tid;
	if (!target_thread(&tid))
		return 0;
	return sys_exit_file(tid, ret);
}

/* long __x64_sys_NAME(const struct pt_regs *regs): ctx[0] is regs and,
 * at fexit, ctx[1] the return value. Program names: ksio_se_* (entry),
 * ksio_sx_* (exit), within the kernel's 15 characters. */

SEC("fentry/__x64_sys_write")
int ksio_se_write(__u64 *ctx) { return fn_enter((struct pt_regs *)ctx[0], OP_WRITE, 0); }

SEC("fentry/__x64_sys_pwrite64")
int ksio_se_pwrite(__u64 *ctx) { return fn_enter((struct pt_regs *)ctx[0], OP_PWRITE64, 1); }

SEC("fentry/__x64_sys_writev")
int ksio_se_writev(__u64 *ctx) { return fn_enter((struct pt_regs *)ctx[0], OP_WRITEV, 0); }

SEC("fentry/__x64_sys_pwritev")
int ksio_se_pwritev(__u64 *ctx) { return fn_enter((struct pt_regs *)ctx[0], OP_PWRITEV, 1); }

SEC("fentry/__x64_sys_pwritev2")
int ksio_se_pwritv2(__u64 *ctx) { return fn_enter((struct pt_regs *)ctx[0], OP_PWRITEV2, 1); }

SEC("fentry/__x64_sys_fsync")
int ksio_se_fsync(__u64 *ctx) { return fn_enter((struct pt_regs *)ctx[0], OP_FSYNC, 0); }

SEC("fentry/__x64_sys_fdatasync")
int ksio_se_fdsync(__u64 *ctx) { return fn_enter((struct pt_regs *)ctx[0], OP_FDATASYNC, 0); }

SEC("fexit/__x64_sys_write")
int ksio_sx_write(__u64 *ctx) { return fn_exit((__s64)ctx[1]); }

SEC("fexit/__x64_sys_pwrite64")
int ksio_sx_pwrite(__u64 *ctx) { return fn_exit((__s64)ctx[1]); }

SEC("fexit/__x64_sys_writev")
int ksio_sx_writev(__u64 *ctx) { return fn_exit((__s64)ctx[1]); }

SEC("fexit/__x64_sys_pwritev")
int ksio_sx_pwritev(__u64 *ctx) { return fn_exit((__s64)ctx[1]); }

SEC("fexit/__x64_sys_pwritev2")
int ksio_sx_pwritv2(__u64 *ctx) { return fn_exit((__s64)ctx[1]); }

SEC("fexit/__x64_sys_fsync")
int ksio_sx_fsync(__u64 *ctx) { return fn_exit((__s64)ctx[1]); }

SEC("fexit/__x64_sys_fdatasync")
int ksio_sx_fdsync(__u64 *ctx) { return fn_exit((__s64)ctx[1]); }
