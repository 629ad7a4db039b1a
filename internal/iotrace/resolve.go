package iotrace

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/logdir"
)

// fileID is a file as the kernel reports it: its super block's device
// (kernel dev_t encoding) and its inode number.
type fileID struct {
	dev uint32
	ino uint64
}

// matches reports whether st describes the file id names.
func (id fileID) matches(st *unix.Stat_t) bool {
	return st.Ino == id.ino && st.Dev == unix.Mkdev(id.dev>>20, id.dev&(1<<20-1))
}

// recheckAfter bounds how long a name is trusted: Kafka renames segments
// (.deleted, .cleaned, .swap) and inode numbers are reused after deletion.
const recheckAfter = time.Second

// How long a file looked for everywhere and not found is not looked for
// again, and when a name not seen since is forgotten. Journal and block
// events name files the broker may not have open (a segment deleted
// since, another process's file, the journal itself): looking for each
// of those again every second walked every segment of every partition,
// 8% of the agent's CPU on a small broker. A file new to the resolver is
// looked for at once: a broker creates files in bursts (a new partition's,
// checkpoints), and an event on one of them should be named.
const (
	missRetry   = time.Minute
	forgetAfter = 10 * time.Minute
)

type namedFile struct {
	path    string
	checked time.Time
}

// fileResolver names files by (device, inode): first from the fd the call
// used (/proc/PID/fd/N, checked against the inode since the fd may have
// been closed and reused since the call), then from all the broker's open
// files, then by walking the log directories.
type fileResolver struct {
	pid     int
	logDirs []string

	mu     sync.Mutex
	names  map[fileID]namedFile
	misses map[fileID]time.Time // files looked for everywhere, not found, and when
}

func newFileResolver(pid int, logDirs []string) *fileResolver {
	return &fileResolver{pid: pid, logDirs: logDirs, names: map[fileID]namedFile{}, misses: map[fileID]time.Time{}}
}

// lookup returns the path of id; fd is the descriptor the call used, or -1.
func (r *fileResolver) lookup(id fileID, fd int) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	cached, ok := r.names[id]
	if ok && now.Sub(cached.checked) < recheckAfter {
		return cached.path, true
	}
	if fd >= 0 {
		if path, ok := r.fromFD(id, strconv.Itoa(fd)); ok {
			r.names[id] = namedFile{path, now}
			return path, true
		}
	}
	if ok {
		// The call's fd is closed: the name seen last is the best there is.
		r.names[id] = namedFile{cached.path, now}
		return cached.path, true
	}
	if at, missed := r.misses[id]; missed && now.Sub(at) < missRetry {
		return "", false
	}
	// The log directories' own files first: a broker writes its
	// checkpoints (every 5 s for the high watermarks) to a temporary file
	// that it closes and renames before the write is named, so neither
	// the call's fd nor the open files have it, and the walk of every
	// partition directory (six files a partition) would be spent on a
	// dozen files at the top.
	r.walkLogDirs(now, false)
	if n, ok := r.names[id]; ok {
		return n.path, true
	}
	r.scanFDs(now)
	if n, ok := r.names[id]; ok {
		return n.path, true
	}
	r.forget(now)
	r.walkLogDirs(now, true)
	if n, ok := r.names[id]; ok {
		return n.path, true
	}
	r.misses[id] = now
	return "", false
}

// known returns the name id was last given, without looking for it. It
// is for the files of other processes (an fsync on a log directory's
// device by anything else): the broker's open files and its log
// directories cannot name them, and looking for each new one would list
// the broker's fds and walk every partition directory, once per file: on
// a device shared with a busy process, and a broker with thousands of
// partitions, a walk of thousands of files for each file it syncs.
func (r *fileResolver) known(id fileID) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, ok := r.names[id]
	return n.path, ok
}

// forget drops the names not seen for forgetAfter: segments deleted long
// ago, whose inode numbers are free again.
func (r *fileResolver) forget(now time.Time) {
	maps.DeleteFunc(r.names, func(_ fileID, n namedFile) bool { return now.Sub(n.checked) >= forgetAfter })
	maps.DeleteFunc(r.misses, func(_ fileID, at time.Time) bool { return now.Sub(at) >= missRetry })
}

// fromFD names id from /proc/PID/fd/FD if that fd still refers to it.
func (r *fileResolver) fromFD(id fileID, fd string) (string, bool) {
	link := filepath.Join("/proc", strconv.Itoa(r.pid), "fd", fd)
	var st unix.Stat_t
	if err := unix.Stat(link, &st); err != nil || !id.matches(&st) {
		return "", false
	}
	target, err := os.Readlink(link)
	if err != nil || !strings.HasPrefix(target, "/") {
		return "", false
	}
	return stripDeleted(target), true
}

// scanFDs names every regular file the broker has open.
func (r *fileResolver) scanFDs(now time.Time) {
	dir := filepath.Join("/proc", strconv.Itoa(r.pid), "fd")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		link := filepath.Join(dir, e.Name())
		var st unix.Stat_t
		if unix.Stat(link, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		target, err := os.Readlink(link)
		if err != nil || !strings.HasPrefix(target, "/") {
			continue
		}
		r.names[statID(&st)] = namedFile{stripDeleted(target), now}
	}
}

// walkLogDirs names every file in the log directories and, with
// partitions, in the partition directories in them (Kafka nests no
// deeper).
func (r *fileResolver) walkLogDirs(now time.Time, partitions bool) {
	for _, root := range r.logDirs {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() {
				if path != root && (!partitions || filepath.Dir(path) != root) {
					return filepath.SkipDir
				}
				return nil
			}
			var st unix.Stat_t
			if unix.Stat(path, &st) == nil {
				r.names[statID(&st)] = namedFile{path, now}
			}
			return nil
		})
	}
}

// statID converts a stat's device (user space dev_t) to the kernel's
// encoding the BPF side reports.
func statID(st *unix.Stat_t) fileID {
	return fileID{dev: unix.Major(st.Dev)<<20 | unix.Minor(st.Dev), ino: st.Ino}
}

// location is what reporting needs from logdir.ParsePath.
type location struct {
	topic     string
	partition int32
	isLog     bool // a segment's .log file (also .log.deleted etc.)
}

func parseLocation(path string) (location, error) {
	loc, err := logdir.ParsePath(path)
	if err != nil {
		return location{}, err
	}
	if loc.Kind == logdir.KindDir {
		return location{}, os.ErrInvalid
	}
	return location{topic: loc.Topic, partition: loc.Partition, isLog: loc.Kind == logdir.KindLog}, nil
}

// threadNames caches /proc/PID/task/TID/comm. The JVM names a thread's
// native thread when it starts, and thread ids are reused, so names are
// read again after a while.
type threadNames struct {
	pid   int
	mu    sync.Mutex
	names map[int]namedFile
}

func newThreadNames(pid int) *threadNames {
	return &threadNames{pid: pid, names: map[int]namedFile{}}
}

const threadRecheckAfter = 5 * time.Second

func (n *threadNames) name(tid int) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := time.Now()
	if c, ok := n.names[tid]; ok && now.Sub(c.checked) < threadRecheckAfter {
		return c.path
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(n.pid), "task", strconv.Itoa(tid), "comm"))
	name := strings.TrimSuffix(string(b), "\n")
	if err != nil {
		name = "?" // the thread has exited
		if c, ok := n.names[tid]; ok {
			name = c.path
		}
	}
	n.names[tid] = namedFile{name, now}
	return name
}
