package fsbench

import (
	"fmt"
	"strings"
)

// Noise is the noisy neighbours on the file system under test: the two
// the Allegro broker had beside its appends.
type Noise struct {
	// Kind is what --noise named: "fsync-writer", "dirty-writer" or
	// "fsync-writer+dirty-writer".
	Kind string `json:"kind"`
	// Bytes is the fsync writer's size per fsync (0: no fsync writer):
	// it writes Bytes to a file on the same file system and fsyncs it, in
	// a loop, cycling through a file of at most noiseFileMax bytes.
	Bytes int `json:"bytes"`
	// DirtyBytesPerSec is the dirty writer's rate (0: no dirty writer):
	// it writes that much per second into the page cache without ever
	// fsyncing, and hands it to the kernel's writeback (dirtyWriter), so
	// the file system allocates and writes it out beside the broker's
	// appends, as another application's data on a shared disk does.
	DirtyBytesPerSec int64 `json:"dirty_bytes_per_sec,omitempty"`
}

// noiseFileMax bounds the fsync writer's file: the writer starts again at
// offset 0 past it, so the noise never fills the file system.
const noiseFileMax = 64 << 20

// The dirty writer's bounds: its file (truncated and written again past
// it, so it never holds more of the image), its rate, and the default.
const (
	dirtyFileMax        = 512 << 20
	dirtyRateMin        = 1 << 20
	dirtyRateMax        = 256 << 20
	dirtyRateDefault    = 32 << 20
	fsyncBytesDefault   = 256 << 10
	fsyncBytesMin       = 4096
	fsyncBytesMax       = 64 << 20
	noiseKindFsync      = "fsync-writer"
	noiseKindDirty      = "dirty-writer"
	noiseSpecHelpSuffix = "want fsync-writer[:SIZE], dirty-writer[:RATE] or both, comma-separated"
)

// ParseNoise parses --noise: a comma-separated list of "fsync-writer" or
// "fsync-writer:SIZE" (bytes per fsync, 4KiB..64MiB; default 256 KiB) and
// "dirty-writer" or "dirty-writer:RATE" (bytes dirtied per second,
// 1MiB..256MiB; default 32 MiB), each at most once. Empty or "none": no
// noise.
func ParseNoise(spec string) (*Noise, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "none" {
		return nil, nil
	}
	n := &Noise{}
	var kinds []string
	for _, part := range strings.Split(spec, ",") {
		kind, size, hasSize := strings.Cut(strings.TrimSpace(part), ":")
		if err := n.add(kind, size, hasSize); err != nil {
			return nil, fmt.Errorf("--noise %q: %w", spec, err)
		}
		kinds = append(kinds, kind)
	}
	n.Kind = strings.Join(kinds, "+")
	return n, nil
}

// add sets the writer kind of one --noise part, with its size if given.
func (n *Noise) add(kind, size string, hasSize bool) error {
	switch kind {
	case noiseKindFsync:
		if n.Bytes != 0 {
			return fmt.Errorf("%s given twice", kind)
		}
		b, err := sizeOr(size, hasSize, fsyncBytesDefault, fsyncBytesMin, fsyncBytesMax)
		if err != nil {
			return fmt.Errorf("%s: SIZE must be 4KiB..64MiB", kind)
		}
		n.Bytes = int(b)
	case noiseKindDirty:
		if n.DirtyBytesPerSec != 0 {
			return fmt.Errorf("%s given twice", kind)
		}
		b, err := sizeOr(size, hasSize, dirtyRateDefault, dirtyRateMin, dirtyRateMax)
		if err != nil {
			return fmt.Errorf("%s: RATE must be 1MiB..256MiB (per second)", kind)
		}
		n.DirtyBytesPerSec = b
	default:
		return fmt.Errorf("%s", noiseSpecHelpSuffix)
	}
	return nil
}

// sizeOr is size parsed within lo..hi, or def when none is given.
func sizeOr(size string, given bool, def, lo, hi int64) (int64, error) {
	if !given {
		return def, nil
	}
	b, err := ParseSize(size)
	if err != nil || b < lo || b > hi {
		return 0, fmt.Errorf("size %q out of %d..%d", size, lo, hi)
	}
	return b, nil
}

// describe is the noise in a line: what each writer does.
func (n *Noise) describe() string {
	var parts []string
	if n.Bytes > 0 {
		parts = append(parts, fmt.Sprintf("%s (%d KiB per fsync)", noiseKindFsync, n.Bytes>>10))
	}
	if n.DirtyBytesPerSec > 0 {
		parts = append(parts, fmt.Sprintf("%s (%d MiB/s to writeback)", noiseKindDirty, n.DirtyBytesPerSec>>20))
	}
	return strings.Join(parts, " and ")
}
