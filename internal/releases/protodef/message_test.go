package protodef

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseMessageRealDefinitions(t *testing.T) {
	cases := []struct {
		file      string
		isRequest bool
		want      API
	}{
		// 4.1 made v3 the baseline (KIP-896) and added v13.
		{"ProduceRequest-4.1.2.json", true, API{Key: 0, Name: "ProduceRequest", Min: 3, Max: 13, Broker: true}},
		// 4.0.0 removed JoinGroup v0-v1; 4.0.1 put them back (KAFKA-19444).
		{"JoinGroupRequest-4.0.0.json", true, API{Key: 11, Name: "JoinGroupRequest", Min: 2, Max: 9, Broker: true}},
		// Removed in 4.0, and without listeners.
		{"ControlledShutdownRequest-4.1.2.json", true, API{Key: 7, Name: "ControlledShutdownRequest", Removed: true}},
		// v10 is unstable in 4.1.
		{"OffsetCommitRequest-4.1.2.json", true, API{Key: 8, Name: "OffsetCommitRequest", Min: 2, Max: 10, LatestUnstable: true, Broker: true}},
		// Controllers only.
		{"BrokerHeartbeatRequest-4.1.2.json", true, API{Key: 63, Name: "BrokerHeartbeatRequest", Min: 0, Max: 1}},
		// A ZooKeeper-mode broker's inter-broker API: "zkBroker" is not "broker".
		{"LeaderAndIsrRequest-3.9.2.json", true, API{Key: 4, Name: "LeaderAndIsrRequest", Min: 0, Max: 7}},
		{"ProduceResponse-4.1.2.json", false, API{}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			got, isRequest, err := ParseMessage(data)
			if err != nil {
				t.Fatalf("ParseMessage: %v", err)
			}
			if isRequest != c.isRequest || got != c.want {
				t.Errorf("got %+v request=%t, want %+v request=%t", got, isRequest, c.want, c.isRequest)
			}
		})
	}
}

func TestParseMessageRefuses(t *testing.T) {
	cases := []struct {
		name, json, wantErr string
	}{
		{"no apiKey", `{"type": "request", "validVersions": "0"}`, "without apiKey"},
		{"negative apiKey", `{"apiKey": -1, "type": "request", "validVersions": "0"}`, "line 1, column 13 (byte 12): apiKey -1 is out of range"},
		{"apiKey past int16", "{\n  \"apiKey\": 32768,\n  \"type\": \"request\", \"validVersions\": \"0\"}", "line 2, column 17 (byte 18): apiKey 32768 is out of range"},
		{"no validVersions", `{"apiKey": 1, "type": "request"}`, "apiKey 1: a request definition without validVersions"},
		{"open range", `{"apiKey": 1, "type": "request", "validVersions": "3+"}`, `validVersions "3+": "3+" is not a version number`},
		{"empty range", "// c\n{\"validVersions\": \"0\", \"fields\": [{\"validVersions\": \"1\"}],\n \"apiKey\": 1, \"type\": \"request\",\n \"validVersions\": \"5-3\"}", "line 4, column 23 (byte 119): validVersions \"5-3\": the range is empty"},
		{"apiKey a string", "{\n  \"apiKey\": \"0\",\n  \"type\": \"request\"}", "line 2, column 15 (byte 16)"},
		{"syntax error after a comment", "// c\n{\n  \"apiKey\": 0,,\n}", "line 3, column 15 (byte 21)"},
		{"unterminated block comment", "{ /* x", "line 1, column 3 (byte 2): unterminated /* comment"},
		{"unterminated string", "{\"apiKey", "line 1, column 2 (byte 1): unterminated string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ParseMessage([]byte(c.json))
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
			}
		})
	}
}

func TestParseVersions(t *testing.T) {
	cases := []struct {
		in      string
		lo, hi  int16
		removed bool
		ok      bool
	}{
		{"none", 0, 0, true, true},
		{"0", 0, 0, false, true},
		{"3-12", 3, 12, false, true},
		{"0-32767", 0, 32767, false, true},
		{"0-32768", 0, 0, false, false},
		{"+3", 0, 0, false, false},
		{"-3", 0, 0, false, false},
		{"3-", 0, 0, false, false},
		{"3-4-5", 0, 0, false, false},
		{"", 0, 0, false, false},
		{"None", 0, 0, false, false},
		{" 3", 0, 0, false, false},
	}
	for _, c := range cases {
		lo, hi, removed, err := ParseVersions(c.in)
		if (err == nil) != c.ok || lo != c.lo || hi != c.hi || removed != c.removed {
			t.Errorf("ParseVersions(%q) = %d, %d, %t, %v; want %d, %d, %t, ok=%t", c.in, lo, hi, removed, err, c.lo, c.hi, c.removed, c.ok)
		}
	}
}

func TestStripComments(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"a": 1}`, `{"a": 1}`},
		{"// x\n{}", "    \n{}"},
		{"{} // x", "{}     "},
		{`{"u": "http://x/*y*/"}`, `{"u": "http://x/*y*/"}`},
		{`{"q": "a\"//b"} // c`, `{"q": "a\"//b"}     `},
		{"{/* a\nb */}", "{    \n    }"},
		{"{/**/}", "{    }"},
	}
	for _, c := range cases {
		got, err := StripComments([]byte(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("StripComments(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// FuzzParseMessage: no input panics, what is accepted is a sane range, and
// stripping comments keeps every byte's position.
func FuzzParseMessage(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds in testdata: %v", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"apiKey": 1, "type": "request", "validVersions": "3-12", "latestVersionUnstable": true}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if clean, err := StripComments(data); err == nil {
			if len(clean) != len(data) || bytes.Count(clean, []byte("\n")) != bytes.Count(data, []byte("\n")) {
				t.Fatalf("StripComments moved bytes: %q -> %q", data, clean)
			}
		}
		api, isRequest, err := ParseMessage(data)
		if err != nil || !isRequest {
			return
		}
		if api.Key < 0 || api.Min < 0 || api.Max < api.Min || (api.Removed && (api.Min != 0 || api.Max != 0)) {
			t.Fatalf("ParseMessage(%q) = %+v", data, api)
		}
	})
}
