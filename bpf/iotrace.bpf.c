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
 * The kernel types below are declared by hand with preserve_access_index
 * (CO-RE): libbpf-style relocation against the running kernel's BTF fixes
 * the field offsets at load time, so no vmlinux.h is needed in the tree.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "iotrace.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct super_block {
	__u32 s_dev;
} __attribute__((preserve_access_index));

struct inode {
	unsigned short i_mode;
	unsigned long i_ino;
	struct super_block *i_sb;
} __attribute__((preserve_access_index));

struct file {
	struct inode *f_inode;
	long long f_pos;
} __attribute__((preserve_access_index));

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

/* Set by user space before loading. */
const volatile __u32 targ_tgid = 0;
const volatile __u64 min_latency_ns = 0;
/* When set, only files on the devices in ksio_devs are traced: the log
 * directories' file systems. */
const volatile __u8 filter_dev = 0;

#define S_IFMT 00170000
#define S_IFREG 0100000

struct start {
	__u64 ts;
	__s64 pos;
	__u64 ino;
	__u32 dev;
	__s32 fd;
	__u32 op;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tid */
	__type(value, struct start);
} ksio_starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32); /* super_block.s_dev */
	__type(value, __u8);
} ksio_devs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct iotrace_hist_key);
	__type(value, struct iotrace_hist);
} ksio_hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22); /* 4 MiB: 85k events of 48 bytes */
} ksio_events SEC(".maps");

/* Puts struct iotrace_event into the BTF for bpf2go's -type. */
const struct iotrace_event *unused_event __attribute__((unused));

/* Counters for what could not be delivered or counted. */
enum {
	CNT_RINGBUF_DROPS = 0, /* slow calls lost because the ring buffer was full */
	CNT_HIST_FULL = 1,     /* calls not counted: ksio_hists was full */
	CNT_START_FULL = 2,    /* calls not timed: ksio_starts was full */
	CNT_MAX = 3,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} ksio_counters SEC(".maps");

/* A zeroed histogram to insert from: too big for the 512-byte stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct iotrace_hist);
} ksio_zero SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&ksio_counters, &which);
	if (v)
		(*v)++;
}

static __always_inline __u32 log2l(__u64 v)
{
	__u32 r = 0;
	/* Bounded: at most 64 iterations, unrolled. */
#pragma unroll
	for (int i = 32; i > 0; i /= 2) {
		if (v >= (1ULL << i)) {
			v >>= i;
			r += i;
		}
	}
	return r;
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
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	if (!fdt || s.fd < 0 || (__u32)s.fd >= BPF_CORE_READ(fdt, max_fds))
		return 0;
	struct file **fds = BPF_CORE_READ(fdt, fd);
	struct file *f = NULL;
	bpf_probe_read_kernel(&f, sizeof(f), &fds[s.fd]);
	if (!f)
		return 0;
	struct inode *inode = BPF_CORE_READ(f, f_inode);
	if ((BPF_CORE_READ(inode, i_mode) & S_IFMT) != S_IFREG)
		return 0;
	s.dev = BPF_CORE_READ(inode, i_sb, s_dev);
	if (filter_dev && !bpf_map_lookup_elem(&ksio_devs, &s.dev))
		return 0;
	s.ino = BPF_CORE_READ(inode, i_ino);
	if (pos == -2)
		s.pos = BPF_CORE_READ(f, f_pos);
	s.ts = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&ksio_starts, &tid, &s, BPF_ANY))
		count(CNT_START_FULL);
	return 0;
}

static __always_inline int on_exit(struct sys_exit_ctx *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	if ((__u32)(id >> 32) != targ_tgid)
		return 0;
	__u32 tid = (__u32)id;
	struct start *s = bpf_map_lookup_elem(&ksio_starts, &tid);
	if (!s)
		return 0; /* entered before we attached */
	__u64 end = bpf_ktime_get_ns();
	__u64 lat = end - s->ts;
	__s64 ret = ctx->ret;

	struct iotrace_hist_key key = { .ino = s->ino, .dev = s->dev, .op = s->op };
	struct iotrace_hist *h = bpf_map_lookup_elem(&ksio_hists, &key);
	if (!h) {
		__u32 zero = 0;
		struct iotrace_hist *z = bpf_map_lookup_elem(&ksio_zero, &zero);
		if (z)
			bpf_map_update_elem(&ksio_hists, &key, z, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&ksio_hists, &key);
	}
	if (h) {
		__u32 slot = log2l(lat);
		if (slot >= MAX_SLOTS)
			slot = MAX_SLOTS - 1;
		__sync_fetch_and_add(&h->slots[slot], 1);
		__sync_fetch_and_add(&h->count, 1);
		__sync_fetch_and_add(&h->total_ns, lat);
		if (ret > 0 && s->op != OP_FSYNC && s->op != OP_FDATASYNC)
			__sync_fetch_and_add(&h->bytes, (__u64)ret);
		if (ret < 0)
			__sync_fetch_and_add(&h->errors, 1);
	} else {
		count(CNT_HIST_FULL);
	}

	if (lat >= min_latency_ns) {
		struct iotrace_event *e = bpf_ringbuf_reserve(&ksio_events, sizeof(*e), 0);
		if (!e) {
			count(CNT_RINGBUF_DROPS);
		} else {
			e->start_ns = s->ts;
			e->end_ns = end;
			e->ret = ret;
			e->pos = s->pos;
			e->ino = s->ino;
			e->dev = s->dev;
			e->tid = tid;
			e->fd = s->fd;
			e->op = s->op;
			bpf_ringbuf_submit(e, 0);
		}
	}
	bpf_map_delete_elem(&ksio_starts, &tid);
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
