package iotrace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestClassify(t *testing.T) {
	dirs := []string{"/data/k1", "/data/k2"}
	tests := []struct {
		path     string
		allFiles bool
		ok       bool
		want     reportedFile
	}{
		{"/data/k1/orders-3/00000000000000001234.log", false, true, reportedFile{"orders-3/00000000000000001234.log", "orders", 3}},
		{"/data/k2/a-b.c-0/00000000000000000000.log.deleted", false, true, reportedFile{"a-b.c-0/00000000000000000000.log.deleted", "a-b.c", 0}},
		{"/data/k1/orders-3/00000000000000001234.index", false, false, reportedFile{}},
		{"/data/k1/orders-3/00000000000000001234.index", true, true, reportedFile{"orders-3/00000000000000001234.index", "orders", 3}},
		{"/data/k1/orders-3/leader-epoch-checkpoint", true, true, reportedFile{"orders-3/leader-epoch-checkpoint", "orders", 3}},
		{"/data/k1/recovery-point-offset-checkpoint", false, false, reportedFile{}},
		{"/data/k1/recovery-point-offset-checkpoint", true, true, reportedFile{"recovery-point-offset-checkpoint", "", -1}},
		{"/data/k10/orders-3/00000000000000001234.log", true, false, reportedFile{}},
		{"/var/log/kafka/server.log", true, false, reportedFile{}},
		{"/data/k1", true, false, reportedFile{}},
	}
	for _, tt := range tests {
		got, ok := classify(tt.path, dirs, tt.allFiles)
		if ok != tt.ok || got != tt.want {
			t.Errorf("classify(%q, all=%v) = %+v, %v; want %+v, %v", tt.path, tt.allFiles, got, ok, tt.want, tt.ok)
		}
	}
}

func TestQuantile(t *testing.T) {
	var s Summary
	s.Slots[10] = 90 // [1024, 2048) ns
	s.Slots[20] = 9  // [~1 ms, ~2 ms)
	s.Slots[28] = 1  // [~268 ms, ~537 ms)
	s.Count = 100
	tests := []struct {
		q    float64
		want time.Duration
	}{
		{0.5, 2048},
		{0.9, 2048},
		{0.91, 1 << 21},
		{0.99, 1 << 21},
		{0.999, 1 << 29},
		{1, 1 << 29},
	}
	for _, tt := range tests {
		if got := s.Quantile(tt.q); got != tt.want {
			t.Errorf("Quantile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if got := (&Summary{}).Quantile(0.99); got != 0 {
		t.Errorf("empty Quantile = %v", got)
	}
}

func TestDevString(t *testing.T) {
	tests := []struct {
		dev  uint32
		want string
	}{
		{7<<20 | 0, "7:0"},
		{259<<20 | 1, "259:1"},
		{8<<20 | 17, "8:17"},
		{0<<20 | 42, "0:42"},
	}
	for _, tt := range tests {
		if got := devString(tt.dev); got != tt.want {
			t.Errorf("devString(%#x) = %q, want %q", tt.dev, got, tt.want)
		}
	}
}

func TestMissingCaps(t *testing.T) {
	tests := []struct {
		caps uint64
		want string
	}{
		{1 << capSysAdmin, ""},
		{1<<capBPF | 1<<capPerfmon, ""},
		{1 << capBPF, "missing CAP_PERFMON"},
		{1 << capPerfmon, "missing CAP_BPF"},
		{0, "missing CAP_BPF and CAP_PERFMON"},
	}
	for _, tt := range tests {
		err := missingCaps(tt.caps)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("missingCaps(%#x) = %v, want nil", tt.caps, err)
		case tt.want != "" && (err == nil || !strings.HasSuffix(err.Error(), tt.want)):
			t.Errorf("missingCaps(%#x) = %v, want ...%s", tt.caps, err, tt.want)
		}
	}
}

func TestFindBroker(t *testing.T) {
	write := func(root string, pid int, args ...string) {
		dir := filepath.Join(root, strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cmdline"), []byte(strings.Join(args, "\x00")+"\x00"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	one := t.TempDir()
	write(one, 10, "/usr/bin/java", "-Xmx1G", "-cp", "/libs/*", "kafka.Kafka", "/etc/kafka/server.properties")
	write(one, 11, "grep", "kafka.Kafka.foo")
	write(one, 12, "/usr/bin/java", "org.apache.zookeeper.Main")
	write(one, 13, "kscope", "iotrace", "--auto", "kafka.Kafka") // self
	if pid, err := findBroker(one, 13); err != nil || pid != 10 {
		t.Errorf("findBroker = %d, %v; want 10", pid, err)
	}
	write(one, 14, "/usr/bin/java", "kafka.Kafka", "other.properties")
	if _, err := findBroker(one, 13); err == nil || !strings.Contains(err.Error(), "[10 14]") {
		t.Errorf("two brokers: err = %v", err)
	}
	if _, err := findBroker(t.TempDir(), 1); err == nil {
		t.Error("no broker: no error")
	}
}

func TestDecodeEvent(t *testing.T) {
	b := make([]byte, eventSize)
	le := binary.LittleEndian
	le.PutUint64(b[0:], 100)
	le.PutUint64(b[8:], 300)
	le.PutUint64(b[16:], uint64(4096))
	le.PutUint64(b[24:], ^uint64(0)) // -1
	le.PutUint64(b[32:], 12345)
	le.PutUint32(b[40:], 7<<20|1)
	le.PutUint32(b[44:], 4242)
	le.PutUint32(b[48:], 17)
	le.PutUint32(b[52:], uint32(OpPwritev2))
	ev, ok := decodeEvent(b)
	want := iotraceIotraceEvent{StartNs: 100, EndNs: 300, Ret: 4096, Pos: -1, Ino: 12345, Dev: 7<<20 | 1, Tid: 4242, Fd: 17, Op: uint32(OpPwritev2)}
	if !ok || ev != want {
		t.Errorf("decodeEvent = %+v, %v; want %+v", ev, ok, want)
	}
	if _, ok := decodeEvent(b[:eventSize-1]); ok {
		t.Error("short sample decoded")
	}
}

func TestClockOffset(t *testing.T) {
	c, err := measureClockOffset()
	if err != nil {
		t.Fatal(err)
	}
	if c.uncertainty > time.Millisecond {
		t.Errorf("uncertainty %v, want well under 1ms", c.uncertainty)
	}
	// time.Now carries both clocks; its monotonic reading is not exposed,
	// so compare against a fresh CLOCK_MONOTONIC read instead.
	before := time.Now()
	got := c.wall(uint64(monoNow(t)))
	after := time.Now()
	if got.Before(before.Add(-time.Millisecond)) || got.After(after.Add(time.Millisecond)) {
		t.Errorf("wall(now) = %v, want within [%v, %v]", got, before, after)
	}
}

func TestExplainRefusal(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		want  string
		eperm bool
	}{
		{"eperm from cilium/ebpf",
			fmt.Errorf("program ksio_fe_ext4: load program: %w (MEMLOCK may be too low, consider rlimit.RemoveMemlock)", unix.EPERM),
			"refused (no BPF trampolines in this kernel, or a security policy): program ksio_fe_ext4: load program: operation not permitted", true},
		{"other error", fmt.Errorf("program ksio_fe_ext4: %w", unix.EINVAL), "program ksio_fe_ext4: invalid argument", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := explainRefusal(tt.err)
			if got.Error() != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if errors.Is(got, unix.EPERM) != tt.eperm {
				t.Errorf("errors.Is(EPERM) = %v, want %v", !tt.eperm, tt.eperm)
			}
		})
	}
}
