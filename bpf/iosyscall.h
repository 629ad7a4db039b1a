/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Timing a write or fsync system call of the traced process, whatever
 * runs the code: bpf/iotrace.bpf.c from the syscalls tracepoints, or
 * bpf/iosysfn.bpf.c from fentry/fexit on the system call functions where
 * the kernel allows BPF trampolines. sys_enter_file takes the call's fd,
 * op and offset at entry; sys_exit_file its return at exit. Both check
 * the process first.
 *
 * iosysfn's maps are replaced by iotrace's at load time: both time into
 * the same starts, histograms and ring buffer.
 */
#ifndef __KSCOPE_IOSYSCALL_H
#define __KSCOPE_IOSYSCALL_H

#include "iotrace_common.h"

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

/* target_thread reports whether the current thread belongs to the traced
 * process, and sets tid: the first thing every program checks, since it
 * runs for the calls of every process. */
static __always_inline int target_thread(__u32 *tid)
{
	__u64 id = bpf_get_current_pid_tgid();
	*tid = (__u32)id;
	return (__u32)(id >> 32) == targ_tgid;
}

/* sys_enter_file starts timing a call of thread tid (the current one) on
 * fd: pos is its offset, -2 to read the file position, -1 for none
 * (fsyncs). */
static __always_inline int sys_enter_file(__u32 tid, __s32 fd, __u32 op, __s64 pos)
{
	struct start s = {};
	s.fd = fd;
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

/* sys_exit_file finishes timing thread tid's call, if it was timed, with
 * its return value. */
static __always_inline int sys_exit_file(__u32 tid, __s64 ret)
{
	__s64 *pending = pending_count();
	if (!pending || *(volatile __s64 *)pending <= 0)
		return 0;
	struct start *s = bpf_map_lookup_elem(&ksio_starts, &tid);
	if (!s)
		return 0; /* not a traced file, or entered before we attached */
	finish(s, tid, bpf_ktime_get_ns(), ret);
	if (bpf_map_delete_elem(&ksio_starts, &tid) == 0)
		__sync_fetch_and_add(pending, -1);
	return 0;
}

#endif /* __KSCOPE_IOSYSCALL_H */
