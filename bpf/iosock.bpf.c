// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iosock: which of the broker's threads serves each client connection. A
 * Kafka broker hands each accepted connection to one network (processor)
 * thread, which does all its reads for the connection's life: every
 * request of the connection passes through that thread's CPU time, its
 * blocking and its run-queue waits.
 *
 * sock:sock_recv_length fires at the end of every sock_recvmsg (read(2),
 * recvmsg(2), ...), in the receiving thread's context. As a BTF raw
 * tracepoint its socket is a typed struct sock *, whose addresses and
 * ports are read with CO-RE. Filters, cheapest first: the current process
 * is the broker; the socket's local port is one of the broker's
 * (listener) ports; it is TCP over IPv4 or IPv6. An LRU hash remembers,
 * per socket (by its cookie, which unlike its address is never reused),
 * the thread last reported, so only a new connection, or one that moved
 * to another thread, leaves the kernel.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "iosock.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 targ_tgid = 0;
/* The broker's ports, host order; unused slots are 0 (never a socket's). */
const volatile __u16 kafka_ports[SOCK_MAX_PORTS] = {};
/* BPF_RB_NO_WAKEUP when the reader polls the ring (the agent): a wake-up
 * per event is work in the traced thread's context that no one waits
 * for. Set by user space before loading. */
const volatile __u64 ringbuf_flags = 0;

#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_TCP 6

struct in6_addr {
	__u8 s6_addr[16];
};

struct sock_common {
	__be32 skc_daddr;
	__be32 skc_rcv_saddr;
	__be16 skc_dport;
	__u16 skc_num;
	unsigned short skc_family;
	struct in6_addr skc_v6_daddr;
	struct in6_addr skc_v6_rcv_saddr;
} __attribute__((preserve_access_index));

struct sock {
	struct sock_common __sk_common;
	__u16 sk_protocol;
} __attribute__((preserve_access_index));

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);   /* socket cookie */
	__type(value, __u32); /* tid last reported */
} ksio_kconns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 18); /* 256 KiB: 4k connections of 64 bytes */
} ksio_kevents SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KCNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} ksio_kcounters SEC(".maps");

static __always_inline void kcount(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&ksio_kcounters, &which);
	if (v)
		(*v)++;
}

/* Force the event type into BTF for bpf2go's -type. */
const struct iosock_event *unused_iosock_event __attribute__((unused));

static __always_inline int kafka_port(__u16 port)
{
#pragma unroll
	for (int i = 0; i < SOCK_MAX_PORTS; i++)
		if (kafka_ports[i] == port)
			return 1;
	return 0;
}

/* Arguments of sock_recv_length: sk, ret (bytes or -errno), flags. */
SEC("tp_btf/sock_recv_length")
int ksio_sock_recv(__u64 *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	if ((__u32)(id >> 32) != targ_tgid)
		return 0;
	struct sock *sk = (struct sock *)ctx[0];
	if (!sk)
		return 0;
	__u16 lport = sk->__sk_common.skc_num;
	if (lport == 0 || !kafka_port(lport))
		return 0;
	__u16 family = sk->__sk_common.skc_family;
	if ((family != AF_INET && family != AF_INET6) || sk->sk_protocol != IPPROTO_TCP)
		return 0;
	kcount(KCNT_RECVS);

	__u32 tid = (__u32)id;
	__u64 cookie = bpf_get_socket_cookie(sk);
	__u32 *last = bpf_map_lookup_elem(&ksio_kconns, &cookie);
	if (last && *last == tid)
		return 0;
	bpf_map_update_elem(&ksio_kconns, &cookie, &tid, BPF_ANY);

	struct iosock_event *e = bpf_ringbuf_reserve(&ksio_kevents, sizeof(*e), 0);
	if (!e) {
		kcount(KCNT_RINGBUF_DROPS);
		/* Forget it, so that the next receive reports it. */
		bpf_map_delete_elem(&ksio_kconns, &cookie);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->ts_ns = bpf_ktime_get_ns();
	e->cookie = cookie;
	e->tid = tid;
	e->family = family;
	e->lport = lport;
	__u16 dport = sk->__sk_common.skc_dport;
	e->rport = (__u16)((dport >> 8) | (dport << 8));
	if (family == AF_INET) {
		__be32 *l = (__be32 *)e->laddr, *r = (__be32 *)e->raddr;
		*l = sk->__sk_common.skc_rcv_saddr;
		*r = sk->__sk_common.skc_daddr;
	} else {
		bpf_probe_read_kernel(e->laddr, sizeof(e->laddr), &sk->__sk_common.skc_v6_rcv_saddr);
		bpf_probe_read_kernel(e->raddr, sizeof(e->raddr), &sk->__sk_common.skc_v6_daddr);
	}
	bpf_ringbuf_submit(e, ringbuf_flags);
	return 0;
}
