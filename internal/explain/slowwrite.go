package explain

import "fmt"

// CauseSlowWrite: the request's own append (a write to its partition's log
// by the thread that handled it, with the handler's file-system waits
// outside the write call) accounts for most of its latency.
const CauseSlowWrite = "slow-write"

func init() {
	register(cause{
		name:  CauseSlowWrite,
		order: 10,
		short: "write",
		help:  "its own append to the partition log took most of its time",
		measure: func(m *measuring) measured {
			return measured{ns: unionLen(m.sw.own), ivs: m.sw.own}
		},
		detail: slowWriteDetail,
	})
}

// slowWriteDetail names the append that was slow, else the handler's
// wait in the file system, and the root under either.
func slowWriteDetail(f *Finding) string {
	for _, p := range f.Partitions {
		if p.Write != nil && p.Write.LatencyMs >= f.ExplainedMs/2 {
			s := fmt.Sprintf("its append to %s-%d (tid %d) took %.1f ms", p.Topic, p.Partition, p.Write.TID, p.Write.LatencyMs)
			return s + rootDetail(f)
		}
	}
	if k, ok := longestWait(f.KernelWaits); ok {
		return fmt.Sprintf("its handler (tid %d) blocked %.1f ms in the file system outside its write call, at %s", k.TID, k.LatencyMs, frames(k.Stack))
	}
	return ""
}
