// Package explaintest generates synthetic recordings for explain's
// benchmark (bench/explain.sh and BenchmarkExplainMillion): shaped like a
// busy broker's, deterministic, and of any size. Not for acceptance tests,
// which record a real broker.
package explaintest

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/recording"
)

// GenerateRecording writes a synthetic recording of n produce requests and
// n writes, shaped like a busy broker's: 64 partitions, one write per
// request-partition, 1% of requests slowed by a slow write or queued
// behind one, a journal commit every 5 s; and the scheduling evidence
// (sched.jsonl): a run-queue delay of the handler for one request in ten
// (one in a hundred long enough to starve it), the network thread of
// every connection, a GC pause every 2 s. Deterministic.
func GenerateRecording(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rq, err := os.Create(filepath.Join(dir, recording.RequestsFile))
	if err != nil {
		return err
	}
	defer rq.Close()
	wf, err := os.Create(filepath.Join(dir, recording.WritesFile))
	if err != nil {
		return err
	}
	defer wf.Close()
	jf, err := os.Create(filepath.Join(dir, recording.JournalFile))
	if err != nil {
		return err
	}
	defer jf.Close()
	reqs := output.NewJSONLines(bufio.NewWriterSize(rq, 1<<20))
	writes := output.NewJSONLines(bufio.NewWriterSize(wf, 1<<20))
	journal := output.NewJSONLines(jf)
	sf, err := os.Create(filepath.Join(dir, recording.SchedFile))
	if err != nil {
		return err
	}
	defer sf.Close()
	sched := output.NewJSONLines(bufio.NewWriterSize(sf, 1<<20))
	seenConn := make(map[string]bool)
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	offsets := make([]int64, 64)
	var stallEnd time.Time
	for i := range n {
		arrival := start.Add(time.Duration(i) * 100 * time.Microsecond) // 10k requests/s
		part := int32(i % 64)
		bytes := 200 + rng.IntN(2000)
		wstart := arrival.Add(200 * time.Microsecond)
		wdur := time.Duration(5+rng.IntN(50)) * time.Microsecond
		switch {
		case i%100 == 0: // a slow write of its own
			wdur = time.Duration(100+rng.IntN(400)) * time.Millisecond
			stallEnd = wstart.Add(wdur)
		case i%100 == 1 && stallEnd.After(wstart): // queued behind it
			wstart = stallEnd.Add(10 * time.Microsecond)
		case i%100 == 3: // its handler parked 30 ms first (schedEvents)
			wstart = arrival.Add(30 * time.Millisecond)
		}
		end := wstart.Add(wdur + 300*time.Microsecond)
		ids := []string{fmt.Sprintf("m-%d-0", i), fmt.Sprintf("m-%d-1", i)}
		r := &event.Request{Arrival: arrival, End: end, LatencyMs: float64(end.Sub(arrival)) / 1e6, BrokerMs: float64(end.Sub(arrival)) / 1e6,
			Client: fmt.Sprintf("10.0.0.%d:%d", i%7, 40000+i%100), Broker: "10.0.1.1:9092", API: "Produce", APIVersion: 11,
			CorrelationID: int32(i), ClientID: "producer-1", RequestBytes: bytes + 100, ResponseBytes: 60, Acks: new(int16(-1)),
			Partitions: []event.Partition{{Topic: "orders", Partition: part, Records: 2, Bytes: bytes, MessageIDs: ids}}, Answered: true}
		if i%100 == 1 && stallEnd.After(wstart.Add(-time.Second)) {
			r.Partitions[0].Partition = int32((i - 1) % 64) // same partition as the slow one
			part = r.Partitions[0].Partition
		}
		if err := reqs.Encode(r); err != nil {
			return err
		}
		w := &event.Write{Start: wstart, End: wstart.Add(wdur), LatencyMs: float64(wdur) / 1e6, TID: 100 + i%8, Thread: "data-plane-kafk",
			Op: "write", Bytes: int64(bytes), Offset: offsets[part], File: fmt.Sprintf("orders-%d/00000000000000000000.log", part),
			Topic: "orders", Partition: part, Dev: "259:1"}
		offsets[part] += int64(bytes)
		if err := writes.Encode(w); err != nil {
			return err
		}
		if err := schedEvents(sched, seenConn, r, w, i, rng); err != nil {
			return err
		}
		if i%50000 == 0 {
			c := &event.JournalCommit{Kind: event.KindJBD2Commit, Start: wstart.Add(-time.Millisecond), End: wstart.Add(wdur + time.Millisecond),
				Dev: "259:1", FS: "ext4", TID: uint32(i)}
			if err := journal.Encode(c); err != nil {
				return err
			}
		}
	}
	if err := reqs.Flush(); err != nil {
		return err
	}
	if err := writes.Flush(); err != nil {
		return err
	}
	if err := journal.Flush(); err != nil {
		return err
	}
	if err := sched.Flush(); err != nil {
		return err
	}
	return recording.WriteMeta(dir, &recording.Meta{Version: recording.FormatVersion, Tool: "explain benchmark generator", Start: start})
}

// schedEvents writes request i's scheduling evidence: its connection's
// network thread when first seen, a run-queue delay of its handler for one
// request in ten (for i%100 == 2, long enough to starve it), its handler's
// wake-up by the network thread for another one in ten (it was idle), a
// park of 30 ms until the log flusher woke it for i%100 == 3, and a GC
// pause every 20 000 requests (2 s).
func schedEvents(sched *output.JSONLines, seen map[string]bool, r *event.Request, w *event.Write, i int, rng *rand.Rand) error {
	if !seen[r.Client] {
		seen[r.Client] = true
		c := &event.ConnThread{Kind: event.KindConnThread, Time: r.Arrival, TID: 90 + i%3, Thread: "data-plane-kafk", Client: r.Client, Broker: r.Broker}
		if err := sched.Encode(c); err != nil {
			return err
		}
	}
	if i%10 == 2 {
		d := time.Duration(200+rng.IntN(2800)) * time.Microsecond
		if i%100 == 2 {
			d = 20 * time.Millisecond
		}
		rd := &event.RunDelay{Kind: event.KindRunDelay, Start: w.Start.Add(-d), End: w.Start, LatencyMs: float64(d) / 1e6, TID: w.TID,
			Thread: w.Thread, CPU: i % 2, HolderPID: 4242, HolderTID: 4243, HolderComm: "java"}
		if err := sched.Encode(rd); err != nil {
			return err
		}
	}
	switch {
	case i%100 == 3: // parked until the log flusher let it go
		u := &event.Wakeup{Kind: event.KindWakeup, Start: r.Arrival.Add(100 * time.Microsecond), End: w.Start.Add(-50 * time.Microsecond),
			TID: w.TID, Thread: w.Thread, WakerTID: 300, WakerThread: "kafka-schedule"}
		u.SleptMs = float64(u.End.Sub(u.Start)) / 1e6
		if err := sched.Encode(u); err != nil {
			return err
		}
	case i%10 == 5: // idle until its network thread queued the request
		u := &event.Wakeup{Kind: event.KindWakeup, Start: r.Arrival.Add(-2 * time.Millisecond), End: r.Arrival.Add(150 * time.Microsecond),
			SleptMs: 2.15, TID: w.TID, Thread: w.Thread, WakerTID: 90 + i%3, WakerThread: "data-plane-kafk"}
		if err := sched.Encode(u); err != nil {
			return err
		}
	}
	if i%20000 == 0 {
		p := &event.JVMPause{Kind: event.KindJVMPause, Start: r.Arrival, End: r.Arrival.Add(5 * time.Millisecond), LatencyMs: 5,
			Type: event.PauseGC, Name: "Pause Young (Normal)", Cause: "G1 Evacuation Pause", Source: "vm.log"}
		if err := sched.Encode(p); err != nil {
			return err
		}
	}
	return nil
}
