package lab

// Network namespaces for the nodes of a cluster (ClusterConfig.Netns): one
// Linux bridge in the root namespace holding 10.X.Y.1/24, and per node a
// namespace joined to it by a veth pair, the node at 10.X.Y.(10+id)/24
// inside. Every node then has a real link of its own: clients in the root
// namespace reach it through the bridge, replication between nodes crosses
// both nodes' veths, and the host end of node i's veth carries all of node
// i's traffic (a capture point, a place for tc). Names carry the cluster's
// random id so that several clusters can coexist and what a killed start
// left can be found again from cluster.json.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Name parts. Interface names must fit IFNAMSIZ (15 characters): "ksv" +
// up to 3 digits + "-" + 6 hex digits is at most 13. Namespace names have
// no such limit.
const (
	netnsNamePrefix = "kscope-" // namespace kscope-<id>-<node>
	bridgePrefix    = "ksb-"    // bridge ksb-<id>
	hostIfPrefix    = "ksv"     // host end ksv<node>-<id>
	nsIfPrefix      = "ksn"     // namespace end ksn<node>-<id>
	netIDHexDigits  = 6
	// nodeIPBase: node i is 10.X.Y.(nodeIPBase+i); .1 is the bridge.
	nodeIPBase = 10
	// MaxNetnsNodes bounds a Netns cluster: the node addresses must fit
	// in the /24.
	MaxNetnsNodes = 200
	// NetnsPort is the PLAINTEXT port of every node of a Netns cluster
	// (ClusterConfig.Port 0); its CONTROLLER port is the next one. Each
	// node has its own address, so all can use the same ports.
	NetnsPort = 9092
	// NetnsSSLPort and NetnsSASLSSLPort are the SSL and SASL_SSL ports of
	// every node of a Netns cluster with Security (SecurityConfig ports
	// 0).
	NetnsSSLPort     = 9094
	NetnsSASLSSLPort = 9095
)

// clusterNet is a Netns cluster's network, in cluster.json.
type clusterNet struct {
	ID       string `json:"id"`     // the random part of every name
	Subnet   string `json:"subnet"` // 10.X.Y.0/24
	Bridge   string `json:"bridge"`
	BridgeIP string `json:"bridgeIp"` // 10.X.Y.1, the root namespace's side
}

// nodeNet is one node's namespace and link, in cluster.json.
type nodeNet struct {
	Netns  string `json:"netns"`
	HostIf string `json:"hostIf"` // the veth end in the root namespace, a port of the bridge
	NsIf   string `json:"nsIf"`   // the veth end inside Netns
	IP     string `json:"ip"`     // on NsIf
}

// newClusterNet picks an id whose names are all free and a 10.X.Y.0/24
// that no route or address overlaps, for n nodes.
func newClusterNet(n int) (*clusterNet, error) {
	if n > MaxNetnsNodes {
		return nil, fmt.Errorf("lab: Netns: %d nodes, at most %d", n, MaxNetnsNodes)
	}
	prefix, err := FreeSubnet(24)
	if err != nil {
		return nil, err
	}
	for range 20 {
		b := make([]byte, netIDHexDigits/2)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("lab: Netns id: %w", err)
		}
		cn := &clusterNet{
			ID:       hex.EncodeToString(b),
			Subnet:   prefix.String(),
			BridgeIP: prefix.Addr().Next().String(),
		}
		cn.Bridge = bridgePrefix + cn.ID
		if !cn.namesTaken(n) {
			return cn, nil
		}
	}
	return nil, errors.New("lab: Netns: no free interface names")
}

// node returns node id's names and address, derived from the cluster's id
// and subnet (so a restart gets the same ones).
func (cn *clusterNet) node(id int) (nodeNet, error) {
	p, err := netip.ParsePrefix(cn.Subnet)
	if err != nil {
		return nodeNet{}, fmt.Errorf("lab: Netns subnet: %w", err)
	}
	a := p.Addr().As4()
	a[3] = byte(nodeIPBase + id)
	sfx := strconv.Itoa(id) + "-" + cn.ID
	return nodeNet{
		Netns:  netnsNamePrefix + cn.ID + "-" + strconv.Itoa(id),
		HostIf: hostIfPrefix + sfx,
		NsIf:   nsIfPrefix + sfx,
		IP:     netip.AddrFrom4(a).String(),
	}, nil
}

// namesTaken reports whether the bridge, a host veth or a namespace of a
// cluster with this id exists already.
func (cn *clusterNet) namesTaken(n int) bool {
	if linkExists(cn.Bridge) {
		return true
	}
	for id := 1; id <= n; id++ {
		nn, err := cn.node(id)
		if err != nil || linkExists(nn.HostIf) || netnsExists(nn.Netns) {
			return true
		}
	}
	return false
}

// checkSubnetFree fails when something else now overlaps the subnet a
// restart must reuse: the node addresses are in the quorum's config and,
// for one node, in its storage.
func (cn *clusterNet) checkSubnetFree() error {
	p, err := netip.ParsePrefix(cn.Subnet)
	if err != nil {
		return fmt.Errorf("lab: Netns subnet: %w", err)
	}
	used, err := usedPrefixes()
	if err != nil {
		return err
	}
	for _, u := range used {
		if u.Overlaps(p) {
			return fmt.Errorf("lab: Netns subnet %s of this cluster overlaps %s, in use on this machine now", p, u)
		}
	}
	return nil
}

// createBridge makes the bridge with the subnet's first address, up.
func (cn *clusterNet) createBridge(owner string) error {
	steps := [][]string{
		{"link", "add", "name", cn.Bridge, "type", "bridge"},
		{"link", "set", cn.Bridge, "alias", owner},
		{"addr", "add", cn.BridgeIP + "/24", "dev", cn.Bridge},
		{"link", "set", cn.Bridge, "up"},
	}
	return ipSteps(steps)
}

// createNode makes node's namespace (lo up) and its veth pair: the host
// end a port of the bridge, the other end in the namespace with the
// node's address, both up.
func (cn *clusterNet) createNode(nn nodeNet, owner string) error {
	steps := [][]string{
		{"netns", "add", nn.Netns},
		{"-n", nn.Netns, "link", "set", "lo", "up"},
		{"link", "add", nn.HostIf, "type", "veth", "peer", "name", nn.NsIf, "netns", nn.Netns},
		{"link", "set", nn.HostIf, "alias", owner},
		{"link", "set", nn.HostIf, "master", cn.Bridge},
		{"link", "set", nn.HostIf, "up"},
		{"-n", nn.Netns, "addr", "add", nn.IP + "/24", "dev", nn.NsIf},
		{"-n", nn.Netns, "link", "set", nn.NsIf, "up"},
	}
	return ipSteps(steps)
}

// removeNode deletes node's veth pair and namespace, when they exist. A
// host end with another owner's alias is left alone: the names are random,
// but not so random that deleting someone else's link is acceptable.
func removeNode(nn nodeNet, owner string) error {
	var errs []error
	if linkExists(nn.HostIf) {
		if err := deleteLink(nn.HostIf, owner); err != nil {
			errs = append(errs, err)
		}
	}
	// Deleting the namespace deletes the end inside it, and with it the
	// pair, should the host end have gone unrecorded.
	if netnsExists(nn.Netns) {
		if _, err := runTool("ip", "netns", "del", nn.Netns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeBridge deletes the bridge when it exists and is ours.
func (cn *clusterNet) removeBridge(owner string) error {
	if !linkExists(cn.Bridge) {
		return nil
	}
	return deleteLink(cn.Bridge, owner)
}

func deleteLink(name, owner string) error {
	if alias := linkAlias(name); alias != "" && alias != owner {
		return fmt.Errorf("lab: not deleting link %s: it belongs to %q, not %q", name, alias, owner)
	}
	_, err := runTool("ip", "link", "del", name)
	return err
}

func ipSteps(steps [][]string) error {
	for _, s := range steps {
		if _, err := runTool("ip", s...); err != nil {
			return err
		}
	}
	return nil
}

// linkOwner is the alias (ifalias, at most 255 bytes) given to the links
// of the cluster in dir: `ip -d link` then says whose they are, and
// removal leaves links of other owners alone.
func linkOwner(dir string) string {
	s := "kscope lab " + dir
	if len(s) > 255 {
		s = s[:255]
	}
	return s
}

func linkExists(name string) bool {
	_, err := net.InterfaceByName(name)
	return err == nil
}

func linkAlias(name string) string {
	b, err := os.ReadFile(filepath.Join("/sys/class/net", name, "ifalias"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// netnsExists reports whether `ip netns` knows the namespace (its bind
// mount in /run/netns).
func netnsExists(name string) bool {
	_, err := os.Stat(filepath.Join("/run/netns", name))
	return err == nil
}

// LinkCounters returns an interface's received and transmitted bytes
// (/sys/class/net/IF/statistics). On the host end of a node's veth, rx is
// what the node sent and tx what it was sent.
func LinkCounters(ifname string) (rx, tx uint64, err error) {
	read := func(name string) (uint64, error) {
		b, err := os.ReadFile(filepath.Join("/sys/class/net", ifname, "statistics", name))
		if err != nil {
			return 0, fmt.Errorf("lab: counters of %s: %w", ifname, err)
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("lab: counters of %s: %w", ifname, err)
		}
		return v, nil
	}
	if rx, err = read("rx_bytes"); err != nil {
		return 0, 0, err
	}
	tx, err = read("tx_bytes")
	return rx, tx, err
}

// FreeSubnet picks a random 10.X.Y.0/bits (bits 16..30; X in 64..253,
// clear of the ranges people configure by hand) that no route in any
// table and no address overlaps: for a lab's namespaces, and a test's.
func FreeSubnet(bits int) (netip.Prefix, error) {
	if bits < 16 || bits > 30 {
		return netip.Prefix{}, fmt.Errorf("lab: subnet /%d: want /16 to /30", bits)
	}
	used, err := usedPrefixes()
	if err != nil {
		return netip.Prefix{}, err
	}
	for range 200 {
		var b [3]byte
		if _, err := rand.Read(b[:]); err != nil {
			return netip.Prefix{}, fmt.Errorf("lab: subnet: %w", err)
		}
		p, _ := netip.AddrFrom4([4]byte{10, byte(64 + int(b[0])%190), b[1], b[2]}).Prefix(bits)
		free := true
		for _, u := range used {
			free = free && !u.Overlaps(p)
		}
		if free {
			return p, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("lab: no free 10.x.y.z/%d found", bits)
}

// usedPrefixes lists the destinations of all IPv4 routes in every table
// (default routes excepted) and the networks of all IPv4 addresses.
func usedPrefixes() ([]netip.Prefix, error) {
	var used []netip.Prefix
	out, err := runTool("ip", "-4", "route", "show", "table", "all")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && isRouteType(f[0]) {
			f = f[1:]
		}
		if len(f) == 0 || f[0] == "default" {
			continue
		}
		if p, ok := parsePrefix(f[0]); ok && p.Bits() > 0 {
			used = append(used, p)
		}
	}
	if out, err = runTool("ip", "-4", "-o", "addr", "show"); err != nil {
		return nil, err
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if p, ok := parsePrefix(f[i+1]); ok && f[i] == "inet" {
				used = append(used, p)
			}
		}
	}
	return used, nil
}

// isRouteType reports whether s is a word `ip route` may print before a
// destination.
func isRouteType(s string) bool {
	switch s {
	case "unicast", "local", "broadcast", "multicast", "throw", "unreachable", "prohibit", "blackhole", "nat", "anycast":
		return true
	}
	return false
}

func parsePrefix(s string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}
