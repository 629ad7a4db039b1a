/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What bpf/iotrace.bpf.c (system calls) and bpf/iofunc.bpf.c (file system
 * functions) share: the kernel types they read, the settings user space
 * fills in, the maps (iofunc's are replaced by iotrace's at load time, so
 * both count into the same histograms and send through the same ring
 * buffer), and the code that counts and reports a timed call.
 *
 * The kernel types are declared by hand with preserve_access_index
 * (CO-RE): libbpf-style relocation against the running kernel's BTF fixes
 * the field offsets at load time, so no vmlinux.h is needed in the tree.
 */
#ifndef __KSCOPE_IOTRACE_COMMON_H
#define __KSCOPE_IOTRACE_COMMON_H

#include "iotrace.h"

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

/* Set by user space before loading. */
const volatile __u32 targ_tgid = 0;
const volatile __u64 min_latency_ns = 0;
/* When set, only files on the devices in ksio_devs are traced: the log
 * directories' file systems. */
const volatile __u8 filter_dev = 0;
/* BPF_RB_NO_WAKEUP when the reader polls the ring (the agent): a wake-up
 * per event is work in the traced thread's context that no one waits
 * for. Set by user space before loading. */
const volatile __u64 ringbuf_flags = 0;

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


/* finish counts a timed call in its file's histogram and, when it took at
 * least min_latency_ns, sends it to user space. */
static __always_inline void finish(struct start *s, __u32 tid, __u64 end, __s64 ret)
{
	__u64 lat = end - s->ts;
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
			bpf_ringbuf_submit(e, ringbuf_flags);
		}
	}
}

/* file_start fills s with f's identity (device, inode) and returns 1 when
 * f is a regular file on a traced device, else 0. */
static __always_inline int file_start(struct file *f, struct start *s)
{
	if (!f)
		return 0;
	struct inode *inode = BPF_CORE_READ(f, f_inode);
	if ((BPF_CORE_READ(inode, i_mode) & S_IFMT) != S_IFREG)
		return 0;
	s->dev = BPF_CORE_READ(inode, i_sb, s_dev);
	if (filter_dev && !bpf_map_lookup_elem(&ksio_devs, &s->dev))
		return 0;
	s->ino = BPF_CORE_READ(inode, i_ino);
	return 1;
}

#endif /* __KSCOPE_IOTRACE_COMMON_H */
