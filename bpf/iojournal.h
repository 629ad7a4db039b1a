/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared between bpf/iojournal.bpf.c and internal/iotrace (via bpf2go's
 * -type flags): keep the layouts fixed-width and padded by hand. */
#ifndef __KSCOPE_IOJOURNAL_H
#define __KSCOPE_IOJOURNAL_H

#define JMAX_SLOTS 40 /* log2 buckets of nanoseconds, as MAX_SLOTS in iotrace.h */

/* What a histogram or an event counts. The Go side names them
 * (internal/iotrace Kind). */
enum iojournal_kind {
	JK_JBD2_COMMIT = 0,  /* jbd2_start_commit -> jbd2_end_commit */
	JK_EXT4_FSYNC = 1,   /* ext4_sync_file_enter -> ext4_sync_file_exit */
	JK_XLOG_WRITE = 2,   /* xlog_iclog_write -> xlog_iclog_sync_done */
	JK_XFS_FORCE = 3,    /* xfs_log_force: counted, no latency */
	JK_BLK_READ = 4,     /* block_rq_issue -> block_rq_complete, by rwbs */
	JK_BLK_WRITE = 5,
	JK_BLK_FLUSH = 6,
	JK_BLK_OTHER = 7,    /* discard, secure erase, write zeroes... */
	JK_EXT4_FC_COMMIT = 8, /* ext4_fc_commit_start -> ext4_fc_commit_stop */
	JK_MAX = 9,
};

/* One journal commit, fsync, log write or block request at or above
 * min_latency_ns. Which fields mean something depends on kind. */
struct iojournal_event {
	__u64 start_ns;  /* bpf_ktime_get_ns (CLOCK_MONOTONIC) */
	__u64 end_ns;
	__u64 id;        /* jbd2 transaction id (also a fast commit's); XFS iclog lsn; block sector; ext4 inode */
	/* jbd2_run_stats phases, in jiffies (the tracepoint's unit) */
	__u64 wait;
	__u64 request_delay;
	__u64 running;
	__u64 locked;
	__u64 flushing;
	__u64 logging;
	__u32 handle_count;
	__u32 blocks;    /* also a fast commit's blocks written (nblks) */
	__u32 blocks_logged;
	__u32 dev;       /* kernel dev_t (major << 20 | minor) */
	__u32 kind;      /* enum iojournal_kind */
	__u32 bytes;     /* block request bytes */
	__s32 err;       /* block request error, fsync return */
	__u32 tid;       /* the fsync's or fast commit's thread */
	__u32 pid;       /* and its process */
	__u8 has_stats;  /* jbd2: the run_stats phases were seen */
	__u8 sync;       /* jbd2 sync_commit; ext4 fsync datasync */
	char rwbs[8];    /* block: the request's rwbs flags, e.g. "WS", "FWFS" */
	/* fast commit: ext4_fc_commit_stop's reason (EXT4_FC_STATUS_OK 0,
	 * INELIGIBLE 1, SKIPPED 2, FAILED 3), 255 for one past a u8 */
	__u8 fc_status;
	__u8 pad[9];     /* to 128 bytes */
};

struct iojournal_hist_key {
	__u32 dev;
	__u32 kind;
};

/* Every commit, fsync, log write and request, slow or not, is counted. */
struct iojournal_hist {
	__u64 slots[JMAX_SLOTS];
	__u64 count;
	__u64 bytes;
	__u64 total_ns;
};

#endif /* __KSCOPE_IOJOURNAL_H */
