package iotrace

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// numSlots is MAX_SLOTS in bpf/iotrace.h.
const numSlots = 40

// Summary is every call of one operation on one partition's files, from
// the in-kernel histograms: calls under the minimum latency are counted
// too. Without AllFiles only the partition's .log files are counted.
type Summary struct {
	Topic     string // empty for files outside partition directories
	Partition int32  // -1 for files outside partition directories
	Op        string
	Dev       string // "major:minor"
	Count     uint64
	Bytes     uint64 // bytes written (0 for fsyncs)
	Errors    uint64 // calls that failed
	Total     time.Duration
	// Slots[i] counts calls that took [2^i, 2^(i+1)) ns (slot 0 also
	// counts 0 ns; the last slot everything longer).
	Slots [numSlots]uint64
}

// Mean is the exact mean latency.
func (s *Summary) Mean() time.Duration {
	if s.Count == 0 {
		return 0
	}
	return s.Total / time.Duration(s.Count)
}

// Quantile returns an upper bound of the q-quantile of the latency (0 < q
// <= 1): the upper edge of the log2 slot it falls in, so it is at most
// twice the true value.
func (s *Summary) Quantile(q float64) time.Duration { return quantile(&s.Slots, q) }

// quantile is Summary.Quantile for any log2 histogram.
func quantile(slots *[numSlots]uint64, q float64) time.Duration {
	var n uint64
	for _, c := range slots {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := uint64(q*float64(n) + 0.999999)
	rank = max(1, min(rank, n))
	var seen uint64
	for i, c := range slots {
		seen += c
		if seen >= rank {
			return time.Duration(1) << (i + 1)
		}
	}
	return time.Duration(1) << numSlots
}

// Summaries returns the histograms so far per topic-partition and
// operation, sorted by topic, partition and operation, and how many calls
// were on files that could not be named (closed and deleted since).
func (t *Tracer) Summaries() ([]Summary, uint64, error) {
	type groupKey struct {
		topic     string
		partition int32
		op        Op
		dev       uint32
	}
	groups := map[groupKey]*Summary{}
	var unnamed uint64
	var key iotraceIotraceHistKey
	var h iotraceIotraceHist
	it := t.objs.KsioHists.Iterate()
	for it.Next(&key, &h) {
		path, ok := t.files.lookup(fileID{dev: key.Dev, ino: key.Ino}, -1)
		if !ok {
			unnamed += h.Count
			continue
		}
		f, ok := classify(path, t.cfg.LogDirs, t.cfg.AllFiles)
		if !ok {
			continue
		}
		gk := groupKey{f.topic, f.partition, Op(key.Op), key.Dev}
		s := groups[gk]
		if s == nil {
			s = &Summary{Topic: f.topic, Partition: f.partition, Op: Op(key.Op).String(), Dev: devString(key.Dev)}
			groups[gk] = s
		}
		s.Count += h.Count
		s.Bytes += h.Bytes
		s.Errors += h.Errors
		s.Total += time.Duration(h.TotalNs)
		for i, c := range h.Slots {
			s.Slots[i] += c
		}
	}
	if err := it.Err(); err != nil {
		return nil, 0, fmt.Errorf("iotrace: read histograms: %w", err)
	}
	out := make([]Summary, 0, len(groups))
	for _, s := range groups {
		out = append(out, *s)
	}
	sortSummaries(out)
	return out, unnamed, nil
}

// sortSummaries orders summaries by topic, partition, operation, device.
func sortSummaries(out []Summary) {
	slices.SortFunc(out, func(a, b Summary) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition),
			cmp.Compare(a.Op, b.Op), cmp.Compare(a.Dev, b.Dev))
	})
}
