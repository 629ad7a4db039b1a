package labtest

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// WaitLiveSocket waits until this process has an AF_PACKET socket bound to
// every protocol on ifindex (0: all interfaces) and running, as
// /proc/net/packet lists it: capture.OpenLive binds it so only once its
// filter is attached, so from then on every packet is captured.
func WaitLiveSocket(ctx context.Context, t *testing.T, ifindex int, failed func() error) {
	t.Helper()
	for !haveLiveSocket(ifindex) {
		if err := failed(); err != nil {
			t.Fatalf("live capture ended before it was ready: %v", err)
		}
		select {
		case <-ctx.Done():
			t.Fatal("no live packet socket appeared in /proc/net/packet")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func haveLiveSocket(ifindex int) bool {
	ours := map[string]bool{}
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, fd := range fds {
		l, err := os.Readlink("/proc/self/fd/" + fd.Name())
		if err == nil && strings.HasPrefix(l, "socket:[") {
			ours[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	b, _ := os.ReadFile("/proc/net/packet")
	lines := strings.Split(string(b), "\n")
	for _, line := range lines[min(1, len(lines)):] {
		// sk RefCnt Type Proto Iface R Rmem User Inode
		f := strings.Fields(line)
		if len(f) >= 9 && f[3] == "0003" && f[4] == strconv.Itoa(ifindex) && f[5] == "1" && ours[f[8]] {
			return true
		}
	}
	return false
}
