package hostinfo

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

const mountinfo = `22 1 259:1 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p1 rw,errors=remount-ro
25 22 0:23 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
90 22 7:3 / /mnt/kafka\040data rw,relatime shared:40 - ext4 /dev/loop3 rw,data=ordered
91 90 7:4 / /mnt/kafka\040data/xfs rw,noatime - xfs /dev/loop4 rw,attr2,inode64,logbufs=8
92 22 7:5 / /mnt/kafka rw - ext4 /dev/loop5 rw
`

func TestMountOf(t *testing.T) {
	tests := []struct {
		path, dev, fs, point, opts string
	}{
		{"/var/lib/kafka", "259:1", "ext4", "/", "rw,relatime,rw,errors=remount-ro"},
		{"/mnt/kafka data/logs", "7:3", "ext4", "/mnt/kafka data", "rw,relatime,rw,data=ordered"},
		{"/mnt/kafka data/xfs/t-0", "7:4", "xfs", "/mnt/kafka data/xfs", "rw,noatime,rw,attr2,inode64,logbufs=8"},
		{"/mnt/kafkadata", "259:1", "ext4", "/", ""},
		{"/mnt/kafka", "7:5", "ext4", "/mnt/kafka", "rw,rw"},
	}
	for _, tt := range tests {
		m, err := mountOf(strings.NewReader(mountinfo), tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if m.Device != tt.dev || m.FSType != tt.fs || m.MountPoint != tt.point || tt.opts != "" && m.Options != tt.opts {
			t.Errorf("%s: %+v", tt.path, m)
		}
	}
	if _, err := mountOf(strings.NewReader("garbage\n1 2 3\n"), "/x"); err == nil {
		t.Error("no mount: want an error")
	}
}

func TestMountOfSelf(t *testing.T) {
	m, err := MountOf(0, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if m.FSType == "" || m.Device == "" || !strings.Contains(m.Device, ":") {
		t.Errorf("%+v", m)
	}
	if Kernel() == "" {
		t.Error("no kernel release")
	}
}

func TestVersionFromClasspath(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"scala-library-2.13.16.jar", "kafka-clients-4.1.2.jar", "kafka_2.13-4.1.2.jar"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct{ cp, cwd, want string }{
		{dir + "/*", "", "4.1.2"},
		{"libs/*", filepath.Dir(dir) + "/x", ""},
		{"/opt/kafka/libs/kafka_2.13-3.9.1.jar:/opt/kafka/libs/zstd-jni-1.5.6-4.jar", "", "3.9.1"},
		{"/opt/kafka/libs/kafka-clients-3.7.0-SNAPSHOT.jar", "", "3.7.0-SNAPSHOT"},
		{"/opt/other.jar", "", ""},
	}
	for _, tt := range tests {
		if got := versionFromClasspath(tt.cp, tt.cwd); got != tt.want {
			t.Errorf("%q: %q, want %q", tt.cp, got, tt.want)
		}
	}
}

func TestParseStatCPU(t *testing.T) {
	for _, tc := range []struct {
		line string
		want time.Duration
		bad  bool
	}{
		{line: "4242 (java) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 56 0 0 20 0 80 0 100 0 0", want: 12900 * time.Millisecond},
		{line: "7 (a) b) (c) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0", want: 70 * time.Millisecond},
		{line: "7 java S 1", bad: true},
		{line: "7 (java) S 1 2 3", bad: true},
		{line: "7 (java) S 1 7 7 0 -1 0 0 0 0 0 x 4 0 0", bad: true},
	} {
		got, err := parseStatCPU([]byte(tc.line))
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("%q: %v, %v; want %v (bad %v)", tc.line, got, err, tc.want, tc.bad)
		}
	}
}

func TestSeenBy(t *testing.T) {
	pid := os.Getpid()
	self := filepath.Join("/proc", strconv.Itoa(pid), "root")
	tests := []struct {
		pid        int
		path, want string
	}{
		{pid, "/etc", self + "/etc"},
		{pid, "relative/dir", "relative/dir"},
		{pid, "/no/such/dir/kscope", "/no/such/dir/kscope"},
		{0, "/etc", "/etc"},
	}
	for _, tt := range tests {
		if got := SeenBy(tt.pid, tt.path); got != tt.want {
			t.Errorf("SeenBy(%d, %q) = %q, want %q", tt.pid, tt.path, got, tt.want)
		}
	}
}
