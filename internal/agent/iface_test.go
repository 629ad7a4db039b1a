package agent

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// TestInterfaceIndex: the ioctl the interface watch asks with gives the
// index net.InterfaceByName gives, and an error for a name that is not
// an interface, as the netlink fallback does.
func TestInterfaceIndex(t *testing.T) {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	for _, tt := range []struct {
		via string
		fd  int
	}{{"ioctl", fd}, {"netlink", -1}} {
		t.Run(tt.via, func(t *testing.T) {
			got, err := interfaceIndex(tt.fd, "lo")
			if err != nil || got != lo.Index {
				t.Errorf("lo: index %d, %v; want %d", got, err, lo.Index)
			}
			if got, err := interfaceIndex(tt.fd, "kscope-none0"); err == nil {
				t.Errorf("an interface that does not exist: index %d, no error", got)
			}
		})
	}
}
