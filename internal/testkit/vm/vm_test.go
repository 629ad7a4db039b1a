package vm

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/testkit/labtest"
	"github.com/kscope-dev/kscope/internal/testkit/vm/guest"
)

// TestBoot boots testdata/guest on the VM kernel with an ext4 and an xfs
// disk and checks what the guest saw.
func TestBoot(t *testing.T) {
	labtest.RequireRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	kdir, err := EnsureKernel(ctx)
	if err != nil {
		labtest.Unavailable(t, "VM kernel: %v", err)
	}
	init := filepath.Join(t.TempDir(), "init")
	if err := BuildInit(ctx, "./testdata/guest", init); err != nil {
		t.Fatal(err)
	}
	res, err := Run(ctx, Config{
		KernelDir: kdir,
		Init:      init,
		Args:      []string{"-code=3", "-mounts=/mnt/ext4,/mnt/xfs"},
		Disks: []Disk{
			{FSType: "ext4", Mount: "/mnt/ext4"},
			{FSType: "xfs", Mount: "/mnt/xfs"},
		},
	})
	t.Logf("boot took %v (accel %s, kernel %s)", res.Elapsed.Round(time.Millisecond), res.Accel, filepath.Base(kdir))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("console:\n%s", res.Output)
		}
	}()
	if res.ExitCode != 3 {
		t.Errorf("exit code %d, want 3", res.ExitCode)
	}
	m := regexp.MustCompile(`GUEST-REPORT (\{.*\})`).FindStringSubmatch(res.Output)
	if m == nil {
		t.Fatalf("no GUEST-REPORT line in the console:\n%s", res.Output)
	}
	var r struct {
		Args    []string
		Release string
		FSTypes map[string]string
		Files   map[string]string
		BTF     int64
	}
	if err := json.Unmarshal([]byte(m[1]), &r); err != nil {
		t.Fatalf("GUEST-REPORT: %v: %s", err, m[1])
	}
	if strings.Join(r.Args, " ") != "-code=3 -mounts=/mnt/ext4,/mnt/xfs" {
		t.Errorf("guest args %q", r.Args)
	}
	if !strings.HasPrefix(r.Release, "6.1.") {
		t.Errorf("guest kernel release %q, want 6.1.x", r.Release)
	}
	for mnt, fs := range map[string]string{"/mnt/ext4": "ext4", "/mnt/xfs": "xfs", "/sys/fs/bpf": "bpf", "/sys/kernel/tracing": "tracefs"} {
		if r.FSTypes[mnt] != fs {
			t.Errorf("%s: mounted as %q, want %s", mnt, r.FSTypes[mnt], fs)
		}
	}
	for _, mnt := range []string{"/mnt/ext4", "/mnt/xfs"} {
		if r.Files[mnt] != "ok" {
			t.Errorf("%s: write and read back: %s", mnt, r.Files[mnt])
		}
	}
	if r.BTF <= 0 {
		t.Errorf("/sys/kernel/btf/vmlinux: size %d in the guest", r.BTF)
	}
}

func TestKernelCmdline(t *testing.T) {
	s, err := kernelCmdline([]string{"-v", "-x=1"})
	if err != nil || !strings.HasSuffix(s, " -- -v -x=1") || !strings.Contains(s, "console=ttyS0") {
		t.Errorf("kernelCmdline = %q, %v", s, err)
	}
	for _, bad := range []string{"", "a b", `a"b`} {
		if _, err := kernelCmdline([]string{bad}); err == nil {
			t.Errorf("kernelCmdline accepted %q", bad)
		}
	}
	if s, _ := kernelCmdline(nil); strings.Contains(s, "--") {
		t.Errorf("kernelCmdline(nil) = %q", s)
	}
}

func TestParseMarker(t *testing.T) {
	out := "boot\n[ 1.0] x" + guest.Marker("abc", 7) + "\r\n" + guest.Marker("other", 9) + "\n"
	if code, ok := guest.ParseMarker(out, "abc"); !ok || code != 7 {
		t.Errorf("ParseMarker = %d, %v; want 7", code, ok)
	}
	if _, ok := guest.ParseMarker("KSCOPE-VM-EXIT abc\n", "abc"); ok {
		t.Error("ParseMarker found a marker without a code")
	}
	c := &console{marker: prefixOf("abc"), seen: make(chan struct{})}
	m := guest.Marker("abc", -2)
	_, _ = c.Write([]byte("xx" + m[:5]))
	_, _ = c.Write([]byte(m[5:] + "\r\n"))
	select {
	case <-c.seen:
	default:
		t.Error("console missed a marker split across writes")
	}
}

func TestModulesFor(t *testing.T) {
	k := &kernel{
		release: "test",
		modDir:  "/m",
		config: map[string]string{
			"CONFIG_VIRTIO_PCI": "m", "CONFIG_VIRTIO_BLK": "m", "CONFIG_EXT4_FS": "y",
			"CONFIG_XFS_FS": "m", "CONFIG_CRYPTO_CRC32C": "y",
		},
		paths: map[string]string{
			"virtio": "k/virtio.ko", "virtio_ring": "k/virtio_ring.ko", "virtio_pci": "k/virtio_pci.ko",
			"virtio_blk": "k/virtio_blk.ko", "xfs": "k/xfs.ko.xz", "libcrc32c": "k/libcrc32c.ko",
		},
		deps: map[string][]string{
			"virtio_pci":  {"virtio", "virtio_ring"},
			"virtio_blk":  {"virtio", "virtio_ring"},
			"virtio_ring": {"virtio"},
			"xfs":         {"libcrc32c"},
		},
		builtin: map[string]bool{"ext4": true, "crc32c_generic": true},
	}
	cfg := Config{Disks: []Disk{{FSType: "ext4"}, {FSType: "xfs"}}, Modules: []string{"ext4", "virtio-blk"}}
	got, err := k.modulesFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := "/m/k/virtio.ko /m/k/virtio_ring.ko /m/k/virtio_pci.ko /m/k/virtio_blk.ko /m/k/libcrc32c.ko /m/k/xfs.ko.xz"
	if strings.Join(got, " ") != want {
		t.Errorf("modulesFor = %v\nwant %s", got, want)
	}
	if _, err := k.modulesFor(Config{Modules: []string{"nope"}}); err == nil {
		t.Error("modulesFor accepted a module the kernel lacks")
	}
	delete(k.config, "CONFIG_XFS_FS")
	if _, err := k.modulesFor(cfg); err == nil {
		t.Error("modulesFor accepted a file system the kernel lacks")
	}
}
