package protodef

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entry is one file of a test jar.
type entry struct {
	name string
	data []byte
}

// buildJar makes a jar (a zip) of entries.
func buildJar(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, e := range entries {
		w, err := zw.Create(e.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func testdataEntry(t testing.TB, file string) entry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	name := strings.SplitN(file, "-", 2)[0] + ".json"
	return entry{messageDir + "/" + name, data}
}

func versionEntry(v string) entry {
	return entry{versionFile, []byte("commitId=0123\nversion=" + v + "\n")}
}

func TestParseJar(t *testing.T) {
	produce := testdataEntry(t, "ProduceRequest-4.1.2.json")
	join := testdataEntry(t, "JoinGroupRequest-4.0.0.json")
	response := testdataEntry(t, "ProduceResponse-4.1.2.json")
	data := buildJar(t, versionEntry("4.1.2"), join, response, produce,
		// Not the message dir: ignored.
		entry{"common/message/sub/XRequest.json", []byte("not json")},
		entry{"x/common/message/YRequest.json", []byte("not json")},
	)
	jar, err := ParseJar(data)
	if err != nil {
		t.Fatal(err)
	}
	if jar.Version != "4.1.2" || len(jar.SHA256) != 64 {
		t.Errorf("version %q sha256 %q", jar.Version, jar.SHA256)
	}
	var keys []int16
	for _, a := range jar.APIs {
		keys = append(keys, a.Key)
	}
	if len(keys) != 2 || keys[0] != 0 || keys[1] != 11 {
		t.Errorf("keys %v, want [0 11] (sorted, responses left out)", keys)
	}
}

func TestParseJarRefuses(t *testing.T) {
	produce := testdataEntry(t, "ProduceRequest-4.1.2.json")
	huge := entry{messageDir + "/HugeRequest.json", bytes.Repeat([]byte(" "), maxMessageBytes+1)}
	cases := []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{"not a zip", []byte("PK\x03\x04 garbage"), "not a jar"},
		{"no version file", buildJar(t, produce), versionFile},
		{"no version line", buildJar(t, entry{versionFile, []byte("commitId=1\n")}, produce), "no version= line"},
		{"no request definitions", buildJar(t, versionEntry("4.0.2")), "no request definitions"},
		{"a key defined twice", buildJar(t, versionEntry("4.0.2"), produce,
			entry{messageDir + "/OtherRequest.json", []byte(`{"apiKey": 0, "type": "request", "validVersions": "0"}`)}),
			"apiKey 0 is also defined by common/message/ProduceRequest.json"},
		{"a definition over the limit", buildJar(t, versionEntry("4.0.2"), huge), "HugeRequest.json: larger than the limit"},
		{"a bad definition names its file and line", buildJar(t, versionEntry("4.0.2"),
			entry{messageDir + "/BadRequest.json", []byte("{\n\"apiKey\": 1,\n\"type\": \"request\",\n\"validVersions\": \"x\"}")}),
			`common/message/BadRequest.json: line 4, column 20 (byte 53): validVersions "x"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseJar(c.data)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
			}
		})
	}
}

func TestReadJarRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{dir, "/dev/zero"} {
		if _, err := ReadJar(path); err == nil {
			t.Errorf("ReadJar(%s) read it", path)
		}
	}
}

// FuzzParseJar: no jar panics or reads without bound, and what is accepted
// has sorted, distinct keys.
func FuzzParseJar(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds in testdata: %v", err)
	}
	entries := []entry{versionEntry("4.1.2")}
	for _, file := range files {
		entries = append(entries, testdataEntry(f, filepath.Base(file)))
	}
	f.Add(buildJar(f, entries...))
	f.Add(buildJar(f, entries[:2]...))
	f.Fuzz(func(t *testing.T, data []byte) {
		jar, err := ParseJar(data)
		if err != nil {
			return
		}
		for i := 1; i < len(jar.APIs); i++ {
			if jar.APIs[i-1].Key >= jar.APIs[i].Key {
				t.Fatalf("keys not sorted and distinct: %+v", jar.APIs)
			}
		}
	})
}
