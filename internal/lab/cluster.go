package lab

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kscope-dev/kscope/internal/slowdisk"
)

// ClusterConfig describes a KRaft cluster of Brokers combined
// broker+controller nodes on 127.0.0.1, or each in a network namespace of
// its own (Netns). One node is a Broker in Dir itself (the layout of
// StartBroker); node i of more lives in Dir/node-<i> with node.id i, and
// Dir/cluster.json records them all (and, with Netns or FS, one node too).
type ClusterConfig struct {
	// Dir holds everything the cluster writes (required).
	Dir string
	// Brokers is the number of nodes; 0 means as many as the cluster
	// already in Dir has, else 1.
	Brokers int
	// Port is node 1's PLAINTEXT port; node i gets Port+i-1. 0 picks free
	// ports. With Netns every node listens on Port (0: NetnsPort) and its
	// CONTROLLER on Port+1, at its own address.
	Port int
	// Version is the Apache Kafka release, as in BrokerConfig.
	Version string
	// LibsDir is the Kafka jars dir; default EnsureLibsVersion(Version).
	LibsDir string
	// RequestLog gives every node a NODEDIR/kafka-request.log.
	RequestLog bool
	// HeapMB is each node's -Xmx in MiB; default 512 for one node, 256
	// for more (several JVMs share a small machine).
	HeapMB int
	// ExtraProps are added to every node's server.properties.
	ExtraProps map[string]string
	// StartTimeout bounds the wait for all nodes to answer; default 60s
	// per node.
	StartTimeout time.Duration
	// Detach lets the nodes outlive this process, as in BrokerConfig.
	Detach bool
	// Netns runs every node in a network namespace of its own, joined by
	// a veth pair to a bridge in the root namespace (10.X.Y.1/24, node i
	// at 10.X.Y.(10+i)): clients reach the nodes through the bridge, and
	// the host end of node i's veth (Broker.HostIf) carries all of node
	// i's traffic. Needs root and ip (iproute2). See netns.go.
	Netns bool
	// FS puts every node's log dir on a file system of its own: "ext4" or
	// "xfs" on a sparse image (Dir of the node/fs.img) attached to a loop
	// device and mounted on the log dir; "" for none. Needs root, losetup
	// and mkfs.<FS>. See loopfs.go.
	FS string
	// FSSizeMB is each image's size in MiB when it is made; default
	// DefaultFSSizeMB. A restart keeps the images as they are.
	FSSizeMB int
	// Device, with FS, puts every node's file system on an emulated slow
	// device with this profile (package slowdisk): the loop device is
	// attached to a file of a FUSE file system served by this process,
	// which holds each request for a latency drawn from the profile
	// (DeviceSeed plus the node id seeds the draws). The emulator lives
	// in this process: Device refuses Detach, and Stop closes it.
	Device     *slowdisk.Profile
	DeviceSeed uint64
	// Security gives every node SSL and SASL_SSL listeners, as in
	// BrokerConfig, with one CA, trust store and set of users for all
	// of them in Security.Dir (default Dir/tls). Node i listens on
	// SSLPort+i-1 and SASLSSLPort+i-1 when those are set; with Netns
	// every node on NetnsSSLPort and NetnsSASLSSLPort by default.
	Security *SecurityConfig
}

// ClusterFile records a cluster of more than one node in its Dir.
const ClusterFile = "cluster.json"

// NodeDir is the dir of node id in a cluster of more than one node.
func NodeDir(dir string, id int) string {
	return filepath.Join(dir, "node-"+strconv.Itoa(id))
}

// Cluster is a set of KRaft nodes sharing one cluster id and controller
// quorum. A one-node Cluster is a Broker in the cluster's own Dir.
type Cluster struct {
	dir   string
	nodes []*Broker
	iso   *isolation // nil without Netns and FS

	stopOnce sync.Once
	stopErr  error
}

// clusterState is Dir/cluster.json: the layout of a cluster of more than
// one node. Each node's own state (pid, ...) is in its dir's broker.json.
type clusterState struct {
	ClusterID string        `json:"clusterId"`
	Version   string        `json:"version"`
	Brokers   int           `json:"brokers"`
	Bootstrap string        `json:"bootstrap"`
	Voters    string        `json:"voters"`
	Nodes     []clusterNode `json:"nodes"`
	// Net is the network of a Netns cluster, FS the file system choice of
	// an FS one (isolation.go).
	Net *clusterNet `json:"net,omitempty"`
	FS  *clusterFS  `json:"fs,omitempty"`
	// TLSDir is SecurityConfig.Dir of a cluster started with Security.
	TLSDir string `json:"tlsDir,omitempty"`
}

type clusterNode struct {
	ID             int    `json:"id"`
	Dir            string `json:"dir"` // relative to the cluster's Dir
	Addr           string `json:"addr"`
	ControllerAddr string `json:"controllerAddr"`
	SSLAddr        string `json:"sslAddr,omitempty"`
	SASLSSLAddr    string `json:"saslSslAddr,omitempty"`
	// Net and FS are the node's namespace and link, and its file system.
	Net *nodeNet `json:"net,omitempty"`
	FS  *nodeFS  `json:"fs,omitempty"`
}

// StartCluster starts cfg.Brokers nodes: fresh storage is formatted (one
// cluster id, controller.quorum.voters naming every node), then all nodes
// are started, and it returns once every node answers Metadata listing
// all of them. Topics get replication factor min(3, N) by default
// (default.replication.factor, offsets and transaction topics) and
// min.insync.replicas 2 from 3 nodes on. As with StartBroker, ctx bounds
// only the startup, and formatted storage is restarted as it was. With
// Netns or FS the namespaces, links and file systems are recorded in
// cluster.json, then made (what a killed earlier start left is removed
// first); a restart must ask for the same Netns and FS, and gets the same
// names, addresses and images.
func StartCluster(ctx context.Context, cfg ClusterConfig) (*Cluster, error) {
	if cfg.Dir == "" {
		return nil, errors.New("lab: ClusterConfig.Dir is required")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("lab: cluster dir: %w", err)
	}
	prev, existing, err := existingCluster(dir)
	if err != nil {
		return nil, err
	}
	n := cfg.Brokers
	if n == 0 {
		n = max(existing, 1)
	}
	if n < 0 {
		return nil, fmt.Errorf("lab: ClusterConfig.Brokers %d", n)
	}
	if existing != 0 && existing != n {
		return nil, fmt.Errorf("lab: %s holds a %d-node cluster, not %d (use another dir, or remove it to start afresh)", dir, existing, n)
	}
	if cfg.Netns && (cfg.Port < 0 || cfg.Port >= 65535) {
		return nil, fmt.Errorf("lab: ClusterConfig.Port %d with Netns: want 1..65534 (the controller takes the next)", cfg.Port)
	}
	if cfg.HeapMB <= 0 && n > 1 {
		cfg.HeapMB = 256
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = time.Duration(n) * 60 * time.Second
	}
	iso, err := planIsolation(dir, n, cfg, prev, existing > 0)
	if err != nil {
		return nil, err
	}
	cfgs, err := nodeConfigs(dir, n, cfg, iso)
	if err != nil {
		return nil, err
	}
	if n > 1 || iso != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("lab: cluster dir: %w", err)
		}
	}
	places, err := setUpIsolation(ctx, iso)
	if err != nil {
		return nil, err
	}
	nodes, err := startNodes(ctx, cfgs, cfg.Version, cfg.LibsDir, cfg.StartTimeout, places)
	if err != nil {
		if iso != nil {
			err = errors.Join(err, iso.tearDown())
		}
		return nil, err
	}
	c := &Cluster{dir: dir, nodes: nodes, iso: iso}
	if n > 1 || iso != nil {
		if err := c.writeState(); err != nil {
			return nil, errors.Join(err, c.Stop())
		}
	}
	return c, nil
}

// nodeConfigs returns every node's BrokerConfig (withDefaults applied).
func nodeConfigs(dir string, n int, cfg ClusterConfig, iso *isolation) ([]BrokerConfig, error) {
	cfgs := make([]BrokerConfig, n)
	for i := range cfgs {
		c := BrokerConfig{
			Dir:          dir,
			RequestLog:   cfg.RequestLog,
			ExtraProps:   cfg.ExtraProps,
			HeapMB:       cfg.HeapMB,
			StartTimeout: cfg.StartTimeout,
			Detach:       cfg.Detach,
		}
		if n > 1 {
			c.Dir = NodeDir(dir, i+1)
		}
		switch {
		case cfg.Netns:
			// Every node alone at its own address: all on the same port.
			c.Port = cmp.Or(cfg.Port, NetnsPort)
		case cfg.Port != 0:
			c.Port = cfg.Port + i
		}
		if iso != nil && iso.st.Nodes[i].FS != nil {
			c.LogDirs = []string{iso.st.Nodes[i].FS.MountPoint}
		}
		if cfg.Security != nil {
			c.Security = nodeSecurity(dir, i, *cfg.Security, cfg.Netns)
		}
		var err error
		if cfgs[i], err = c.withDefaults(); err != nil {
			return nil, err
		}
	}
	return cfgs, nil
}

// nodeSecurity is node i's (from 0) SecurityConfig in cluster dir: the
// shared Dir (default dir/tls), and the configured ports plus i, or with
// netns the same ports on every node.
func nodeSecurity(dir string, i int, sc SecurityConfig, netns bool) *SecurityConfig {
	sc.Dir = cmp.Or(sc.Dir, filepath.Join(dir, TLSDirName))
	switch {
	case netns:
		sc.SSLPort, sc.SASLSSLPort = cmp.Or(sc.SSLPort, NetnsSSLPort), cmp.Or(sc.SASLSSLPort, NetnsSASLSSLPort)
	default:
		for _, p := range []*int{&sc.SSLPort, &sc.SASLSSLPort} {
			if *p != 0 {
				*p += i
			}
		}
	}
	return &sc
}

// setUpIsolation makes iso (nil: nothing to do) and returns the nodes'
// places. No node may run: setUp first removes what a last start left.
func setUpIsolation(ctx context.Context, iso *isolation) ([]nodePlace, error) {
	if iso == nil {
		return nil, nil
	}
	if d, pid := iso.running(); pid != 0 {
		return nil, fmt.Errorf("lab: broker in %s already running (pid %d)", d, pid)
	}
	if err := iso.setUp(ctx); err != nil {
		return nil, errors.Join(err, iso.tearDown())
	}
	return iso.places(), nil
}

// existingCluster returns the cluster.json in dir (nil for none) and how
// many nodes the cluster in dir has: those in cluster.json, 1 for a
// single broker's broker.json, 0 for neither.
func existingCluster(dir string) (*clusterState, int, error) {
	cs, err := readClusterState(dir)
	if err == nil {
		return &cs, len(cs.Nodes), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, 0, err
	}
	if fileExists(filepath.Join(dir, StateFile)) {
		return nil, 1, nil
	}
	return nil, 0, nil
}

func readClusterState(dir string) (clusterState, error) {
	var cs clusterState
	b, err := os.ReadFile(filepath.Join(dir, ClusterFile))
	if err != nil {
		return cs, err
	}
	if err := json.Unmarshal(b, &cs); err != nil {
		return cs, fmt.Errorf("lab: parse %s: %w", filepath.Join(dir, ClusterFile), err)
	}
	if len(cs.Nodes) == 0 {
		return cs, fmt.Errorf("lab: %s lists no nodes", filepath.Join(dir, ClusterFile))
	}
	return cs, nil
}

// writeState records the started cluster in cluster.json, keeping what
// its isolation recorded there.
func (c *Cluster) writeState() error {
	var cs clusterState
	if c.iso != nil {
		cs = c.iso.st
	}
	cs.ClusterID, cs.Version, cs.Brokers, cs.Bootstrap = c.ClusterID(), c.Version(), len(c.nodes), c.Bootstrap()
	nodes := make([]clusterNode, len(c.nodes))
	caddrs := make([]string, len(c.nodes))
	for i, b := range c.nodes {
		rel, err := filepath.Rel(c.dir, b.Dir())
		if err != nil {
			return fmt.Errorf("lab: cluster state: %w", err)
		}
		if i < len(cs.Nodes) {
			nodes[i] = cs.Nodes[i]
		}
		nodes[i].ID, nodes[i].Dir, nodes[i].Addr, nodes[i].ControllerAddr = b.NodeID(), rel, b.Addr(), b.ControllerAddr()
		nodes[i].SSLAddr, nodes[i].SASLSSLAddr = b.SSLAddr(), b.SASLSSLAddr()
		caddrs[i] = b.ControllerAddr()
	}
	cs.Nodes = nodes
	cs.TLSDir = c.nodes[0].SecurityDir()
	cs.Voters = votersAt(caddrs)
	if c.iso != nil {
		c.iso.st = cs
	}
	return writeClusterState(c.dir, cs)
}

// writeClusterState replaces dir's cluster.json atomically.
func writeClusterState(dir string, cs clusterState) error {
	b, err := json.MarshalIndent(cs, "", "  ")
	if err != nil {
		return fmt.Errorf("lab: encode cluster state: %w", err)
	}
	tmp := filepath.Join(dir, ClusterFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("lab: write cluster state: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, ClusterFile)); err != nil {
		return fmt.Errorf("lab: write cluster state: %w", err)
	}
	return nil
}

// AttachCluster returns the cluster that a StartCluster or StartBroker
// (possibly in another process) left in dir, with all its nodes, running
// or not (see Broker.Running), or an error wrapping ErrNotRunning when
// none of them runs.
func AttachCluster(dir string) (*Cluster, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("lab: attach: %w", err)
	}
	c := &Cluster{dir: abs}
	cs, err := readClusterState(abs)
	switch {
	case err == nil:
		if cs.Net != nil || cs.FS != nil {
			c.iso = &isolation{dir: abs, st: cs}
		}
		for _, n := range cs.Nodes {
			b, err := attachNode(filepath.Join(abs, n.Dir))
			if err != nil {
				return nil, err
			}
			c.nodes = append(c.nodes, b)
		}
	case errors.Is(err, os.ErrNotExist):
		b, err := attachNode(abs)
		if err != nil {
			return nil, err
		}
		c.nodes = []*Broker{b}
	default:
		return nil, err
	}
	for _, b := range c.nodes {
		if b.Running() {
			return c, nil
		}
	}
	return nil, fmt.Errorf("%w in %s", ErrNotRunning, abs)
}

// RecordedClusterConfig returns what cluster.json in dir (or, for a
// single broker without one, its broker.json) says the cluster was last
// started with (Dir, Brokers, Version, Netns, FS, FSSizeMB, Security
// with its Dir), so that a restart can leave them out (`kscope lab broker
// start` does); an error wrapping os.ErrNotExist when dir has neither.
func RecordedClusterConfig(dir string) (ClusterConfig, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ClusterConfig{}, fmt.Errorf("lab: cluster dir: %w", err)
	}
	cs, err := readClusterState(abs)
	if errors.Is(err, os.ErrNotExist) {
		st, serr := readState(abs)
		if serr != nil {
			return ClusterConfig{}, errors.Join(err, serr)
		}
		cs = clusterState{Version: st.version(), Nodes: []clusterNode{{ID: st.NodeID}}, TLSDir: st.TLSDir}
	} else if err != nil {
		return ClusterConfig{}, err
	}
	cfg := ClusterConfig{Dir: abs, Brokers: len(cs.Nodes), Version: cs.Version, Netns: cs.Net != nil}
	if cs.FS != nil {
		cfg.FS, cfg.FSSizeMB = cs.FS.Type, cs.FS.SizeMB
	}
	if cs.TLSDir != "" {
		cfg.Security = &SecurityConfig{Dir: cs.TLSDir}
	}
	return cfg, nil
}

// Brokers are the cluster's nodes, by node id (1..N).
func (c *Cluster) Brokers() []*Broker { return append([]*Broker(nil), c.nodes...) }

// Addrs are the nodes' PLAINTEXT addresses, by node id.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, b := range c.nodes {
		addrs[i] = b.Addr()
	}
	return addrs
}

// Bootstrap is the comma-separated list of every node's PLAINTEXT
// address, for bootstrap.servers.
func (c *Cluster) Bootstrap() string { return strings.Join(c.Addrs(), ",") }

// Dir is the cluster's dir.
func (c *Cluster) Dir() string { return c.dir }

// ClusterID is the KRaft cluster id all nodes were formatted with.
func (c *Cluster) ClusterID() string { return c.nodes[0].ClusterID() }

// Version is the Apache Kafka release the cluster runs.
func (c *Cluster) Version() string { return c.nodes[0].Version() }

// Bridge is the bridge a Netns cluster's nodes hang off, "" without Netns.
func (c *Cluster) Bridge() string {
	if c.iso == nil || c.iso.st.Net == nil {
		return ""
	}
	return c.iso.st.Net.Bridge
}

// Subnet is a Netns cluster's 10.X.Y.0/24, "" without Netns.
func (c *Cluster) Subnet() string {
	if c.iso == nil || c.iso.st.Net == nil {
		return ""
	}
	return c.iso.st.Net.Subnet
}

// Stop stops every node at once (SIGTERM, a controlled shutdown, then
// SIGKILL after 20 s, see Broker.Stop). All together because a combined
// node's controlled shutdown needs a controller quorum, which one by one
// the last nodes would lack. With Netns or FS the nodes' file systems are
// thawed first (a JVM blocked on a frozen one would not stop) and, once
// the JVMs are gone, unmounted, their loop devices detached and the
// namespaces, veth pairs and bridge deleted. It is idempotent.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() { c.stopErr = c.stop() })
	return c.stopErr
}

func (c *Cluster) stop() error {
	if c.iso != nil {
		c.iso.thaw()
	}
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, b := range c.nodes {
		wg.Go(func() { errs[i] = b.Stop() })
	}
	wg.Wait()
	if c.iso != nil {
		// A node alive now is not one of ours (another start on the same
		// dir): its namespace and mount must stay.
		if d, pid := c.iso.running(); pid != 0 {
			errs = append(errs, fmt.Errorf("lab: not removing the namespaces and mounts of %s: broker in %s runs (pid %d)", c.dir, d, pid))
		} else {
			errs = append(errs, c.iso.tearDown())
		}
	}
	return errors.Join(errs...)
}
