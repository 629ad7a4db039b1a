package recording

import (
	"github.com/kscope-dev/kscope/internal/hostinfo"
	"github.com/kscope-dev/kscope/internal/logdir"
)

// BrokerOf describes the broker process pid with the given log
// directories: its Kafka version, each log dir's file system, and the
// node and cluster ids its meta.properties record (the first log dir
// that has one). What cannot be read is left empty.
func BrokerOf(pid int, logDirs []string) Broker {
	b := Broker{PID: pid}
	b.Version, _ = hostinfo.BrokerVersion(pid)
	for _, d := range logDirs {
		ld := LogDir{Path: d}
		if m, err := hostinfo.MountOf(pid, d); err == nil {
			ld.Device, ld.FSType, ld.Source, ld.MountPoint, ld.Options = m.Device, m.FSType, m.Source, m.MountPoint, m.Options
		}
		b.LogDirs = append(b.LogDirs, ld)
		if b.NodeID == nil {
			if m, err := logdir.ReadBrokerMeta(hostinfo.SeenBy(pid, d)); err == nil {
				id := m.NodeID
				b.NodeID, b.ClusterID = &id, m.ClusterID
			}
		}
	}
	return b
}
