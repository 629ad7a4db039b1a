package logdir

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// MetaPropertiesFile is the file at the top of every log directory that
// names the broker and cluster it belongs to.
const MetaPropertiesFile = "meta.properties"

// BrokerMeta is what a log directory's meta.properties says.
type BrokerMeta struct {
	// NodeID is node.id (KRaft) or broker.id (ZooKeeper mode).
	NodeID    int32
	ClusterID string
}

// ReadBrokerMeta reads dir's meta.properties, a Java properties file
// written by Kafka ("#" comments, key=value lines):
//
//	version=1
//	node.id=2
//	cluster.id=q1Sh-9_ISia_zwGINzRvyQ
//	directory.id=...
//
// A missing file gives an error wrapping fs.ErrNotExist.
func ReadBrokerMeta(dir string) (BrokerMeta, error) {
	path := filepath.Join(dir, MetaPropertiesFile)
	text, err := readSmallFile(path)
	if err != nil {
		return BrokerMeta{}, err
	}
	m := BrokerMeta{NodeID: -1}
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "node.id", "broker.id":
			id, err := strconv.ParseInt(v, 10, 32)
			if err != nil || id < 0 {
				return BrokerMeta{}, fmt.Errorf("logdir: %s: %s %q is not a node id", path, k, v)
			}
			m.NodeID = int32(id)
		case "cluster.id":
			m.ClusterID = v
		}
	}
	if m.NodeID < 0 {
		return BrokerMeta{}, fmt.Errorf("logdir: %s has no node.id or broker.id", path)
	}
	return m, nil
}
