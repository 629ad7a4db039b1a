package explain

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/grouphold"
	"github.com/kscope-dev/kscope/internal/recording"
)

// APIGroup is what explain explains with --api group: the group
// coordinator's requests (JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// OffsetCommit, ConsumerGroupHeartbeat), slow by their coordinator's own
// part: without the time the group protocol held them (internal/grouphold).
const APIGroup = "group"

// groupScan reads the requests file once more, whole, for the group
// coordinator's requests: each one's position, and the generations that
// split them.
func (e *Explainer) groupScan(rd recording.Reader, path string) ([]int64, *grouphold.Splitter, error) {
	sp := grouphold.New()
	var cands []int64
	err := rd.Lines(path, func(line []byte, pos int64) error {
		var r event.Request
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		if !grouphold.IsGroupRequest(&r) {
			return nil
		}
		if err := rd.Window.CheckRequest(r.Arrival, r.End, r.LatencyMs, r.Answered); err != nil {
			return err
		}
		sp.Add(&r)
		if r.Answered && !r.End.IsZero() {
			cands = append(cands, pos)
		}
		return nil
	})
	return cands, sp, err
}

// groupThreshold is what makes a group request slow: --slow, or the
// percentile the user asked for of the coordinator's own parts, else
// grouphold.SlowOwn. Not a percentile by default: a group's requests are
// few, and most of them heartbeats of a millisecond, so their p99 is
// either noise or the one slow request itself.
func groupThreshold(cfg Config, own []float64) SlowThreshold {
	if cfg.Slow > 0 || cfg.PercentileGiven {
		th, _ := DecideThreshold(cfg, nil, own)
		return th
	}
	return SlowThreshold{grouphold.SlowOwn, "a coordinator's own work takes milliseconds"}
}

// runGroups explains the scan's slow group requests: those whose own part
// at the coordinator is at or above the threshold.
func (e *Explainer) runGroups(rd recording.Reader, scan *Scan, opts RunOptions, emit func(*Finding) error) (*Summary, error) {
	e.fetches, e.groups, e.inFlight = scan.fetches, scan.groups, &scan.inFlight
	cands, sp, err := e.groupScan(rd, scan.path)
	if err != nil {
		return nil, err
	}
	rf, err := e.openRequests(scan.path)
	if err != nil {
		return nil, err
	}
	defer rf.close()
	splits := make([]grouphold.Split, len(cands))
	own := make([]float64, len(cands))
	for i, pos := range cands {
		r, err := rf.read(pos)
		if err != nil {
			return nil, err
		}
		splits[i], _ = sp.Split(r)
		own[i] = splits[i].OwnMs
	}
	th := groupThreshold(e.cfg, own)
	if opts.Threshold != nil {
		th = *opts.Threshold
	}
	limit := ms(int64(th.Latency))
	for i, pos := range cands {
		if scan.only == nil && (own[i] < limit || own[i] <= 0) || scan.only != nil && pos != scan.onlyPos {
			continue
		}
		r, err := rf.read(pos)
		if err != nil {
			return nil, err
		}
		if err := emit(e.explainGroup(r, splits[i])); err != nil {
			return nil, err
		}
	}
	if scan.only != nil && !slices.Contains(cands, scan.onlyPos) {
		return nil, fmt.Errorf("request %s/%d is not an answered group request of %s", scan.only.Client, scan.only.CorrelationID, scan.path)
	}
	sum := e.Summary(0, th.Latency, th.From, opts.Top)
	sum.API, sum.GroupRequests = APIGroup, int64(len(cands))
	return sum, nil
}

// explainGroup classifies one group request of the given split: the
// causes measure it as a produce request, without the protocol's hold,
// and its storage is its group's partition of __consumer_offsets, where
// the coordinator appends (a SyncGroup's assignment, an OffsetCommit's
// offsets).
func (e *Explainer) explainGroup(r *event.Request, sp grouphold.Split) *Finding {
	stored := *r
	from := grouphold.BrokerStart(r)
	if sp.HoldMs > 0 {
		from = sp.HoldEnd
	}
	stored.Partitions = e.offsetsPartitions(r.Group.ID, from.UnixNano(), r.End.UnixNano())
	c := e.newRequest(&stored)
	f := c.f
	f.API, f.GroupSplit, f.Group = r.API, &sp, r.Group.ID
	var hold interval
	if sp.HoldMs > 0 {
		hold = interval{c.brokerStart, sp.HoldEnd.UnixNano()}
	}
	ownNs := int64(sp.OwnMs * 1e6)
	got := e.measure(c)
	for i := range got {
		withoutHold(&got[i], hold, ownNs)
	}
	dropHeldEvidence(f, hold)
	f.Shares = e.shares(got)
	c.L = ownNs
	e.name(c, got)
	f.Detail = e.detail(f, c.L)
	e.last[r.Client] = connLast{corr: r.CorrelationID, end: c.E, cause: f.Cause, measured: got}
	e.sum.add(f, e, nil)
	return f
}

// offsetsPartitions is where group's coordinator appended between a and
// b: its partition of __consumer_offsets (with the default partition
// count) when the traces show writes to it then, else every partition of
// __consumer_offsets written then (the topic may have been made with
// another count), else the default one.
func (e *Explainer) offsetsPartitions(group string, a, b int64) []event.Partition {
	def := grouphold.OffsetsPartition(group, grouphold.DefaultOffsetsPartitions)
	written := func(p int32) bool {
		found := false
		e.idx.overlapping(partKey{grouphold.OffsetsTopic, p}, a, b, func(int32) { found = true })
		return found
	}
	if written(def) {
		return []event.Partition{{Topic: grouphold.OffsetsTopic, Partition: def}}
	}
	var out []event.Partition
	for k := range e.idx.partIdx {
		if k.topic == grouphold.OffsetsTopic && written(k.partition) {
			out = append(out, event.Partition{Topic: k.topic, Partition: k.partition})
		}
	}
	if len(out) == 0 {
		return []event.Partition{{Topic: grouphold.OffsetsTopic, Partition: def}}
	}
	slices.SortFunc(out, func(x, y event.Partition) int { return int(x.Partition - y.Partition) })
	return out
}

// withoutHold takes a held interval out of what a cause measured: nothing
// held a request that was waiting anyway (a fetch for data, a group
// request for its members). A cause measured only as a sum is bounded by
// the part that was not held, limit (ns).
func withoutHold(m *measured, held interval, limit int64) {
	if m.ivs != nil {
		var kept []interval
		for _, iv := range m.ivs {
			kept = append(kept, minus(iv, []interval{held})...)
		}
		m.ivs = kept
		m.ns = unionLen(kept)
	}
	m.ns = min(m.ns, limit)
}

// dropHeldEvidence leaves out of a finding's evidence what happened
// wholly while the request was held: it held nothing up.
func dropHeldEvidence(f *Finding, p interval) {
	inside := func(a, b time.Time) bool { return a.UnixNano() >= p.a && b.UnixNano() <= p.b }
	f.Pauses = slices.DeleteFunc(f.Pauses, func(x event.JVMPause) bool { return inside(x.Start, x.End) })
	f.RunDelays = slices.DeleteFunc(f.RunDelays, func(x event.RunDelay) bool { return inside(x.Start, x.End) })
	f.Steals = slices.DeleteFunc(f.Steals, func(x event.CPUSteal) bool { return inside(x.Start, x.End) })
	f.NetworkThreadWaits = slices.DeleteFunc(f.NetworkThreadWaits, func(x event.KernelWait) bool { return inside(x.Start, x.End) })
	f.KernelWaits = slices.DeleteFunc(f.KernelWaits, func(x event.KernelWait) bool { return inside(x.Start, x.End) })
}
