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
 * iotrace_common.h.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "iotrace_common.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct fdtable {
	unsigned int max_fds;
	struct file **fd;
} __attribute__((preserve_access_index));

struct files_struct {
	struct fdtable *fdt;
} __attribute__((preserve_access_index));

struct task_struct {
	struct files_struct *files;
} __attribute__((preserve_access_index));

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

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tid */
	__type(value, struct start);
} ksio_starts SEC(".maps");

/* How many threads ksio_starts holds: a traced call lasts microseconds,
 * so nearly always none, and the exit of every other write (sockets,
 * eventfds: most of a broker's) skips the lookup by tid. An entry is
 * counted when inserted and uncounted when deleted; a thread's exit
 * follows its own entry, so it sees the count. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __s64);
} ksio_pending SEC(".maps");

static __always_inline __s64 *pending_count(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&ksio_pending, &zero);
}

/* Set by user space: the kernel has bpf_get_current_task_btf (5.11). */
const volatile __u8 task_btf = 0;

/* fd_file returns the current task's struct file for fd, or NULL. With
 * task_btf the task comes as a typed pointer, and the walk to the fd
 * array is four plain loads the verifier checks (faults read as 0)
 * instead of four bpf_probe_read_kernel calls: this runs on every write
 * of the broker, most of them to sockets and eventfds, which it then
 * skips (at the broker's maximum here 56k a second). The verifier drops
 * the branch the running kernel does not take, so older kernels never
 * see the helper. The array's slot itself is a variable offset into
 * untyped memory: read with the helper either way. */
static __always_inline struct file *fd_file(__s32 fd)
{
	struct fdtable *fdt;
	if (task_btf) {
		struct task_struct *task = bpf_get_current_task_btf();
		fdt = task->files->fdt;
		if (!fdt || fd < 0 || (__u32)fd >= fdt->max_fds)
			return NULL;
		struct file **fds = fdt->fd;
		struct file *f = NULL;
		bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
		return f;
	}
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	fdt = BPF_CORE_READ(task, files, fdt);
	if (!fdt || fd < 0 || (__u32)fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	struct file **fds = BPF_CORE_READ(fdt, fd);
	struct file *f = NULL;
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	return f;
}

static __always_inline int on_enter(struct sys_enter_ctx *ctx, __u32 op, __s64 pos)
{
	__u64 id = bpf_get_current_pid_tgid();
	if ((__u32)(id >> 32) != targ_tgid)
		return 0;
	__u32 tid = (__u32)id;
	struct start s = {};
	s.fd = (__s32)ctx->args[0];
	s.op = op;
	s.pos = pos;

	/* The file behind fd, from the task's fd table: its identity and,
	 * for writes at the current position, that position. Java's
	 * FileChannel appends with write(), which takes no offset. Only
	 * regular files are traced: a broker's hottest writes are to sockets,
	 * pipes and eventfds, which are neither timed nor counted. */
	struct file *f = fd_file(s.fd);
	if (!file_start(f, &s))
		return 0;
	if (pos == -2)
		s.pos = BPF_CORE_READ(f, f_pos);
	__s64 *pending = pending_count();
	if (!pending)
		return 0;
	s.ts = bpf_ktime_get_ns();
	/* An entry left by a call whose exit was missed is overwritten, not
	 * counted twice. */
	if (bpf_map_update_elem(&ksio_starts, &tid, &s, BPF_NOEXIST) == 0)
		__sync_fetch_and_add(pending, 1);
	else if (bpf_map_update_elem(&ksio_starts, &tid, &s, BPF_EXIST))
		count(CNT_START_FULL);
	return 0;
}

static __always_inline int on_exit(struct sys_exit_ctx *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	if ((__u32)(id >> 32) != targ_tgid)
		return 0;
	__s64 *pending = pending_count();
	if (!pending || *(volatile __s64 *)pending <= 0)
		return 0;
	__u32 tid = (__u32)id;
	struct start *s = bpf_map_lookup_elem(&ksio_starts, &tid);
	if (!s)
		return 0; /* not a traced file, or entered before we attached */
	finish(s, tid, bpf_ktime_get_ns(), ctx->ret);
	if (bpf_map_delete_elem(&ksio_starts, &tid) == 0)
		__sync_fetch_and_add(pending, -1);
	return 0;
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
