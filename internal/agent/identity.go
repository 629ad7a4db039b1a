package agent

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kscope-dev/kscope/internal/hostinfo"
	"github.com/kscope-dev/kscope/internal/iotrace"
	"github.com/kscope-dev/kscope/internal/logdir"
)

// Identity is the broker an agent watches, as its fleet knows it: every
// series the agent exports carries it as the labels broker_id and
// cluster_id, so that one Prometheus scraping the agents of a whole
// cluster (or of several clusters) can tell their series apart, and a
// dashboard can sum over a cluster or drill down to one broker.
type Identity struct {
	BrokerID  string
	ClusterID string
}

// Label names of the identity.
const (
	LabelBrokerID  = "broker_id"
	LabelClusterID = "cluster_id"
)

// unknownIdentity labels an agent that could not read its broker's
// meta.properties and was given no ids.
const unknownIdentity = "unknown"

func (id Identity) labels() prometheus.Labels {
	return prometheus.Labels{LabelBrokerID: id.BrokerID, LabelClusterID: id.ClusterID}
}

// resolveIdentity fills what cfg does not give of the identity from the
// broker's meta.properties: in cfg.LogDirs, else in the log dirs of the
// broker process (cfg.PID, else the one kafka.Kafka JVM running now).
// What cannot be read is "unknown", with the reason.
func resolveIdentity(cfg Config) (Identity, error) {
	id := cfg.Identity
	if id.BrokerID != "" && id.ClusterID != "" {
		return id, nil
	}
	meta, err := readBrokerMeta(cfg)
	if err == nil {
		if id.BrokerID == "" {
			id.BrokerID = fmt.Sprint(meta.NodeID)
		}
		if id.ClusterID == "" {
			id.ClusterID = meta.ClusterID
		}
	}
	if id.BrokerID == "" {
		id.BrokerID = unknownIdentity
	}
	if id.ClusterID == "" {
		id.ClusterID = unknownIdentity
	}
	return id, err
}

func readBrokerMeta(cfg Config) (logdir.BrokerMeta, error) {
	dirs, pid := cfg.LogDirs, cfg.PID
	if len(dirs) == 0 {
		if pid == 0 {
			var err error
			if pid, err = iotrace.FindBroker(); err != nil {
				return logdir.BrokerMeta{}, fmt.Errorf("broker identity: %w", err)
			}
		}
		var err error
		if dirs, err = iotrace.LogDirsOf(pid); err != nil {
			return logdir.BrokerMeta{}, fmt.Errorf("broker identity: %w", err)
		}
	}
	var firstErr error
	for _, d := range dirs {
		m, err := logdir.ReadBrokerMeta(hostinfo.SeenBy(pid, d))
		if err == nil {
			return m, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return logdir.BrokerMeta{}, fmt.Errorf("broker identity: %w", firstErr)
}
