/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared between bpf/iosock.bpf.c and internal/iotrace (via bpf2go's
 * -type flags): keep the layouts fixed-width and padded by hand. */
#ifndef __KSCOPE_IOSOCK_H
#define __KSCOPE_IOSOCK_H

/* How many local ports (the broker's listeners) can be filtered on. */
#define SOCK_MAX_PORTS 16

/* A broker thread received on a client connection's socket, and the
 * connection was not known to be served by it: the first receive, or the
 * first after the connection moved to another thread. */
struct iosock_event {
	__u64 ts_ns;     /* bpf_ktime_get_ns (CLOCK_MONOTONIC) */
	__u64 cookie;    /* the socket's cookie (SO_COOKIE) */
	__u32 tid;
	__u16 family;    /* AF_INET or AF_INET6 */
	__u16 lport;     /* local (broker) port, host order */
	__u16 rport;     /* remote (client) port, host order */
	__u16 pad1;
	__u32 pad2;
	__u8 laddr[16];  /* AF_INET: the first 4 bytes; network order */
	__u8 raddr[16];
};

enum iosock_counter {
	KCNT_RINGBUF_DROPS = 0, /* connections lost: ring buffer full */
	KCNT_RECVS = 1,         /* receives on the broker's ports seen */
	KCNT_MAX = 2,
};

#endif
