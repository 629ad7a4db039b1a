package doctor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/findings"
	"github.com/kscope-dev/kscope/internal/profile"
)

func TestCPUIsTheProblem(t *testing.T) {
	tests := []struct {
		name string
		fs   []findings.Finding
		want bool
	}{
		{"requests starved: yes", []findings.Finding{{Severity: findings.Alarm, Check: "slow-requests", Title: "cpu-starved: 40 of the 40 ..."}}, true},
		{"CPU saturated with starved requests: yes", []findings.Finding{{Severity: findings.Alarm, Check: "use", Title: "cpu saturated in 6 of the 7 seconds"}}, true},
		{"starvation only a warning: no", []findings.Finding{{Severity: findings.Warning, Check: "slow-requests", Title: "cpu-starved: 2 of the 2 ..."}}, false},
		{"a frozen file system: no", []findings.Finding{
			{Severity: findings.Alarm, Check: "slow-requests", Title: "lock-wait: 8 of the 12 ..."},
			{Severity: findings.Alarm, Check: "stalls", Title: "the file system on device 7:0 ..."},
			{Severity: findings.Warning, Check: "use", Title: "cpu saturated in 6 of the 7 seconds"}}, false},
		{"a disk saturated: no", []findings.Finding{{Severity: findings.Alarm, Check: "use", Title: "disk loop0 saturated in 5 of the 7 seconds"}}, false},
		{"nothing: no", nil, false},
	}
	for _, tt := range tests {
		if got := cpuIsTheProblem(tt.fs); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestRecordFor(t *testing.T) {
	tests := []struct {
		duration, profile, want time.Duration
	}{
		{time.Minute, 10 * time.Second, 50 * time.Second},
		{12 * time.Second, 4 * time.Second, 8 * time.Second},
		// A profile that would take half the look or more is not kept
		// aside: the recording is the whole duration.
		{10 * time.Second, 5 * time.Second, 10 * time.Second},
		{time.Minute, 0, time.Minute},
	}
	for _, tt := range tests {
		o := Options{Duration: tt.duration, Profile: tt.profile}
		if got := o.recordFor(); got != tt.want {
			t.Errorf("duration %v, profile %v: records %v, want %v", tt.duration, tt.profile, got, tt.want)
		}
	}
}

func TestCheckOut(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	os.Mkdir(full, 0o755)
	os.WriteFile(filepath.Join(full, "x"), nil, 0o644)
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("keep"), 0o644)
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	for _, tt := range []struct {
		path string
		ok   bool
	}{
		{filepath.Join(dir, "new"), true},
		{empty, true},
		{full, false},
		{file, false},
		{"/dev/null", false},
	} {
		err := CheckOut(tt.path)
		var ie *InputError
		if (err == nil) != tt.ok || (err != nil && !errors.As(err, &ie)) {
			t.Errorf("%s: %v, want ok %v (an input error otherwise)", tt.path, err, tt.ok)
		}
	}
}

func TestProfileFinding(t *testing.T) {
	rep := &profile.Report{DurationSec: 6, JVMCPU: 0.1, MachineCPU: 0.97,
		Categories: []profile.Category{{Name: "network", Share: 0.4}, {Name: "request", Share: 0.3}},
		TopSelf:    []profile.Method{{Method: "java.util.HashMap.getNode", Share: 0.1}}}
	f := profileFinding(rep, "/out")
	if !strings.Contains(f.Title, "used 10% of the machine's CPU while everything used 97%") || !strings.Contains(f.Title, "most of the CPU went to other processes") {
		t.Errorf("title %q", f.Title)
	}
	if f.Evidence != "the JVM's CPU: network 40%, request 30%, hottest method java.util.HashMap.getNode (10%)" {
		t.Errorf("evidence %q", f.Evidence)
	}
	rep.JVMCPU = 0.9
	if f := profileFinding(rep, "/out"); strings.Contains(f.Title, "other processes") {
		t.Errorf("a JVM with most of the CPU: %q", f.Title)
	}
}
