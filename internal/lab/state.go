package lab

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// state is persisted as Dir/broker.json so another process (kscope lab
// broker status|stop) can find a running broker, and so a restart on
// formatted storage reuses the controller port baked into the KRaft
// bootstrap checkpoint.
type state struct {
	PID            int       `json:"pid"`              // 0 once stopped
	NodeID         int       `json:"nodeId,omitempty"` // absent (1) before clusters
	Version        string    `json:"version,omitempty"`
	Addr           string    `json:"addr"`
	ControllerAddr string    `json:"controllerAddr"`
	ClusterID      string    `json:"clusterId"`
	LogDirs        []string  `json:"logDirs"`
	RequestLog     string    `json:"requestLog,omitempty"`
	Libs           string    `json:"libs"`
	StartedAt      time.Time `json:"startedAt"`
	// With ClusterConfig.Netns: the node's namespace and the host end of
	// its veth pair (Addr is then the node's own address).
	Netns  string `json:"netns,omitempty"`
	HostIf string `json:"hostIf,omitempty"`
	// With ClusterConfig.FS: the log dir's mount point, its loop device
	// (of this start) and file system.
	MountPoint string `json:"mountPoint,omitempty"`
	Device     string `json:"device,omitempty"`
	FSType     string `json:"fsType,omitempty"`
	// With Security: the SSL and SASL_SSL listeners' addresses (as Addr)
	// and SecurityConfig.Dir.
	SSLAddr     string `json:"sslAddr,omitempty"`
	SASLSSLAddr string `json:"saslSslAddr,omitempty"`
	TLSDir      string `json:"tlsDir,omitempty"`
}

func readState(dir string) (state, error) {
	var st state
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		return st, fmt.Errorf("lab: read state: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("lab: parse %s: %w", filepath.Join(dir, StateFile), err)
	}
	return st, nil
}

// writeState replaces the file atomically so a concurrent reader never
// sees half a document.
func writeState(dir string, st state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("lab: encode state: %w", err)
	}
	tmp := filepath.Join(dir, StateFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("lab: write state: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, StateFile)); err != nil {
		return fmt.Errorf("lab: write state: %w", err)
	}
	return nil
}

// version is the Kafka release of a start; state written before releases
// were selectable lacks it, and then the jars tell.
func (st state) version() string {
	if st.Version != "" {
		return st.Version
	}
	if v, err := LibsVersion(st.Libs); err == nil {
		return v
	}
	return KafkaVersion
}
