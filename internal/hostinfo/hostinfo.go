// Package hostinfo describes the machine and the broker process a
// recording was taken on: kernel release, the file system and mount
// options under each log directory, the broker's Kafka version and its
// CPU time. It reads /proc only.
package hostinfo

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Kernel returns the kernel release (uname -r).
func Kernel() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// Mount is the mount a path is on.
type Mount struct {
	Device     string // major:minor
	FSType     string
	Source     string
	MountPoint string
	Options    string // per-mount options, then the super block's
	// SuperOptions are the super block's options alone (data=writeback,
	// inode64, ...): what the file system was mounted with.
	SuperOptions string
}

// Mounts lists every mount process pid sees (pid 0: this process), in
// /proc/PID/mountinfo's order (a later mount on the same point is on top).
func Mounts(pid int) ([]Mount, error) {
	f, err := os.Open(mountinfoPath(pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if m, ok := parseMountinfo(sc.Text()); ok {
			out = append(out, m)
		}
	}
	return out, sc.Err()
}

func mountinfoPath(pid int) string {
	if pid > 0 {
		return "/proc/" + strconv.Itoa(pid) + "/mountinfo"
	}
	return "/proc/self/mountinfo"
}

// MountOf returns the mount that holds path, as process pid sees it
// (/proc/PID/mountinfo; pid 0 means this process).
func MountOf(pid int, path string) (Mount, error) {
	f, err := os.Open(mountinfoPath(pid))
	if err != nil {
		return Mount{}, err
	}
	defer f.Close()
	abs, err := filepath.Abs(path)
	if err != nil {
		return Mount{}, err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return mountOf(f, abs)
}

// mountOf picks, from a mountinfo file, the last mount (the one on top)
// with the longest mount point that is a prefix of path.
func mountOf(r io.Reader, path string) (Mount, error) {
	var best Mount
	found := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m, ok := parseMountinfo(sc.Text())
		if !ok || !within(path, m.MountPoint) {
			continue
		}
		if !found || len(m.MountPoint) >= len(best.MountPoint) {
			best, found = m, true
		}
	}
	if err := sc.Err(); err != nil {
		return Mount{}, err
	}
	if !found {
		return Mount{}, fmt.Errorf("no mount holds %s", path)
	}
	return best, nil
}

func within(path, dir string) bool {
	if dir == "/" {
		return true
	}
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// parseMountinfo parses one line of /proc/PID/mountinfo:
//
//	36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue
func parseMountinfo(line string) (Mount, bool) {
	fields := strings.Fields(line)
	sep := -1
	for i, f := range fields {
		if f == "-" && i >= 6 {
			sep = i
			break
		}
	}
	if sep < 0 || len(fields) < sep+4 {
		return Mount{}, false
	}
	return Mount{
		Device:       fields[2],
		MountPoint:   unescape(fields[4]),
		Options:      fields[5] + "," + fields[sep+3],
		SuperOptions: fields[sep+3],
		FSType:       fields[sep+1],
		Source:       unescape(fields[sep+2]),
	}, true
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// versionJar matches the jars that carry Kafka's version in their name.
var versionJar = regexp.MustCompile(`(?:^|/)(?:kafka-clients|kafka_2\.1[23]|kafka-server)-(\d+\.\d+\.\d+[\w.-]*?)\.jar$`)

// BrokerVersion returns the Kafka version of the broker pid, from the
// jars on its class path (named on the command line, or found in a
// directory named with a wildcard).
func BrokerVersion(pid int) (string, error) {
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return "", err
	}
	args := strings.Split(string(cmdline), "\x00")
	cwd, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
	for i, a := range args {
		if (a == "-cp" || a == "-classpath" || a == "--class-path") && i+1 < len(args) {
			if v := versionFromClasspath(args[i+1], cwd); v != "" {
				return v, nil
			}
		}
	}
	return "", errors.New("no Kafka jar with a version on the class path")
}

func versionFromClasspath(cp, cwd string) string {
	for _, entry := range strings.Split(cp, ":") {
		if entry == "" {
			continue
		}
		if !filepath.IsAbs(entry) && cwd != "" {
			entry = filepath.Join(cwd, entry)
		}
		if strings.HasSuffix(entry, "*") {
			matches, _ := filepath.Glob(strings.TrimSuffix(entry, "*") + "*.jar")
			for _, m := range matches {
				if v := versionJar.FindStringSubmatch(m); v != nil {
					return v[1]
				}
			}
			continue
		}
		if v := versionJar.FindStringSubmatch(entry); v != nil {
			return v[1]
		}
	}
	return ""
}

// JDKTool finds a JDK program (java, jcmd, ...): $JAVA_HOME/bin/NAME when
// it exists, else NAME on PATH.
func JDKTool(name string) (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		p := filepath.Join(home, "bin", name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found (it comes with a JDK; set JAVA_HOME or put %s on PATH)", name, name)
	}
	return p, nil
}

// userHZ is the unit of the CPU times in /proc/PID/stat: USER_HZ, which
// Linux fixes at 100 for user space on every architecture (sysconf
// _SC_CLK_TCK), whatever the kernel's own HZ.
const userHZ = 100

// ProcessCPU is the user and system CPU time process pid has used so far
// (its threads included), from /proc/PID/stat.
func ProcessCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a stat line.
// The command name (field 2) may hold spaces and parentheses: fields are
// counted after its last ')'.
func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("hostinfo: stat: no command name")
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, errors.New("hostinfo: stat: too few fields")
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("hostinfo: stat: bad CPU times")
	}
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

// SeenBy returns path as process pid sees it, read from here: through
// /proc/PID/root when that works (the broker in a container of its own,
// its log dirs in its mount namespace, and kscope in another with the
// host's PIDs), else path itself. Paths a process reports (its open
// files) are in its own mount namespace.
func SeenBy(pid int, path string) string {
	if pid <= 0 || !filepath.IsAbs(path) {
		return path
	}
	p := filepath.Join("/proc", strconv.Itoa(pid), "root", path)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return path
}

// AllSeenBy is SeenBy over paths.
func AllSeenBy(pid int, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = SeenBy(pid, p)
	}
	return out
}
