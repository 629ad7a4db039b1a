package labtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/lab"
)

// Netns is a network namespace joined to the root namespace by a veth
// pair, for tests that need a real (non-loopback) link they can break:
// HostIf (HostIP/30) in the root namespace, NsIf (NsIP/30) inside Name.
// Traffic between a program run with Command and a server in the root
// namespace listening on HostIP (or 0.0.0.0) crosses HostIf, where it can
// be captured, and stops while the link is down.
type Netns struct {
	Name   string     // the namespace, as `ip netns` knows it
	HostIf string     // veth end in the root namespace
	NsIf   string     // veth end inside the namespace
	HostIP netip.Addr // on HostIf, 10.x.y.1
	NsIP   netip.Addr // on NsIf, 10.x.y.2

	t       testing.TB
	ip      string
	ownLink bool // HostIf was created by us (so cleanup may delete it)
}

// Name prefixes: the part after them is "PID-HEX", so that a namespace
// left behind by a killed test can be recognised and removed.
const (
	netnsPrefix  = "kscope-lt-"
	hostIfPrefix = "klh"
	nsIfPrefix   = "kln"
)

// NewNetns creates a namespace with a veth pair (see Netns), both ends
// and lo inside the namespace up, in a free 10.x.y.0/30 (one that no
// route or address in any table overlaps). t.Cleanup deletes the link and
// the namespace, also when the test fails. It needs root and ip
// (iproute2): without them it skips (fails under CI=true).
//
// Namespaces left by killed test processes (whose pid is gone) are
// removed first.
func NewNetns(t testing.TB) *Netns {
	t.Helper()
	RequireRoot(t)
	ipBin := Tool("ip")
	if ipBin == "" {
		Unavailable(t, "ip (iproute2) not found")
	}
	removeStaleNetns(t, ipBin)

	pid := os.Getpid()
	for attempt := 0; ; attempt++ {
		sfx := randHex(2)
		n := &Netns{
			Name: fmt.Sprintf("%s%d-%s", netnsPrefix, pid, sfx),
			// IFNAMSIZ: at most 15 characters; "klh" + 7 pid digits +
			// "-" + 4 hex digits is at most 15.
			HostIf: fmt.Sprintf("%s%d-%s", hostIfPrefix, pid%10_000_000, sfx),
			NsIf:   fmt.Sprintf("%s%d-%s", nsIfPrefix, pid%10_000_000, sfx),
			t:      t,
			ip:     ipBin,
		}
		prefix, err := lab.FreeSubnet(30)
		if err != nil {
			t.Fatalf("labtest: netns: %v", err)
		}
		n.HostIP = prefix.Addr().Next()
		n.NsIP = n.HostIP.Next()
		if _, err := n.run("netns", "add", n.Name); err != nil {
			if attempt < 3 && strings.Contains(err.Error(), "exists") {
				continue // not ours: try another name
			}
			t.Fatalf("labtest: netns: %v", err)
		}
		// Registered once the namespace is ours, before the link exists:
		// a half-made setup is removed too.
		t.Cleanup(n.cleanup)
		if _, err := n.run("-n", n.Name, "link", "set", "lo", "up"); err != nil {
			t.Fatalf("labtest: netns: %v", err)
		}
		if err := n.createLink(); err != nil {
			t.Fatalf("labtest: netns: %v", err)
		}
		t.Logf("labtest: netns %s: %s %s <-> %s %s", n.Name, n.HostIf, n.HostIP, n.NsIf, n.NsIP)
		return n
	}
}

// createLink creates the veth pair with its addresses, both ends up.
func (n *Netns) createLink() error {
	if _, err := n.run("link", "add", n.HostIf, "type", "veth", "peer", "name", n.NsIf, "netns", n.Name); err != nil {
		return err
	}
	n.ownLink = true
	steps := [][]string{
		{"addr", "add", n.HostIP.String() + "/30", "dev", n.HostIf},
		{"-n", n.Name, "addr", "add", n.NsIP.String() + "/30", "dev", n.NsIf},
		{"link", "set", n.HostIf, "up"},
		{"-n", n.Name, "link", "set", n.NsIf, "up"},
	}
	for _, s := range steps {
		if _, err := n.run(s...); err != nil {
			return err
		}
	}
	return nil
}

func (n *Netns) cleanup() {
	// Deleting one end of a veth deletes the other; deleting the namespace
	// deletes the end inside it and so the pair. Both, to be sure.
	if n.ownLink {
		if out, err := n.run("link", "del", n.HostIf); err != nil && !notFound(out) {
			n.t.Errorf("labtest: netns cleanup: %v", err)
		}
	}
	if out, err := n.run("netns", "del", n.Name); err != nil && !notFound(out) {
		n.t.Errorf("labtest: netns cleanup: %v", err)
	}
}

func notFound(out string) bool {
	return strings.Contains(out, "Cannot find device") || strings.Contains(out, "No such file")
}

// run runs ip ARGS and returns its combined output; the error includes it.
func (n *Netns) run(args ...string) (string, error) {
	return runIP(n.ip, args...)
}

func runIP(ipBin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, ipBin, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// Command returns a command running name with args inside the namespace
// (`ip netns exec NAME name args...`, which execs name: the process is the
// program itself, killed by ctx like any exec.CommandContext).
func (n *Netns) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, n.ip, append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// SetHostLink sets HostIf administratively up or down. Down also takes
// the carrier of NsIf away; TCP connections across the pair survive a
// short outage (they retransmit), as the addresses stay configured.
func (n *Netns) SetHostLink(up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	_, err := n.run("link", "set", n.HostIf, state)
	return err
}

// HostIndex returns HostIf's current interface index (it changes when the
// link is recreated).
func (n *Netns) HostIndex() (int, error) {
	ifc, err := net.InterfaceByName(n.HostIf)
	if err != nil {
		return 0, err
	}
	return ifc.Index, nil
}

// DeleteLink deletes the veth pair (both ends); the namespace stays.
func (n *Netns) DeleteLink() error {
	_, err := n.run("link", "del", n.HostIf)
	return err
}

// Recreate deletes the veth pair (if it exists) and creates it again with
// the same names and addresses, both ends up: what a capture sees as the
// interface vanishing and coming back with a new ifindex. Connections
// across the old pair break (their peers get no RST; they time out).
func (n *Netns) Recreate() error {
	if out, err := n.run("link", "del", n.HostIf); err != nil && !notFound(out) {
		return err
	}
	return n.createLink()
}

// removeStaleNetns deletes namespaces named by NewNetns whose creating
// process is gone (a test killed before its cleanup ran), with their veth
// pairs.
func removeStaleNetns(t testing.TB, ipBin string) {
	out, err := runIP(ipBin, "netns", "list")
	if err != nil {
		return
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], netnsPrefix) {
			continue
		}
		pidStr, _, ok := strings.Cut(strings.TrimPrefix(f[0], netnsPrefix), "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid <= 0 || processAlive(pid) {
			continue
		}
		if _, err := runIP(ipBin, "netns", "del", f[0]); err == nil {
			t.Logf("labtest: removed stale netns %s (pid %d is gone)", f[0], pid)
		}
	}
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		binary.BigEndian.PutUint16(b, uint16(time.Now().UnixNano()))
	}
	return hex.EncodeToString(b)
}
