package cgroupcpu

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/hostinfo"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

func TestParseProcCgroup(t *testing.T) {
	for _, tc := range []struct {
		name, in, v1, v2 string
	}{
		{"v1 and v2", "9:name=systemd:/\n2:cpuacct:/\n1:cpu:/kafka\n0::/\n", "/kafka", "/"},
		{"joined controllers", "4:cpu,cpuacct:/system.slice/kafka.service\n", "/system.slice/kafka.service", ""},
		{"v2 only", "0::/system.slice/kafka.service\n", "", "/system.slice/kafka.service"},
		{"cpuset is not cpu", "3:cpuset:/x\n", "", ""},
		{"garbage", "no colons\n1:cpu\n1:cpu:relative\n", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v1, v2, err := parseProcCgroup(strings.NewReader(tc.in))
			if err != nil || v1 != tc.v1 || v2 != tc.v2 {
				t.Fatalf("got %q %q %v, want %q %q", v1, v2, err, tc.v1, tc.v2)
			}
		})
	}
}

func TestParseCPUStat(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		v2   bool
		want counter
		ok   bool
	}{
		{"v1", "nr_periods 10\nnr_throttled 4\nthrottled_time 123456789\n", false, counter{4, 123456789}, true},
		{"v2", "usage_usec 5\nnr_periods 10\nnr_throttled 3\nthrottled_usec 2500\n", true, counter{3, 2500000}, true},
		{"v2 root has no quota counters", "usage_usec 5\nuser_usec 3\n", true, counter{}, false},
		{"bad numbers skipped", "nr_throttled x\nnr_throttled 2\n", false, counter{2, 0}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseCPUStat(strings.NewReader(tc.in), tc.v2)
			if (err == nil) != tc.ok || (tc.ok && c != tc.want) {
				t.Fatalf("got %+v %v, want %+v ok=%v", c, err, tc.want, tc.ok)
			}
		})
	}
}

// TestSamplerGrowth runs the sampler over a made-up /proc and cgroup tree:
// growth of a parent's counters is reported for the parent, no growth is
// not reported, and a move to another cgroup is followed.
func TestSamplerGrowth(t *testing.T) {
	dir := t.TempDir()
	proc := filepath.Join(dir, "proc")
	v1 := filepath.Join(dir, "cpu")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(proc, "42"), 0o755))
	for _, d := range []string{"", "kafka", "kafka/broker", "other"} {
		must(os.MkdirAll(filepath.Join(v1, d), 0o755))
	}
	setCgroup := func(p string) {
		must(os.WriteFile(filepath.Join(proc, "42", "cgroup"), []byte("1:cpu,cpuacct:"+p+"\n0::/\n"), 0o644))
	}
	stat := func(d string, n, ns int64) {
		must(os.WriteFile(filepath.Join(v1, d, "cpu.stat"), []byte("nr_periods 100\nnr_throttled "+strconv.FormatInt(n, 10)+"\nthrottled_time "+strconv.FormatInt(ns, 10)+"\n"), 0o644))
	}
	stat("", 0, 0)
	stat("kafka", 5, 1e6)
	stat("kafka/broker", 0, 0)
	stat("other", 0, 0)
	setCgroup("/kafka/broker")
	mounts := func(int) ([]hostinfo.Mount, error) {
		return []hostinfo.Mount{{FSType: "cgroup", MountPoint: v1, SuperOptions: "rw,cpu,cpuacct"}}, nil
	}
	s := newSampler(42, proc, mounts)
	var got []event.CPUThrottle
	fn := func(th *event.CPUThrottle) error { got = append(got, *th); return nil }
	var st Stats
	t0 := time.Unix(1000, 0)
	if _, err := s.sample(t0, &st, fn); err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 || len(st.Cgroups) != 3 {
		t.Fatalf("first sample: %v, cgroups %v", got, st.Cgroups)
	}
	stat("kafka", 8, 31e6) // the parent's quota bit
	if _, err := s.sample(t0.Add(100*time.Millisecond), &st, fn); err != nil {
		t.Fatal(err)
	}
	want := event.CPUThrottle{Kind: event.KindCPUThrottle, Start: t0, End: t0.Add(100 * time.Millisecond), Cgroup: "/kafka", Periods: 3, ThrottledMs: 30}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	setCgroup("/other")
	stat("other", 2, 5e6) // new to the sampler: a baseline, not growth
	if _, err := s.sample(t0.Add(200*time.Millisecond), &st, fn); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(st.Cgroups) != 2 {
		t.Fatalf("after the move: %+v, cgroups %v", got, st.Cgroups)
	}
	stat("other", 3, 6e6)
	if _, err := s.sample(t0.Add(300*time.Millisecond), &st, fn); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].Cgroup != "/other" || got[1].Periods != 1 || got[1].ThrottledMs != 1 {
		t.Fatalf("after growth in the new cgroup: %+v", got)
	}
}

// TestRunThrottled puts a busy process into a cgroup v1 cpu cgroup of this
// kernel limited to a tenth of a CPU: Run must report its throttling, with
// the cgroup's path and about 90% of the time throttled; with no quota
// (the control) it must report none.
func TestRunThrottled(t *testing.T) {
	labtest.RequireRoot(t)
	root := "/sys/fs/cgroup/cpu"
	if _, err := os.Stat(filepath.Join(root, "cpu.cfs_quota_us")); err != nil {
		labtest.Unavailable(t, "no cgroup v1 cpu controller at %s: %v", root, err)
	}
	for _, tc := range []struct {
		name  string
		quota string
	}{{"quota", "10000"}, {"control", "-1"}} {
		t.Run(tc.name, func(t *testing.T) {
			name := "kscope-cgroupcpu-" + strconv.Itoa(os.Getpid()) + "-" + tc.name
			cg := filepath.Join(root, name)
			if err := os.Mkdir(cg, 0o755); err != nil {
				t.Fatal(err)
			}
			busy := exec.Command("sh", "-c", "while :; do :; done")
			if err := busy.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				busy.Process.Kill()
				busy.Wait()
				if err := os.Remove(cg); err != nil {
					t.Errorf("cgroup %s left behind: %v", cg, err)
				}
			})
			write := func(file, v string) {
				t.Helper()
				if err := os.WriteFile(filepath.Join(cg, file), []byte(v), 0o644); err != nil {
					t.Fatalf("%s: %v", file, err)
				}
			}
			write("cpu.cfs_quota_us", tc.quota)
			write("cgroup.procs", strconv.Itoa(busy.Process.Pid))
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			var got []event.CPUThrottle
			st, err := Run(ctx, busy.Process.Pid, 100*time.Millisecond, func(th *event.CPUThrottle) error {
				got = append(got, *th)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			var ms float64
			for _, th := range got {
				if th.Cgroup != "/"+name {
					t.Errorf("throttling of %s, want only /%s", th.Cgroup, name)
				}
				ms += th.ThrottledMs
			}
			t.Logf("%d samples of %v, %d throttle events, %.0f ms throttled", st.Samples, st.Cgroups, len(got), ms)
			if tc.quota == "-1" {
				if len(got) != 0 {
					t.Fatalf("control: %d throttle events, want none", len(got))
				}
				return
			}
			// 1.5 s at a tenth of a CPU: ~1.35 s throttled; allow for the
			// first sample's baseline and scheduling.
			if len(got) < 8 || ms < 900 {
				t.Fatalf("%d throttle events, %.0f ms throttled; want >= 8 and >= 900 ms", len(got), ms)
			}
		})
	}
}
