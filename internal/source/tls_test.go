package source

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/safefile"
	"github.com/kscope-dev/kscope/internal/wire"
)

// readTLS decodes captures with a key log ("" for none) and returns the
// requests decoded, the footer and the warnings.
func readTLS(t *testing.T, keyLog string, files ...string) (int, Result, string, string) {
	t.Helper()
	n := 0
	res, err := ReadFiles(files, Options{Wire: wire.DefaultConfig(), TLSKeyLog: keyLog}, func(*event.Request) { n++ })
	if err != nil {
		t.Fatal(err)
	}
	return n, res, res.FormatFooter(), strings.Join(res.TLSWarnings(), "\n")
}

// tlsLine is the footer's line about TLS connections.
var tlsLine = regexp.MustCompile(`(\d+) TLS connections: ([^(;]*)`)

// footerKinds reads the footer's TLS line: the connections, and the
// counts of its top-level kinds (the list before the first parenthesis).
func footerKinds(t *testing.T, footer string) (int, map[string]int) {
	t.Helper()
	m := tlsLine.FindStringSubmatch(footer)
	if m == nil {
		t.Fatalf("no TLS line in the footer:\n%s", footer)
	}
	total, _ := strconv.Atoi(m[1])
	kinds := map[string]int{}
	for item := range strings.SplitSeq(m[2], ",") {
		num, kind, _ := strings.Cut(strings.TrimSpace(item), " ")
		n, err := strconv.Atoi(num)
		if err != nil {
			t.Fatalf("footer item %q: %v", item, err)
		}
		kinds[kind] = n
	}
	return total, kinds
}

// TestTLSFooterKindsAddUp: each TLS connection is in one kind of the
// footer, and the kinds add up to the connections: a connection that
// decrypted and then met a damaged record is not also "not decrypted".
func TestTLSFooterKindsAddUp(t *testing.T) {
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		t.Run(tls.VersionName(version), func(t *testing.T) {
			a, b := newTLSConn(t, version), newTLSConn(t, version)
			tests := []struct {
				name  string
				conns []tlsConn
				keys  []byte
				want  map[string]int
			}{
				{"decrypted, then stopped; no secrets", []tlsConn{a.damaged(), b}, a.keyLog,
					map[string]int{"decrypted": 0, "decrypted then stopped": 1, "handshake only": 0, "not decrypted": 1}},
				{"decrypted; decrypted, then stopped", []tlsConn{a, b.damaged()}, append(a.keyLog, b.keyLog...),
					map[string]int{"decrypted": 1, "decrypted then stopped": 1, "handshake only": 0, "not decrypted": 0}},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					path := writeTLSCapture(t, capturePart{conns: tt.conns})
					_, _, footer, _ := readTLS(t, writeKeyLog(t, tt.keys), path)
					total, kinds := footerKinds(t, footer)
					sum := 0
					for _, n := range kinds {
						sum += n
					}
					if total != len(tt.conns) || sum != total || fmt.Sprint(kinds) != fmt.Sprint(tt.want) {
						t.Errorf("%d connections, kinds %v adding up to %d; want %v\n%s", total, kinds, sum, tt.want, footer)
					}
				})
			}
		})
	}
}

// TestTLSSecretsBlocks: a capture's own secrets blocks are used wherever
// they are in the file, after their packets too; a connection without
// secrets says where they were looked for; and a secret of the key log
// that contradicts the capture's is reported, with the one kept.
func TestTLSSecretsBlocks(t *testing.T) {
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		a, other := newTLSConn(t, version), newTLSConn(t, version)
		tests := []struct {
			name      string
			parts     []capturePart
			keyLog    []byte // nil: no --tls-keylog
			decrypted int64
			warnings  []string // each in the warnings
		}{
			{"secrets block before the packets", []capturePart{{secrets: a.keyLog}, {conns: []tlsConn{a}}}, nil, 1, nil},
			{"secrets block after the packets", []capturePart{{conns: []tlsConn{a}}, {secrets: a.keyLog}}, nil, 1, nil},
			{"another session's secrets in the capture", []capturePart{{conns: []tlsConn{a}}, {secrets: other.keyLog}}, nil, 0,
				[]string{"not decrypted (no-keys): no ", " for the session in the capture's secrets blocks"}},
			{"the key log contradicts the capture", []capturePart{{secrets: a.keyLog}, {conns: []tlsConn{a}}}, wrongSecrets(t, a), 1,
				[]string{"TLS secrets conflict with one read before for the same session and label; the first read is kept: ",
					"keys.log:1 differs from the one at ", "tls.pcapng secrets block at byte "}},
			{"the capture contradicts the key log", []capturePart{{conns: []tlsConn{a}}, {secrets: wrongSecrets(t, a)}}, a.keyLog, 0,
				[]string{"TLS secrets conflict with one read before", "keys.log:1 differs from the one at ", "tls.pcapng secrets block at byte ", "which was kept",
					"not decrypted (failed)"}},
		}
		for _, tt := range tests {
			t.Run(tls.VersionName(version)+", "+tt.name, func(t *testing.T) {
				keyLog := ""
				if tt.keyLog != nil {
					keyLog = writeKeyLog(t, tt.keyLog)
				}
				n, res, footer, warnings := readTLS(t, keyLog, writeTLSCapture(t, tt.parts...))
				if res.Wire.TLSDecrypted != tt.decrypted || tt.decrypted == 1 && n != 3 {
					t.Errorf("%d decrypted, %d requests; want %d\n%s\n%s", res.Wire.TLSDecrypted, n, tt.decrypted, footer, warnings)
				}
				for _, w := range tt.warnings {
					if !strings.Contains(warnings, w) {
						t.Errorf("warnings do not say %q:\n%s", w, warnings)
					}
				}
			})
		}
	}
}

// TestKeyLogNotAKeyLog: a key log none of whose lines is a key log line
// is said to be so, with the lines skipped, even when the capture has no
// TLS connection to need it.
func TestKeyLogNotAKeyLog(t *testing.T) {
	// Three lines of an executable's bytes.
	binary := "\x7fELF\x02\x01\x01\x00\n\x00\x00\x00 \x03\x00>\x00\n\xa0\xb0\xc0\n"
	tests := []struct {
		name, content, want string
	}{
		{"binary", binary, "no line of it is a key log line (3 lines skipped, the first at "},
		{"binary without a last newline", binary[:len(binary)-1], "the last line of it has no newline: 3 bytes not read"},
		{"empty", "", "it has no key log lines"},
		{"comments only", "# nothing yet\n", "it has no key log lines"},
		{"a directory without key logs", "", "its *.log files have no key log lines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeKeyLog(t, []byte(tt.content))
			if strings.HasPrefix(tt.name, "a directory") {
				path = t.TempDir()
			}
			_, _, _, warnings := readTLS(t, path, realCapture)
			if !strings.Contains(warnings, "--tls-keylog "+path+": "+tt.want) {
				t.Errorf("warnings %q, want one saying %q", warnings, tt.want)
			}
		})
	}
}

// TestKeyLogStreams: a key log that is a pipe (process substitution) is
// read once and used; a device is refused at once.
func TestKeyLogStreams(t *testing.T) {
	a := newTLSConn(t, tls.VersionTLS13)
	capturePath := writeTLSCapture(t, capturePart{conns: []tlsConn{a}})
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() { w.Write(a.keyLog); w.Close() }()
	n, res, footer, _ := readTLS(t, fmt.Sprintf("/proc/self/fd/%d", r.Fd()), capturePath)
	if res.Wire.TLSDecrypted != 1 || n != 3 {
		t.Errorf("key log from a pipe: %d decrypted, %d requests\n%s", res.Wire.TLSDecrypted, n, footer)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ReadFiles([]string{capturePath}, Options{Wire: wire.DefaultConfig(), TLSKeyLog: "/dev/zero"}, func(*event.Request) {})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, safefile.ErrNotRegular) || !strings.Contains(err.Error(), "--tls-keylog") {
			t.Errorf("key log /dev/zero: error %v, want a refusal", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("key log /dev/zero: still reading after 20s")
	}
}

// TestCaptureStreamLateSecrets: a pcapng read as a stream whose secrets
// block comes after the packets it is for cannot use it: the warnings say
// so, and why.
func TestCaptureStreamLateSecrets(t *testing.T) {
	a := newTLSConn(t, tls.VersionTLS13)
	data, err := os.ReadFile(writeTLSCapture(t, capturePart{conns: []tlsConn{a}}, capturePart{secrets: a.keyLog}))
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() { w.Write(data); w.Close() }()
	_, res, footer, warnings := readTLS(t, "", fmt.Sprintf("/proc/self/fd/%d", r.Fd()))
	want := "4 TLS secrets came in secrets blocks after packets of a capture read as a stream"
	if res.Wire.TLSNoKeys != 1 || !strings.Contains(warnings, want) {
		t.Errorf("warnings %q, want %q\n%s", warnings, want, footer)
	}
}
