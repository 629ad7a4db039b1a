package cli

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kscope-dev/kscope/internal/profile"
)

// busyJFR unpacks the jfr package's recording of Busy.java (threads in
// zlib, AES-GCM, MD5, CRC32C and plain Java; a contended lock) into dir.
func busyJFR(t *testing.T, dir string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "jfr", "testdata", "busy.jfr.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "busy.jfr")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProfileCommand(t *testing.T) {
	dir := t.TempDir()
	rec := busyJFR(t, dir)
	data, _ := os.ReadFile(rec)
	damaged := filepath.Join(dir, "damaged.jfr")
	os.WriteFile(damaged, append(bytes.Clone(data), data[:200]...), 0o644) // a second chunk cut short
	notJFR := filepath.Join(dir, "notes.txt")
	os.WriteFile(notJFR, []byte("not a recording"), 0o644)

	for _, c := range []struct {
		name string
		args []string
		code int
		out  []string // in stdout
		err  []string // in stderr
	}{
		{"table", []string{"--jfr", rec}, ExitOK, []string{"CPU by category", "compression/gzip", "java.util.zip.Deflater.deflateBytesBytes", "Busy$Lock (monitor) in Busy.lambda$main$", "Hints"}, nil},
		{"top", []string{"--jfr", rec, "--top", "2", "-q"}, ExitOK, []string{"Top stacks"}, nil},
		{"damaged", []string{"--jfr", damaged}, ExitOK, []string{"CPU by category"}, []string{"WARNING", "chunk 2", "reporting the 1 chunks before the damage"}},
		{"format", []string{"--jfr", rec, "--format", "xml"}, ExitBadInput, nil, []string{`"xml" for "--format"`}},
		{"top 0", []string{"--jfr", rec, "--top", "0"}, ExitBadInput, nil, []string{`"0" for "--top"`}},
		{"flame extension", []string{"--jfr", rec, "--flame", "f.png"}, ExitBadInput, nil, []string{"FILE.svg or FILE.html"}},
		{"jfr and out", []string{"--jfr", rec, "--out", "x.jfr"}, ExitBadInput, nil, []string{"give one of them"}},
		{"jfr and duration", []string{"--jfr", rec, "--duration", "5s"}, ExitBadInput, nil, []string{"not with --jfr"}},
		{"missing file", []string{"--jfr", filepath.Join(dir, "nope.jfr")}, ExitBadInput, nil, []string{"no such file"}},
		{"not a recording", []string{"--jfr", notJFR}, ExitBadInput, nil, []string{"not a JFR file"}},
		{"bad pid", []string{"--pid", "broker"}, ExitBadInput, nil, []string{`"broker" for "--pid"`}},
		{"negative duration", []string{"--pid", "1", "--duration", "-1s"}, ExitBadInput, nil, []string{"must be positive"}},
		{"arguments", []string{rec}, ExitBadInput, nil, []string{"a recording goes after --jfr"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := run(t, append([]string{"profile"}, c.args...)...)
			if code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, stderr)
			}
			for _, w := range c.out {
				if !strings.Contains(stdout, w) {
					t.Errorf("no %q in stdout:\n%s", w, stdout)
				}
			}
			for _, w := range c.err {
				if !strings.Contains(stderr, w) {
					t.Errorf("no %q in stderr:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestProfileJSONAndFlame(t *testing.T) {
	dir := t.TempDir()
	rec := busyJFR(t, dir)
	svg, page := filepath.Join(dir, "flame.svg"), filepath.Join(dir, "flame.html")
	code, stdout, stderr := run(t, "profile", "--jfr", rec, "--format", "json", "--flame", svg)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep profile.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %.500s", err, stdout)
	}
	if rep.Method != "thread-cpu" || len(rep.Categories) == 0 || len(rep.Monitors) == 0 || rep.Samples.Busy == 0 {
		t.Errorf("report %+v", rep)
	}
	if !strings.Contains(stderr, "flame graph in "+svg) {
		t.Errorf("stderr %q", stderr)
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		if _, err := d.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("flame.svg: %v", err)
		}
	}
	if code, _, stderr := run(t, "profile", "--jfr", rec, "-q", "--flame", page); code != ExitOK || stderr != "" {
		t.Fatalf("exit %d: %q", code, stderr)
	}
	if b, err := os.ReadFile(page); err != nil || !bytes.HasPrefix(b, []byte("<!DOCTYPE html>")) || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("flame.html: %v %.200s", err, b)
	}
}
