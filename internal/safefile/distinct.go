package safefile

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrDuplicate is wrapped by Distinct's error for an input given twice.
var ErrDuplicate = errors.New("given twice")

// Distinct refuses the same input file or directory given twice, by
// device and inode: the same path, another spelling of it (./a, a
// symbolic link) or a hard link. Read twice, a capture gives every request
// twice and a recording every slow request twice, a silently wrong answer.
// The error names both spellings. A path that cannot be stat'ed is left to
// the reader, which says why.
func Distinct(paths []string) error {
	type fileID struct{ dev, ino uint64 }
	seen := make(map[fileID]string, len(paths))
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			continue
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if !ok {
			continue
		}
		id := fileID{uint64(sys.Dev), sys.Ino}
		if first, dup := seen[id]; dup {
			if first == p {
				return fmt.Errorf("%s: %w", p, ErrDuplicate)
			}
			return fmt.Errorf("%s and %s are the same file: %w", first, p, ErrDuplicate)
		}
		seen[id] = p
	}
	return nil
}
