package hostinfo

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ListenerPID finds the process with a listening TCP socket on port:
// the socket's inode from /proc/net/tcp{,6}, then the process holding it
// (0: none, or not ours to see). kscope's own process is skipped.
func ListenerPID(port int) int {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 10 || fs[3] != "0A" { // 0A: LISTEN
				continue
			}
			i := strings.LastIndexByte(fs[1], ':')
			if p, err := strconv.ParseUint(fs[1][i+1:], 16, 16); err == nil && int(p) == port {
				inodes["socket:["+fs[9]+"]"] = true
			}
		}
	}
	if len(inodes) == 0 {
		return 0
	}
	procs, _ := os.ReadDir("/proc")
	for _, e := range procs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		fdDir := filepath.Join("/proc", e.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if t, err := os.Readlink(filepath.Join(fdDir, fd.Name())); err == nil && inodes[t] {
				return pid
			}
		}
	}
	return 0
}
