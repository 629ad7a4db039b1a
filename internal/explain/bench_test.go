package explain_test

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/recording"
	"github.com/kscope-dev/kscope/internal/testkit/explaintest"
)

var benchRec struct {
	once sync.Once
	dir  string
	err  error
}

// BenchmarkExplainMillion explains a recording of a million produce
// requests and a million writes (10 000 slow), with 100 000 run-queue
// delays, the connections' network threads and JVM pauses: the goal is
// under 10 s and under 1 GB. It reports the peak heap in use.
func BenchmarkExplainMillion(b *testing.B) {
	benchRec.once.Do(func() {
		benchRec.dir, benchRec.err = os.MkdirTemp("", "kscope-explain-bench-")
		if benchRec.err == nil {
			benchRec.err = explaintest.GenerateRecording(benchRec.dir, 1_000_000)
		}
	})
	if benchRec.err != nil {
		b.Fatal(benchRec.err)
	}
	b.Cleanup(func() {}) // the directory is reused by -count runs; removed by the OS's tmp cleaning
	dir := benchRec.dir
	var peak uint64
	done := make(chan struct{})
	go func() {
		var ms runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
		}
	}()
	for b.Loop() {
		// As kscope explain does it: the index loads while the
		// requests are scanned.
		var scan *explain.Scan
		var scanErr error
		scanned := make(chan struct{})
		go func() {
			defer close(scanned)
			scan, scanErr = explain.ScanRequests(filepath.Join(dir, recording.RequestsFile), nil)
		}()
		idx := explain.NewIndex()
		if err := explain.LoadIO(idx, filepath.Join(dir, recording.WritesFile), filepath.Join(dir, recording.JournalFile),
			filepath.Join(dir, recording.SchedFile)); err != nil {
			b.Fatal(err)
		}
		<-scanned
		if scanErr != nil {
			b.Fatal(scanErr)
		}
		e := explain.New(explain.Config{}, idx, nil)
		var slow int
		sum, err := e.Run(scan, explain.RunOptions{Top: 10}, func(*explain.Finding) error { slow++; return nil })
		if err != nil {
			b.Fatal(err)
		}
		if sum.ProduceRequests != 1_000_000 || slow < 9000 {
			b.Fatalf("%d requests, %d slow", sum.ProduceRequests, slow)
		}
		if c := sum.Causes; c[0].Requests+c[1].Requests < 9000 {
			b.Fatalf("causes %+v", sum.Causes)
		}
	}
	close(done)
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}
