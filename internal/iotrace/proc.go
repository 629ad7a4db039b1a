package iotrace

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kscope-dev/kscope/internal/logdir"
)

// kafkaMainClass is the main class of a Kafka broker's JVM (kafka.Kafka,
// started by kafka-server-start.sh and internal/lab alike).
const kafkaMainClass = "kafka.Kafka"

// FindBroker returns the pid of the one process whose command line has
// kafka.Kafka as an argument. It fails when there is none or more than one.
func FindBroker() (int, error) {
	return findBroker("/proc", os.Getpid())
}

func findBroker(procRoot string, self int) (int, error) {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return 0, fmt.Errorf("iotrace: find broker: %w", err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "cmdline"))
		if err != nil {
			continue // exited, or not ours to read
		}
		if slices.ContainsFunc(bytes.Split(cmdline, []byte{0}), func(arg []byte) bool { return string(arg) == kafkaMainClass }) {
			pids = append(pids, pid)
		}
	}
	switch len(pids) {
	case 0:
		return 0, fmt.Errorf("iotrace: no process running %s (use --pid)", kafkaMainClass)
	case 1:
		return pids[0], nil
	}
	slices.Sort(pids)
	return 0, fmt.Errorf("iotrace: %d processes run %s (pids %v): choose one with --pid", len(pids), kafkaMainClass, pids)
}

// ErrNoLogDirs: the broker has no log directory open (yet: a starting
// broker opens them after a few seconds).
var ErrNoLogDirs = errors.New("no log directory")

// LogDirsOf returns the log directories of the broker pid, found from its
// open files: Kafka holds a lock on LOGDIR/.lock in every log directory,
// and keeps the segments of its partitions open.
func LogDirsOf(pid int) ([]string, error) {
	fdDir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		return nil, fmt.Errorf("iotrace: open files of pid %d: %w", pid, err)
	}
	var dirs []string
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(fdDir, e.Name()))
		if err != nil || !strings.HasPrefix(target, "/") {
			continue // closed meanwhile, or a socket, pipe or anon inode
		}
		if dir := logDirOfFile(stripDeleted(target)); dir != "" && !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("iotrace: %w among the open files of pid %d (give --log-dirs)", ErrNoLogDirs, pid)
	}
	slices.Sort(dirs)
	return dirs, nil
}

// logDirOfFile returns the log directory that path shows, or "".
func logDirOfFile(path string) string {
	if filepath.Base(path) == ".lock" {
		return filepath.Dir(path)
	}
	loc, err := logdir.ParsePath(path)
	if err != nil || loc.Kind == logdir.KindDir || loc.Kind == logdir.KindOther {
		return ""
	}
	return loc.LogDir
}

// stripDeleted removes the " (deleted)" the kernel appends to the link
// target of an unlinked file.
func stripDeleted(target string) string {
	return strings.TrimSuffix(target, " (deleted)")
}
