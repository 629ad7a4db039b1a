package keylogagent

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// jvm is what Attach needs to know of the target process, from /proc.
type jvm struct {
	pid int
	// uid, gid and groups are the ids the JVM opens files with (the file
	// system ids of /proc/PID/status, which follow the effective ones).
	uid, gid uint32
	groups   []uint32
	// start is the process's start time in clock ticks after boot (field
	// 22 of /proc/PID/stat): with pid, it names this JVM across pid reuse.
	start uint64
	// cmdline is the process's arguments.
	cmdline []string
}

func (j *jvm) proc(name ...string) string {
	return filepath.Join(append([]string{"/proc", strconv.Itoa(j.pid)}, name...)...)
}

// readJVM reads process pid's credentials, start time and arguments.
func readJVM(pid int) (*jvm, error) {
	j := &jvm{pid: pid}
	status, err := os.ReadFile(j.proc("status"))
	if err != nil {
		return nil, fmt.Errorf("process %d: %w", pid, err)
	}
	if j.uid, j.gid, j.groups, err = parseStatus(status); err != nil {
		return nil, fmt.Errorf("process %d: status: %w", pid, err)
	}
	stat, err := os.ReadFile(j.proc("stat"))
	if err != nil {
		return nil, fmt.Errorf("process %d: %w", pid, err)
	}
	if j.start, err = parseStartTime(stat); err != nil {
		return nil, fmt.Errorf("process %d: stat: %w", pid, err)
	}
	cmdline, err := os.ReadFile(j.proc("cmdline"))
	if err != nil {
		return nil, fmt.Errorf("process %d: %w", pid, err)
	}
	j.cmdline = strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	return j, nil
}

// parseStatus reads the file system uid and gid (the fourth of the Uid:
// and Gid: lines: real, effective, saved, fs) and the supplementary
// groups of a /proc/PID/status file.
func parseStatus(b []byte) (uid, gid uint32, groups []uint32, err error) {
	var haveUID, haveGID bool
	for _, line := range strings.Split(string(b), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(val)
		switch key {
		case "Uid", "Gid":
			if len(f) != 4 {
				return 0, 0, nil, fmt.Errorf("%s: %q: want 4 ids", key, val)
			}
			id, err := strconv.ParseUint(f[3], 10, 32)
			if err != nil {
				return 0, 0, nil, fmt.Errorf("%s: %w", key, err)
			}
			if key == "Uid" {
				uid, haveUID = uint32(id), true
			} else {
				gid, haveGID = uint32(id), true
			}
		case "Groups":
			for _, s := range f {
				id, err := strconv.ParseUint(s, 10, 32)
				if err != nil {
					return 0, 0, nil, fmt.Errorf("Groups: %w", err)
				}
				groups = append(groups, uint32(id))
			}
		}
	}
	if !haveUID || !haveGID {
		return 0, 0, nil, errors.New("no Uid or Gid line")
	}
	return uid, gid, groups, nil
}

// parseStartTime reads field 22, starttime, of a /proc/PID/stat line. The
// command name (field 2) may hold spaces and parentheses: fields are
// counted after its last ')'.
func parseStartTime(b []byte) (uint64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("no ')' after the command name")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 {
		return 0, fmt.Errorf("%d fields after the command name, want 20 or more", len(f))
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// isAgentJar reports whether a jar's file name is extract-tls-secrets's
// (or that of extract-ssl-secrets, its name before 2.0).
func isAgentJar(name string) bool {
	base := filepath.Base(name)
	return strings.HasSuffix(base, ".jar") &&
		(strings.HasPrefix(base, "extract-tls-secrets") || strings.HasPrefix(base, "extract-ssl-secrets"))
}

// agentOpen returns the path (in the JVM's mount namespace) of an open
// file of the JVM that is the agent jar: one named like it, or the same
// file as jar. A JVM holds the jar open for as long as it runs once the
// agent is loaded (it is on its boot class path). "" if there is none.
func (j *jvm) agentOpen(jar string) (string, error) {
	ours, err := os.Stat(jar)
	if err != nil {
		return "", err
	}
	fds, err := os.ReadDir(j.proc("fd"))
	if err != nil {
		return "", fmt.Errorf("process %d: open files: %w", j.pid, err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(j.proc("fd", fd.Name()))
		if err != nil || !strings.HasSuffix(link, ".jar") {
			continue // closed meanwhile, or not a jar
		}
		if isAgentJar(link) {
			return link, nil
		}
		// Stat through the magic link: the file itself, whatever mount
		// namespace the JVM's path is in.
		if st, err := os.Stat(j.proc("fd", fd.Name())); err == nil && os.SameFile(st, ours) {
			return link, nil
		}
	}
	return "", nil
}

// javaagentKeylog returns the key log of an extract-tls-secrets agent in
// the JVM's -javaagent options, as the agent resolves it (relative paths
// against the JVM's working dir; default ssl-master-secrets.txt), and
// whether there is one.
func (j *jvm) javaagentKeylog() (string, bool) {
	opt, ok := javaagentOption(j.cmdline)
	if !ok {
		return "", false
	}
	if opt == "" {
		opt = "ssl-master-secrets.txt"
	}
	if !filepath.IsAbs(opt) {
		cwd, err := os.Readlink(j.proc("cwd"))
		if err != nil {
			return opt, true
		}
		opt = filepath.Join(cwd, opt)
	}
	return opt, true
}

// javaagentOption returns the option string of the first
// -javaagent:JAR[=OPTIONS] argument whose JAR is the agent's.
func javaagentOption(args []string) (string, bool) {
	for _, a := range args {
		spec, ok := strings.CutPrefix(a, "-javaagent:")
		if !ok {
			continue
		}
		jar, opt, _ := strings.Cut(spec, "=")
		if isAgentJar(jar) {
			return opt, true
		}
	}
	return "", false
}
