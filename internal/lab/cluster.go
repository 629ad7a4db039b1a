package lab

import (
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
)

// ClusterConfig describes a KRaft cluster of Brokers combined
// broker+controller nodes on 127.0.0.1. One node is a Broker in Dir
// itself (the layout of StartBroker); node i of more lives in
// Dir/node-<i> with node.id i, and Dir/cluster.json records them all.
type ClusterConfig struct {
	// Dir holds everything the cluster writes (required).
	Dir string
	// Brokers is the number of nodes; 0 means as many as the cluster
	// already in Dir has, else 1.
	Brokers int
	// Port is node 1's PLAINTEXT port; node i gets Port+i-1. 0 picks free
	// ports.
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
}

type clusterNode struct {
	ID             int    `json:"id"`
	Dir            string `json:"dir"` // relative to the cluster's Dir
	Addr           string `json:"addr"`
	ControllerAddr string `json:"controllerAddr"`
}

// StartCluster starts cfg.Brokers nodes: fresh storage is formatted (one
// cluster id, controller.quorum.voters naming every node), then all nodes
// are started, and it returns once every node answers Metadata listing
// all of them. Topics get replication factor min(3, N) by default
// (default.replication.factor, offsets and transaction topics) and
// min.insync.replicas 2 from 3 nodes on. As with StartBroker, ctx bounds
// only the startup, and formatted storage is restarted as it was.
func StartCluster(ctx context.Context, cfg ClusterConfig) (*Cluster, error) {
	if cfg.Dir == "" {
		return nil, errors.New("lab: ClusterConfig.Dir is required")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("lab: cluster dir: %w", err)
	}
	existing, err := existingNodes(dir)
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
	if cfg.HeapMB <= 0 && n > 1 {
		cfg.HeapMB = 256
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = time.Duration(n) * 60 * time.Second
	}
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
		if cfg.Port != 0 {
			c.Port = cfg.Port + i
		}
		if cfgs[i], err = c.withDefaults(); err != nil {
			return nil, err
		}
	}
	if n > 1 {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("lab: cluster dir: %w", err)
		}
	}
	nodes, err := startNodes(ctx, cfgs, cfg.Version, cfg.LibsDir, cfg.StartTimeout)
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, nodes: nodes}
	if n > 1 {
		if err := c.writeState(); err != nil {
			_ = c.Stop()
			return nil, err
		}
	}
	return c, nil
}

// existingNodes returns how many nodes the cluster in dir has: those in
// cluster.json, 1 for a single broker's broker.json, 0 for neither.
func existingNodes(dir string) (int, error) {
	cs, err := readClusterState(dir)
	if err == nil {
		return len(cs.Nodes), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	if fileExists(filepath.Join(dir, StateFile)) {
		return 1, nil
	}
	return 0, nil
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

func (c *Cluster) writeState() error {
	cs := clusterState{
		ClusterID: c.ClusterID(),
		Version:   c.Version(),
		Brokers:   len(c.nodes),
		Bootstrap: c.Bootstrap(),
	}
	var cports []int
	for _, b := range c.nodes {
		rel, err := filepath.Rel(c.dir, b.Dir())
		if err != nil {
			return fmt.Errorf("lab: cluster state: %w", err)
		}
		cs.Nodes = append(cs.Nodes, clusterNode{ID: b.NodeID(), Dir: rel, Addr: b.Addr(), ControllerAddr: b.ControllerAddr()})
		p, err := portOf(b.ControllerAddr())
		if err != nil {
			return err
		}
		cports = append(cports, p)
	}
	cs.Voters = staticVoters(cports)
	b, err := json.MarshalIndent(cs, "", "  ")
	if err != nil {
		return fmt.Errorf("lab: encode cluster state: %w", err)
	}
	tmp := filepath.Join(c.dir, ClusterFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("lab: write cluster state: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(c.dir, ClusterFile)); err != nil {
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

// Stop stops every node at once (SIGTERM, a controlled shutdown, then
// SIGKILL after 20 s, see Broker.Stop). All together because a combined
// node's controlled shutdown needs a controller quorum, which one by one
// the last nodes would lack.
func (c *Cluster) Stop() error {
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, b := range c.nodes {
		wg.Go(func() { errs[i] = b.Stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
