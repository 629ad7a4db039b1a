// Package cgroupcpu samples the CPU-quota throttling of a process's
// cgroups: the cpu.stat of its cgroup and of every ancestor (a quota set
// on a parent throttles all its children), under cgroup v1's cpu
// controller and under cgroup v2, as event.CPUThrottle values for explain's
// cpu-starved cause. It reads /proc and /sys/fs/cgroup only.
//
// A cgroup's nr_throttled and throttled time only grow; a sample that saw
// them grow since the previous one becomes one CPUThrottle spanning the two
// samples. The cgroups are looked up again at every sample, so a process
// moved to another cgroup (systemd, a container runtime, a test) is
// followed.
package cgroupcpu

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/hostinfo"
)

// DefaultInterval is Run's sampling interval when it is given 0: short
// enough to place throttling within a slow request's time, long enough to
// cost nothing (a few small file reads per sample).
const DefaultInterval = 100 * time.Millisecond

// maxCgroups bounds the cgroups followed (a path's depth times the
// hierarchies): /proc/PID/cgroup is the kernel's, but a deep tree must not
// grow the sampler's memory without end.
const maxCgroups = 64

// Stats counts what Run did.
type Stats struct {
	Samples   int64    // samples taken
	Throttles int64    // CPUThrottle events emitted
	Cgroups   []string // the cgroups watched at the last sample ("v1:/a/b", "v2:/a")
	Errors    int64    // samples that could not read a cpu.stat (the cgroup went away)
}

// counter is one cgroup's throttling counters.
type counter struct {
	throttled int64 // nr_throttled
	timeNs    int64 // throttled_time (v1, ns) or throttled_usec*1000 (v2)
}

// Run samples the throttling of process pid's cgroups every interval
// until ctx is done, calling fn for each growth seen. It returns an error
// at once when the process's cgroups cannot be found (no cpu controller
// mounted, no such process); later read errors are counted in Stats. An
// error from fn stops Run and is returned.
func Run(ctx context.Context, pid int, interval time.Duration, fn func(*event.CPUThrottle) error) (Stats, error) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	s := newSampler(pid, "/proc", hostinfo.Mounts)
	var st Stats
	if _, err := s.sample(time.Now(), &st, fn); err != nil {
		return st, err
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			// One last sample, so throttling just before the end counts.
			_, err := s.sample(time.Now(), &st, fn)
			var cb *callbackError
			if errors.As(err, &cb) {
				return st, cb.err
			}
			return st, nil
		case now := <-tick.C:
			if _, err := s.sample(now, &st, fn); err != nil {
				var cb *callbackError
				if errors.As(err, &cb) {
					return st, cb.err
				}
				st.Errors++
			}
		}
	}
}

type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }

// sampler keeps the previous counters per cgroup.
type sampler struct {
	pid    int
	proc   string // /proc, or a test's directory
	mounts func(pid int) ([]hostinfo.Mount, error)
	prev   map[string]counter
	last   time.Time
}

func newSampler(pid int, proc string, mounts func(int) ([]hostinfo.Mount, error)) *sampler {
	return &sampler{pid: pid, proc: proc, mounts: mounts, prev: make(map[string]counter)}
}

// sample reads every cgroup of the process once and emits the growth since
// the previous sample. It returns how many cgroups it read.
func (s *sampler) sample(now time.Time, st *Stats, fn func(*event.CPUThrottle) error) (int, error) {
	groups, err := s.cgroups()
	if err != nil {
		return 0, err
	}
	st.Samples++
	st.Cgroups = st.Cgroups[:0]
	seen := make(map[string]counter, len(groups))
	var readErr error
	for _, g := range groups {
		c, err := readCPUStat(g.statPath, g.v2)
		if err != nil {
			readErr = err
			continue
		}
		st.Cgroups = append(st.Cgroups, g.key)
		seen[g.key] = c
		p, ok := s.prev[g.key]
		if !ok || s.last.IsZero() || c.throttled <= p.throttled {
			continue
		}
		th := &event.CPUThrottle{
			Kind:        event.KindCPUThrottle,
			Start:       s.last,
			End:         now,
			Cgroup:      g.path,
			Periods:     c.throttled - p.throttled,
			ThrottledMs: float64(max(c.timeNs-p.timeNs, 0)) / 1e6,
		}
		st.Throttles++
		if err := fn(th); err != nil {
			return len(groups), &callbackError{err}
		}
	}
	s.prev = seen
	s.last = now
	if readErr != nil && len(seen) == 0 {
		return 0, readErr
	}
	return len(groups), nil
}

// group is one cgroup whose cpu.stat is sampled.
type group struct {
	key      string // "v1:/a/b" or "v2:/a/b": unique across hierarchies
	path     string // the cgroup's path in its hierarchy
	statPath string
	v2       bool
}

// cgroups lists the process's cgroups with a cpu.stat, each with its
// ancestors up to its hierarchy's root.
func (s *sampler) cgroups() ([]group, error) {
	f, err := os.Open(filepath.Join(s.proc, strconv.Itoa(s.pid), "cgroup"))
	if err != nil {
		return nil, fmt.Errorf("cgroupcpu: %w", err)
	}
	defer f.Close()
	v1, v2, err := parseProcCgroup(f)
	if err != nil {
		return nil, fmt.Errorf("cgroupcpu: %s/%d/cgroup: %w", s.proc, s.pid, err)
	}
	mounts, err := s.mounts(0)
	if err != nil {
		return nil, fmt.Errorf("cgroupcpu: mounts: %w", err)
	}
	var out []group
	for _, m := range mounts {
		var rel string
		isV2 := false
		switch {
		case m.FSType == "cgroup2" && v2 != "":
			rel, isV2 = v2, true
		case m.FSType == "cgroup" && v1 != "" && hasOption(m.SuperOptions, "cpu"):
			rel = v1
		default:
			continue
		}
		for p := rel; ; p = filepath.Dir(p) {
			stat := filepath.Join(m.MountPoint, p, "cpu.stat")
			if _, err := os.Stat(stat); err == nil && len(out) < maxCgroups {
				key := "v1:" + p
				if isV2 {
					key = "v2:" + p
				}
				out = append(out, group{key: key, path: p, statPath: stat, v2: isV2})
			}
			if p == "/" || p == "." {
				break
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("cgroupcpu: process %d: no cpu.stat under a mounted cpu controller (v1 %q, v2 %q)", s.pid, v1, v2)
	}
	return dedupe(out), nil
}

// dedupe drops a mount of the same hierarchy seen twice (bind mounts).
func dedupe(gs []group) []group {
	seen := make(map[string]bool, len(gs))
	out := gs[:0]
	for _, g := range gs {
		if !seen[g.key] {
			seen[g.key] = true
			out = append(out, g)
		}
	}
	return out
}

// parseProcCgroup reads /proc/PID/cgroup: "ID:CONTROLLERS:PATH" lines. It
// returns the path in the v1 hierarchy holding the cpu controller and the
// v2 path ("0::PATH"), either empty when absent.
func parseProcCgroup(r io.Reader) (v1, v2 string, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10)
	for sc.Scan() {
		id, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		ctrls, path, ok := strings.Cut(rest, ":")
		if !ok || !strings.HasPrefix(path, "/") {
			continue
		}
		path = filepath.Clean(path)
		switch {
		case id == "0" && ctrls == "":
			v2 = path
		case hasOption(ctrls, "cpu"):
			v1 = path
		}
	}
	return v1, v2, sc.Err()
}

// hasOption reports whether the comma-separated list holds opt exactly.
func hasOption(list, opt string) bool {
	for o := range strings.SplitSeq(list, ",") {
		if o == opt {
			return true
		}
	}
	return false
}

// readCPUStat reads the throttling counters of one cpu.stat.
func readCPUStat(path string, v2 bool) (counter, error) {
	f, err := os.Open(path)
	if err != nil {
		return counter{}, err
	}
	defer f.Close()
	return parseCPUStat(io.LimitReader(f, 64<<10), v2)
}

// parseCPUStat parses "key value" lines: nr_throttled, and throttled_time
// (v1, nanoseconds) or throttled_usec (v2).
func parseCPUStat(r io.Reader, v2 bool) (counter, error) {
	var c counter
	found := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		switch {
		case k == "nr_throttled":
			c.throttled, found = n, true
		case k == "throttled_time" && !v2:
			c.timeNs = n
		case k == "throttled_usec" && v2:
			c.timeNs = n * 1000
		}
	}
	if err := sc.Err(); err != nil {
		return c, err
	}
	if !found {
		return c, errors.New("no nr_throttled")
	}
	return c, nil
}
