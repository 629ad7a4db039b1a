package clients

import (
	"encoding/json"
	"testing"
	"time"
)

// TestLiveReportIsASnapshot: the report Live gives before its first
// window ends is the current aggregator's; requests added after it must
// not change it. The agent encodes it as JSON at /clients without the
// view's lock while the capture adds requests: a map shared with the
// aggregator (a producer's acks and codecs, a consumer's fetch settings)
// was written during that encoding, which the Go runtime ends the agent
// for (concurrent map iteration and map write).
func TestLiveReportIsASnapshot(t *testing.T) {
	l := NewLive(Options{}, time.Hour)
	fetch := func(at time.Duration, maxWait int32) {
		r := req("10.0.0.3:6000", "c", apiFetch, 12, at)
		replica := int32(-1)
		r.ReplicaID = &replica
		r.Fetch.MaxWaitMs, r.Fetch.MinBytes, r.Fetch.MaxBytes = maxWait, 1, 50<<20
		l.Add(r)
	}
	l.Add(produce("10.0.0.2:5000", "p", 9, 0, 10, 1000, "zstd", 11))
	fetch(0, 500)
	rep := l.Report(t0.Add(time.Second))
	before, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		at := time.Duration(i+1) * time.Millisecond
		r := produce("10.0.0.2:5000", "p", 9, at, 10, 1000, []string{"lz4", "gzip"}[i%2], 11)
		acks := int16(i % 2)
		r.Acks = &acks
		l.Add(r)
		fetch(at, int32(100*i))
	}
	after, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Errorf("the report changed with requests added after it:\nbefore %s\nafter  %s", before, after)
	}
}
