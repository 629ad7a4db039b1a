package iotrace

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// DeviceSummary is every journal commit, fsync, XFS log write or force,
// or block request of one kind on one device, from the in-kernel
// histograms of bpf/iojournal.bpf.c (Config.Journal): events under the
// minimum latency are counted too.
type DeviceSummary struct {
	Dev   string // "major:minor"
	Kind  Kind
	Count uint64
	Bytes uint64 // block requests: bytes; XFS log writes: iclog bytes
	Total time.Duration
	// Slots as in Summary; all in slot 0 for kinds without latency.
	Slots [numSlots]uint64
}

// Mean is the exact mean latency.
func (s *DeviceSummary) Mean() time.Duration {
	if s.Count == 0 {
		return 0
	}
	return s.Total / time.Duration(s.Count)
}

// Quantile is an upper bound of the q-quantile, as Summary.Quantile.
func (s *DeviceSummary) Quantile(q float64) time.Duration { return quantile(&s.Slots, q) }

// DeviceSummaries returns the journal and block histograms so far, sorted
// by device and kind; nil without Config.Journal.
func (t *Tracer) DeviceSummaries() ([]DeviceSummary, error) {
	if t.journal == nil {
		return nil, nil
	}
	var out []DeviceSummary
	var key iojournalIojournalHistKey
	var h iojournalIojournalHist
	it := t.journal.objs.KsioJhists.Iterate()
	for it.Next(&key, &h) {
		s := DeviceSummary{Dev: devString(key.Dev), Kind: Kind(key.Kind), Count: h.Count, Bytes: h.Bytes,
			Total: time.Duration(h.TotalNs)}
		copy(s.Slots[:], h.Slots[:])
		out = append(out, s)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("iotrace: read journal histograms: %w", err)
	}
	slices.SortFunc(out, func(a, b DeviceSummary) int {
		return cmp.Or(cmp.Compare(a.Dev, b.Dev), cmp.Compare(a.Kind, b.Kind))
	})
	return out, nil
}
