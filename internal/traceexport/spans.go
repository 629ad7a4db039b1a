package traceexport

import (
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/kscope-dev/kscope/internal/explain"
)

// Span is one part of a slow request's time: a child of the request's
// root span.
type Span struct {
	Name       string
	Start, End time.Time
	Attributes []attribute.KeyValue
}

// maxEvidenceSpans bounds the spans of one kind (CPU waits, pauses,
// kernel waits, appends waited for) per finding.
const maxEvidenceSpans = 8

// Spans lays a finding's evidence out in time: every span a part of the
// request's latency that the explanation placed. Follower evidence from
// another broker's recording is moved onto the leader's clock.
func Spans(f *explain.Finding) []Span {
	var out []Span
	add := func(name string, start, end time.Time, attrs ...attribute.KeyValue) {
		if start.IsZero() || end.Before(start) {
			return
		}
		out = append(out, Span{Name: name, Start: start, End: end, Attributes: attrs})
	}
	if f.QueuedMs > 0 {
		attrs := []attribute.KeyValue{attribute.Float64("kscope.queued_ms", f.QueuedMs)}
		if qb := f.QueuedBehind; qb != nil {
			attrs = append(attrs, attribute.Int("kafka.correlation_id", int(qb.CorrelationID)), attribute.String("kscope.cause", qb.Cause))
		}
		add("queued behind the previous request", f.Arrival, f.Arrival.Add(ms(f.QueuedMs)), attrs...)
	}
	for _, p := range f.Partitions {
		part := fmt.Sprintf("%s-%d", p.Topic, p.Partition)
		if w := p.Write; w != nil {
			add("append "+part, w.Start, w.End, writeAttrs(w)...)
		}
		for i, b := range p.Blocking {
			if i == maxEvidenceSpans {
				break
			}
			add(fmt.Sprintf("lock wait: append %s by tid %d", part, b.TID), b.Start, b.End, writeAttrs(&b)...)
		}
	}
	for i, l := range f.LockWaits {
		if i == maxEvidenceSpans {
			break
		}
		add("lock wait: "+l.Monitor, l.Start, l.End, attribute.Int("thread.id", l.TID), attribute.String("thread.name", l.Thread),
			attribute.Int("kscope.owner_tid", l.OwnerTID))
	}
	out = append(out, replicationSpans(f)...)
	for i, d := range f.RunDelays {
		if i == maxEvidenceSpans {
			break
		}
		add(fmt.Sprintf("cpu wait: tid %d", d.TID), d.Start, d.End, attribute.Int("thread.id", d.TID), attribute.String("thread.name", d.Thread),
			attribute.Int("cpu.id", d.CPU))
	}
	for i, p := range f.Pauses {
		if i == maxEvidenceSpans {
			break
		}
		add("jvm pause: "+p.Name, p.Start, p.End, attribute.String("kscope.pause_type", p.Type), attribute.String("kscope.pause_cause", p.Cause))
	}
	for i, k := range f.KernelWaits {
		if i == maxEvidenceSpans {
			break
		}
		add(fmt.Sprintf("kernel wait: tid %d", k.TID), k.Start, k.End, attribute.Int("thread.id", k.TID), attribute.StringSlice("kscope.stack", k.Stack))
	}
	if f.ResponseMs > 0 {
		add("response send", f.End.Add(-ms(f.ResponseMs)), f.End, attribute.Float64("kscope.response_ms", f.ResponseMs))
	}
	return out
}

// replicationSpans are the waits for each follower: from the end of the
// leader's own append of the partition to the follower's fetch past it,
// and, when the follower's recording was read, the follower's appends
// in that wait.
func replicationSpans(f *explain.Finding) []Span {
	ownEnd := make(map[string]time.Time)
	for _, p := range f.Partitions {
		if p.Write != nil {
			ownEnd[fmt.Sprintf("%s-%d", p.Topic, p.Partition)] = p.Write.End
		}
	}
	var out []Span
	for _, rf := range f.Replication {
		part := fmt.Sprintf("%s-%d", rf.Topic, rf.Partition)
		start, ok := ownEnd[part]
		if !ok || rf.FetchArrival.Before(start) {
			continue
		}
		attrs := []attribute.KeyValue{
			attribute.Int("kscope.follower", int(rf.Replica)), attribute.Float64("kscope.late_ms", rf.LateMs),
			attribute.Float64("kscope.silent_ms", rf.SilentMs), attribute.Int64("kafka.fetch_offset", rf.FetchOffset),
			attribute.Int64("kafka.last_offset", rf.LastOffset), attribute.Bool("kscope.decisive", rf.Decisive),
		}
		fw := rf.Follower
		if fw != nil {
			attrs = append(attrs, attribute.String("kscope.follower_cause", fw.Cause), attribute.Float64("kscope.leader_ms", fw.LeaderMs),
				attribute.Float64("kscope.network_ms", fw.NetworkMs), attribute.Float64("kscope.follower_ms", fw.FollowerMs),
				attribute.Float64("kscope.append_ms", fw.AppendMs), attribute.Bool("kscope.frozen", fw.Frozen),
				attribute.Float64("kscope.clock_error_ms", fw.ClockErrorMs))
		}
		out = append(out, Span{Name: fmt.Sprintf("replication wait: follower %d %s", rf.Replica, part), Start: start, End: rf.FetchArrival, Attributes: attrs})
		if fw == nil {
			continue
		}
		shift := ms(fw.ClockOffsetMs) // the follower's clock minus the leader's
		for i, w := range fw.Appends {
			if i == maxEvidenceSpans {
				break
			}
			out = append(out, Span{Name: fmt.Sprintf("follower %d append %s-%d", fw.Broker, w.Topic, w.Partition), Start: w.Start.Add(-shift), End: w.End.Add(-shift),
				Attributes: []attribute.KeyValue{attribute.Int("kscope.follower", int(fw.Broker)), attribute.Int("thread.id", w.TID),
					attribute.String("thread.name", w.Thread), attribute.Int64("kscope.bytes", w.Bytes), attribute.String("kscope.file", w.File)}})
		}
	}
	return out
}

func writeAttrs(w *explain.WriteEvidence) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.Int("thread.id", w.TID), attribute.String("thread.name", w.Thread), attribute.String("kscope.op", w.Op),
		attribute.Int64("kscope.bytes", w.Bytes), attribute.String("kscope.file", w.File), attribute.String("kscope.matched_by", w.MatchedBy)}
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
