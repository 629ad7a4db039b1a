//go:build updatetestdata

package jfr

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestJVMTestdata rewrites testdata/contend.jfr.gz and the jfr tool's
// view of it, testdata/contend.want.jsonl: `go test -tags updatetestdata
// -run TestJVMTestdata ./internal/jfr`. Not part of the normal run.
func TestJVMTestdata(t *testing.T) {
	dir := t.TempDir()
	jfc := filepath.Join(dir, "kscope.jfc")
	if err := os.WriteFile(jfc, Settings(time.Millisecond), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "contend.jfr")
	j := startJVM(t, dir, []string{"-XX:StartFlightRecording=filename=" + path + ",settings=" + jfc}, 3, 50, 1000)
	j.send("go")
	j.expect("done", 60*time.Second)
	j.send("exit")
	j.wait()
	want, ok := jfrPrint(t, path)
	if !ok {
		t.Fatal("the JDK's jfr tool is needed to write contend.want.jsonl")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join("testdata", "contend.jfr.gz"))
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
	sortLockWaits(want)
	var out strings.Builder
	for _, l := range want {
		b, _ := json.Marshal(l)
		out.Write(b)
		out.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join("testdata", "contend.want.jsonl"), []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes (%d lock waits) written to testdata", len(data), len(want))
}
