package explain

import (
	"cmp"
	"slices"

	"github.com/kscope-dev/kscope/internal/event"
)

// fileSync is a thread's fsync, fdatasync or msync of one of a
// partition's files (its log or an index): what a background thread (the
// log flusher) held while a handler it let go slept.
type fileSync struct {
	a, b int64 // unix nanoseconds
	part partKey
}

// AddSync adds a sync of a partition's file (ext4's fsync tracepoint,
// which sees msync of an index too).
func (x *Index) AddSync(s *event.FileSync) {
	x.addSync(s.TID, s.Start.UnixNano(), s.End.UnixNano(), s.Topic, s.Partition)
}

func (x *Index) addSync(tid int, a, b int64, topic string, partition int32) {
	if topic == "" || partition < 0 {
		return
	}
	if x.syncs == nil {
		x.syncs = make(map[int][]fileSync)
	}
	x.syncs[tid] = append(x.syncs[tid], fileSync{a, b, partKey{topic, partition}})
	x.built = false
}

// isSyncOp reports whether a traced write's op is a sync: the tracer
// times fsync and fdatasync as writes (an msync of an index comes as
// ext4's fsync event instead, AddSync).
func isSyncOp(op string) bool { return op == "fsync" || op == "fdatasync" }

func (x *Index) buildSyncs() {
	x.maxSync = 0
	for _, ss := range x.syncs {
		slices.SortFunc(ss, func(p, q fileSync) int { return cmp.Compare(p.a, q.a) })
		for _, s := range ss {
			x.maxSync = max(x.maxSync, s.b-s.a)
		}
	}
}

// syncedBy returns the partitions whose files tid synced during [a, b).
func (x *Index) syncedBy(tid int, a, b int64) []partKey {
	var out []partKey
	for _, s := range overlappingSorted(x.syncs[tid], a, b, x.maxSync, func(s *fileSync) (int64, int64) { return s.a, s.b }) {
		if !slices.Contains(out, s.part) {
			out = append(out, s.part)
		}
	}
	return out
}
