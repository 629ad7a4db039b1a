//go:build updatetestdata

package jfr

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/testkit/traffic"
)

// TestPausesTestdataGen rewrites testdata/pauses.jfr.gz (a broker under
// 200,000 records of 1,000 bytes, then jcmd GC.run three times) and the
// jfr tool's view of its pause events, testdata/pauses.want.jsonl:
// `go test -tags updatetestdata -run TestPausesTestdataGen ./internal/jfr`.
func TestPausesTestdataGen(t *testing.T) {
	// Lock waits of a minute or more: none, which keeps the file small.
	path, _ := recordPauses(t, time.Minute, func(ctx context.Context, b *lab.Broker) error {
		return traffic.JavaProducerPerf(ctx, b.LibsDir(), b.Addr(), "pauses", 200_000, 1000, "none")
	})
	want, ok := jfrPrintPauses(t, path)
	if !ok {
		t.Fatal("the JDK's jfr tool is needed to write pauses.want.jsonl")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join("testdata", "pauses.jfr.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, p := range want {
		b, _ := json.Marshal(p)
		out.Write(b)
		out.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join("testdata", "pauses.want.jsonl"), []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes (%d pause events) written to testdata", len(data), len(want))
}
