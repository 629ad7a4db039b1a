package use

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A cgroup I/O limit does not show in /proc/diskstats: the block layer
// holds a throttled bio back before it becomes a request, so the device
// looks idle (low util, short await) while the writer waits. Such a
// device is saturated for the cgroup all the same, so the sampler finds
// the limits set on the devices it watches and the cgroup's rate against
// each:
//
//	cgroup v1: blkio.throttle.{read,write}_{bps,iops}_device, used from
//	           blkio.throttle.io_service_bytes and io_serviced
//	cgroup v2: io.max (rbps= wbps= riops= wiops=), used from io.stat
//
// Both count I/O when the cgroup submits it, before the throttle.

// throttleKey is one limit of one cgroup on one device.
type throttleKey struct {
	cgroup string // path below the hierarchy's mount, "/" for the root
	dev    string // major:minor
	limit  string // rbps, wbps, riops, wiops
}

// throttleVal is the limit and the cgroup's counter (bytes or I/Os).
type throttleVal struct {
	max   uint64
	count uint64
}

// Bounds on the cgroup walk, so that a host with very many cgroups costs
// a bounded time per sample.
const (
	maxCgroupDirs  = 4096
	maxCgroupDepth = 12
)

// readThrottles returns the limits on devs (major:minor) in the cgroup
// hierarchies under sysRoot/fs/cgroup, with the cgroups' counters.
func readThrottles(sysRoot string, devs map[string]bool) map[throttleKey]throttleVal {
	out := map[throttleKey]throttleVal{}
	if len(devs) == 0 {
		return out
	}
	base := filepath.Join(sysRoot, "fs", "cgroup")
	// v2: the unified hierarchy at the mount itself, or at unified/ on a
	// hybrid system.
	for _, root := range []string{base, filepath.Join(base, "unified")} {
		if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
			walkCgroups(root, func(dir, rel string) { readIOMax(dir, rel, devs, out) })
		}
	}
	// v1: the blkio hierarchy (possibly mounted together with others).
	if v1 := blkioRoot(base); v1 != "" {
		walkCgroups(v1, func(dir, rel string) { readBlkioThrottle(dir, rel, devs, out) })
	}
	return out
}

func blkioRoot(base string) string {
	if _, err := os.Stat(filepath.Join(base, "blkio", "blkio.throttle.write_bps_device")); err == nil {
		return filepath.Join(base, "blkio")
	}
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		if strings.Contains(e.Name(), "blkio") {
			p := filepath.Join(base, e.Name())
			if _, err := os.Stat(filepath.Join(p, "blkio.throttle.write_bps_device")); err == nil {
				return p
			}
		}
	}
	return ""
}

func walkCgroups(root string, fn func(dir, rel string)) {
	n := 0
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if rel != "." && strings.Count(rel, string(filepath.Separator)) >= maxCgroupDepth {
			return filepath.SkipDir
		}
		if n++; n > maxCgroupDirs {
			return filepath.SkipAll
		}
		fn(p, "/"+strings.TrimPrefix(filepath.ToSlash(rel), "."))
		return nil
	})
}

// readIOMax reads a v2 cgroup's io.max and, for limits on devs, io.stat.
func readIOMax(dir, rel string, devs map[string]bool, out map[throttleKey]throttleVal) {
	b, err := os.ReadFile(filepath.Join(dir, "io.max"))
	if err != nil {
		return
	}
	limits := map[throttleKey]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !devs[f[0]] {
			continue
		}
		for _, kv := range f[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || v == "max" {
				continue
			}
			if n, err := strconv.ParseUint(v, 10, 64); err == nil && n > 0 {
				limits[throttleKey{rel, f[0], k}] = n
			}
		}
	}
	if len(limits) == 0 {
		return
	}
	counts := map[[2]string]uint64{} // dev, stat name
	if b, err := os.ReadFile(filepath.Join(dir, "io.stat")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			for _, kv := range f[1:] {
				k, v, ok := strings.Cut(kv, "=")
				if n, err := strconv.ParseUint(v, 10, 64); ok && err == nil {
					counts[[2]string{f[0], k}] = n
				}
			}
		}
	}
	stat := map[string]string{"rbps": "rbytes", "wbps": "wbytes", "riops": "rios", "wiops": "wios"}
	for k, max := range limits {
		if s, ok := stat[k.limit]; ok {
			out[k] = throttleVal{max: max, count: counts[[2]string{k.dev, s}]}
		}
	}
}

// readBlkioThrottle reads a v1 blkio cgroup's throttle limits on devs
// and its service counters.
func readBlkioThrottle(dir, rel string, devs map[string]bool, out map[throttleKey]throttleVal) {
	files := []struct{ file, limit string }{
		{"blkio.throttle.read_bps_device", "rbps"}, {"blkio.throttle.write_bps_device", "wbps"},
		{"blkio.throttle.read_iops_device", "riops"}, {"blkio.throttle.write_iops_device", "wiops"},
	}
	limits := map[throttleKey]uint64{}
	for _, lf := range files {
		b, err := os.ReadFile(filepath.Join(dir, lf.file))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) != 2 || !devs[f[0]] {
				continue
			}
			if n, err := strconv.ParseUint(f[1], 10, 64); err == nil && n > 0 {
				limits[throttleKey{rel, f[0], lf.limit}] = n
			}
		}
	}
	if len(limits) == 0 {
		return
	}
	bytes := readBlkioStat(filepath.Join(dir, "blkio.throttle.io_service_bytes"))
	ios := readBlkioStat(filepath.Join(dir, "blkio.throttle.io_serviced"))
	for k, max := range limits {
		var c uint64
		switch k.limit {
		case "rbps":
			c = bytes[[2]string{k.dev, "Read"}]
		case "wbps":
			c = bytes[[2]string{k.dev, "Write"}]
		case "riops":
			c = ios[[2]string{k.dev, "Read"}]
		case "wiops":
			c = ios[[2]string{k.dev, "Write"}]
		}
		out[k] = throttleVal{max: max, count: c}
	}
}

// readBlkioStat reads "MAJ:MIN Read N" lines.
func readBlkioStat(path string) map[[2]string]uint64 {
	m := map[[2]string]uint64{}
	b, err := os.ReadFile(path)
	if err != nil {
		return m
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		if n, err := strconv.ParseUint(f[2], 10, 64); err == nil {
			m[[2]string{f[0], f[1]}] = n
		}
	}
	return m
}

// throttleLabel formats a limit for the table: "wbps 4.0MB/s".
func throttleLabel(t Throttle) string {
	if strings.HasSuffix(t.Limit, "bps") {
		return fmt.Sprintf("%s %s", t.Limit, fmtBytes(t.Max)+"/s")
	}
	return fmt.Sprintf("%s %.0f/s", t.Limit, t.Max)
}
