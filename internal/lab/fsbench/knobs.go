package fsbench

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A variant's knobs are mount options added to it on the command line:
// "ext4-writeback:commit=30", "xfs:logbsize=256k:noatime". Only the options
// below are taken, each value checked: mount -o is handed to the kernel
// as it is, and an option like journal_path= or usrjquota= names another
// file or device, which a lab run must never touch.

// knob is one mount option a variant may be given: Check validates its
// value ("" for a flag without one).
type knob struct {
	FS    string
	Key   string
	Check func(value string) error
}

var knobs = []knob{
	// ext4: the journal commit interval and mode, and what shapes a commit.
	{"ext4", "commit", intIn(1, 300)},
	{"ext4", "data", oneOfValues("ordered", "writeback", "journal")},
	{"ext4", "barrier", optionalIntIn(0, 1)},
	{"ext4", "nobarrier", flagOnly},
	{"ext4", "journal_async_commit", flagOnly},
	{"ext4", "journal_ioprio", intIn(0, 7)},
	{"ext4", "min_batch_time", intIn(0, 1_000_000)},
	{"ext4", "max_batch_time", intIn(0, 1_000_000)},
	{"ext4", "delalloc", flagOnly},
	{"ext4", "nodelalloc", flagOnly},
	{"ext4", "auto_da_alloc", flagOnly},
	{"ext4", "noauto_da_alloc", flagOnly},
	{"ext4", "dioread_nolock", flagOnly},
	{"ext4", "dioread_lock", flagOnly},
	// xfs: the log buffers, which its journal writes go through.
	{"xfs", "logbufs", intIn(2, 8)},
	{"xfs", "logbsize", oneOfValues("16k", "32k", "64k", "128k", "256k")},
	{"xfs", "wsync", flagOnly},
	{"xfs", "largeio", flagOnly},
	{"xfs", "nolargeio", flagOnly},
	{"xfs", "allocsize", sizeIn(4<<10, 1<<30)},
	// Both.
	{"", "noatime", flagOnly},
	{"", "relatime", flagOnly},
	{"", "lazytime", flagOnly},
	{"", "nolazytime", flagOnly},
}

// maxKnobs bounds the options of one variant.
const maxKnobs = 16

// withKnobs returns v with the mount options of spec ("k=v:flag", the
// part after the variant's name) added; spec's options must be known for
// v's file system, given once, and not set by v already.
func (v Variant) withKnobs(spec string) (Variant, error) {
	opts := strings.Split(spec, ":")
	if len(opts) > maxKnobs {
		return v, fmt.Errorf("variant %q: at most %d mount options", v.Name, maxKnobs)
	}
	seen := map[string]bool{}
	for _, o := range strings.Split(v.MountOptions, ",") {
		if k, _, _ := strings.Cut(o, "="); k != "" {
			seen[k] = true
		}
	}
	for _, o := range opts {
		key, err := v.checkKnob(o)
		if err != nil {
			return v, err
		}
		if seen[key] {
			return v, fmt.Errorf("variant %q: mount option %q given twice (or set by the variant)", v.Name, key)
		}
		seen[key] = true
		v.MountOptions = joinOptions(v.MountOptions, o)
	}
	v.Name += ":" + spec
	return v, nil
}

// checkKnob checks one "key=value" or "flag" against the knobs of v's
// file system and returns its key.
func (v Variant) checkKnob(o string) (string, error) {
	if o == "" {
		return "", fmt.Errorf("variant %q: empty mount option", v.Name)
	}
	for _, r := range o {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '=') {
			return "", fmt.Errorf("variant %q: mount option %q: only a-z, 0-9, _ and = are taken", v.Name, o)
		}
	}
	key, value, _ := strings.Cut(o, "=")
	for _, k := range knobs {
		if k.Key == key && (k.FS == "" || k.FS == v.FS) {
			if err := k.Check(value); err != nil {
				return "", fmt.Errorf("variant %q: mount option %q: %w", v.Name, o, err)
			}
			return key, nil
		}
	}
	return "", fmt.Errorf("variant %q: mount option %q is not one lab fs takes for %s (known: %s)", v.Name, key, v.FS, strings.Join(knobNames(v.FS), ", "))
}

// knobNames are the options known for fs.
func knobNames(fs string) []string {
	var names []string
	for _, k := range knobs {
		if k.FS == "" || k.FS == fs {
			names = append(names, k.Key)
		}
	}
	return names
}

func joinOptions(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}

// ParseCommitInterval parses --commit-interval: whole seconds, 1s..300s
// (ext4's commit= mount option); "" or "0": the file system's default.
func ParseCommitInterval(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second || d > 300*time.Second || d%time.Second != 0 {
		return 0, fmt.Errorf("--commit-interval %q: want whole seconds from 1s to 300s, e.g. 30s", s)
	}
	return d, nil
}

// WithCommitInterval gives every ext4 variant that has no commit= of its
// own the journal commit interval d; XFS has no such mount option (its
// log is flushed by a global sysctl), so an XFS-only list is an error.
func WithCommitInterval(vs []Variant, d time.Duration) ([]Variant, error) {
	if d == 0 {
		return vs, nil
	}
	out := make([]Variant, len(vs))
	applied := false
	for i, v := range vs {
		out[i] = v
		if v.FS != "ext4" || hasOption(v.MountOptions, "commit") {
			continue
		}
		out[i].MountOptions = joinOptions(v.MountOptions, "commit="+strconv.Itoa(int(d/time.Second)))
		applied = true
	}
	if !applied {
		return nil, errors.New("--commit-interval applies to ext4 variants without a commit= of their own, and there are none")
	}
	return out, nil
}

func hasOption(opts, key string) bool {
	for _, o := range strings.Split(opts, ",") {
		if k, _, _ := strings.Cut(o, "="); k == key {
			return true
		}
	}
	return false
}

func flagOnly(value string) error {
	if value != "" {
		return errors.New("takes no value")
	}
	return nil
}

func intIn(lo, hi int) func(string) error {
	return func(value string) error {
		n, err := strconv.Atoi(value)
		if err != nil || n < lo || n > hi || strconv.Itoa(n) != value {
			return fmt.Errorf("want a whole number from %d to %d", lo, hi)
		}
		return nil
	}
}

func optionalIntIn(lo, hi int) func(string) error {
	check := intIn(lo, hi)
	return func(value string) error {
		if value == "" {
			return nil
		}
		return check(value)
	}
}

func oneOfValues(values ...string) func(string) error {
	return func(value string) error {
		for _, v := range values {
			if v == value {
				return nil
			}
		}
		return fmt.Errorf("want one of %s", strings.Join(values, ", "))
	}
}

// sizeIn checks a size in mount's form: a number with an optional k, m or
// g suffix.
func sizeIn(lo, hi int64) func(string) error {
	return func(value string) error {
		num, mult := value, int64(1)
		for suffix, m := range map[string]int64{"k": 1 << 10, "m": 1 << 20, "g": 1 << 30} {
			if n, ok := strings.CutSuffix(value, suffix); ok {
				num, mult = n, m
			}
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n < 0 || n > hi/mult || n*mult < lo {
			return fmt.Errorf("want a size from %d to %d bytes (k, m, g suffixes)", lo, hi)
		}
		return nil
	}
}
