package use

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Packets a qdisc drops never reach the driver, so they are not in
// /sys/class/net/IF/statistics/tx_dropped: a full egress queue (pfifo,
// tbf, htb over their limit) and netem's loss count only in the qdisc's
// own statistics, which only rtnetlink gives (what `tc -s qdisc` prints).

// QdiscStats are the counters of an interface's root egress qdisc.
type QdiscStats struct {
	Kind       string
	Drops      uint64
	Overlimits uint64
	Backlog    uint64 // bytes queued now
}

// tcmsg and attribute numbers of linux/rtnetlink.h and linux/gen_stats.h
// that x/sys/unix does not name.
const (
	tcHRoot        = 0xFFFFFFFF
	tcaStatsQueue  = 3 // TCA_STATS_QUEUE inside TCA_STATS2
	tcmsgLen       = 20
	nlmsgHdrLen    = 16
	netlinkTimeout = 2 * time.Second
)

// NetlinkQdiscs dumps the qdiscs of the caller's network namespace and
// returns each interface's root qdisc by ifindex.
func NetlinkQdiscs() (map[int]QdiscStats, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("rtnetlink socket: %w", err)
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(int64(netlinkTimeout))
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("rtnetlink bind: %w", err)
	}
	// A dump request with a zero tcmsg: every qdisc of every interface.
	req := make([]byte, nlmsgHdrLen+tcmsgLen)
	const seq = 1
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], unix.RTM_GETQDISC)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(req[8:], seq)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("rtnetlink send: %w", err)
	}
	out := map[int]QdiscStats{}
	buf := make([]byte, 64<<10)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return nil, fmt.Errorf("rtnetlink receive: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, fmt.Errorf("rtnetlink: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Seq != seq {
				continue
			}
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return out, nil
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if e := int32(binary.NativeEndian.Uint32(m.Data)); e != 0 {
						return nil, fmt.Errorf("rtnetlink qdisc dump: %w", syscall.Errno(-e))
					}
				}
				return out, nil
			case unix.RTM_NEWQDISC:
				ifindex, st, root, err := parseQdiscMsg(m.Data)
				if err != nil {
					return nil, err
				}
				if root {
					out[ifindex] = st
				}
			}
		}
	}
}

// parseQdiscMsg parses one RTM_NEWQDISC body: tcmsg and attributes.
func parseQdiscMsg(b []byte) (ifindex int, st QdiscStats, root bool, err error) {
	if len(b) < tcmsgLen {
		return 0, st, false, errors.New("rtnetlink: short tcmsg")
	}
	ifindex = int(int32(binary.NativeEndian.Uint32(b[4:])))
	root = binary.NativeEndian.Uint32(b[12:]) == tcHRoot
	var legacy, queue []byte
	err = eachAttr(b[tcmsgLen:], func(typ uint16, val []byte) {
		switch typ {
		case unix.TCA_KIND:
			st.Kind = string(trimNul(val))
		case unix.TCA_STATS:
			legacy = val
		case unix.TCA_STATS2:
			_ = eachAttr(val, func(t uint16, v []byte) {
				if t == tcaStatsQueue {
					queue = v
				}
			})
		}
	})
	if err != nil {
		return 0, st, false, err
	}
	switch {
	case len(queue) >= 20: // gnet_stats_queue: qlen backlog drops requeues overlimits
		st.Backlog = uint64(binary.NativeEndian.Uint32(queue[4:]))
		st.Drops = uint64(binary.NativeEndian.Uint32(queue[8:]))
		st.Overlimits = uint64(binary.NativeEndian.Uint32(queue[16:]))
	case len(legacy) >= 36: // tc_stats: bytes(8) packets drops overlimits bps pps qlen backlog
		st.Drops = uint64(binary.NativeEndian.Uint32(legacy[12:]))
		st.Overlimits = uint64(binary.NativeEndian.Uint32(legacy[16:]))
		st.Backlog = uint64(binary.NativeEndian.Uint32(legacy[32:]))
	}
	return ifindex, st, root, nil
}

// eachAttr walks netlink attributes (rtattr: len, type, value, padded to
// 4 bytes).
func eachAttr(b []byte, fn func(typ uint16, val []byte)) error {
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b))
		typ := binary.NativeEndian.Uint16(b[2:]) & 0x3FFF // without NLA_F_NESTED and NLA_F_NET_BYTEORDER
		if l < 4 || l > len(b) {
			return errors.New("rtnetlink: bad attribute length")
		}
		fn(typ, b[4:l])
		l = (l + 3) &^ 3
		if l > len(b) {
			return nil
		}
		b = b[l:]
	}
	return nil
}

func trimNul(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}
