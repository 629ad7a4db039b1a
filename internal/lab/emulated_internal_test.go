package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kscope-dev/kscope/internal/slowdisk"
	"github.com/kscope-dev/kscope/internal/testkit/childtest"
	"github.com/kscope-dev/kscope/internal/testkit/prereq"
)

// requireEmulatedFS skips (fails under CI=true) without root, losetup,
// mkfs.ext4 or /dev/fuse. (labtest imports lab: prereq instead.)
func requireEmulatedFS(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		prereq.Unavailable(t, "ClusterConfig.Device needs root")
	}
	for _, tool := range []string{"losetup", "mkfs.ext4"} {
		if _, err := lookTool(tool); err != nil {
			prereq.Unavailable(t, "%v", err)
		}
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		prereq.Unavailable(t, "no /dev/fuse (ClusterConfig.Device needs it)")
	}
}

// emulatedIsolation plans and sets up one node's ext4 on an emulated
// device in a temp dir, as StartCluster does before starting the JVM.
func emulatedIsolation(t *testing.T) (*isolation, string) {
	t.Helper()
	requireEmulatedFS(t)
	dir := t.TempDir()
	p, _ := slowdisk.Named("fast")
	cfg := ClusterConfig{Dir: dir, Brokers: 1, FS: "ext4", FSSizeMB: 64, Device: &p, DeviceSeed: 1}
	iso, err := planIsolation(dir, 1, cfg, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	places, err := setUpIsolation(context.Background(), iso)
	if err != nil {
		t.Fatal(err)
	}
	emuFile := filepath.Join(dir, EmulatorDirName, slowdisk.DeviceFile)
	if got := slowdisk.LoopBackingFile(places[0].Device); got != emuFile {
		t.Fatalf("node 1's loop device %s is on %q, want the emulator's file %s", places[0].Device, got, emuFile)
	}
	if err := os.WriteFile(filepath.Join(places[0].MountPoint, "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, err := readClusterState(dir)
	if err != nil || cs.FS.Device != "fast" || cs.Nodes[0].FS.EmulatorDir != filepath.Join(dir, EmulatorDirName) {
		t.Fatalf("cluster.json: %+v %v", cs.FS, err)
	}
	return iso, dir
}

func checkEmulatedGone(t *testing.T, dir string) {
	t.Helper()
	for _, m := range []string{filepath.Join(dir, "data"), filepath.Join(dir, EmulatorDirName)} {
		if isMountPoint(m) {
			t.Errorf("%s still mounted", m)
		}
	}
	for _, f := range []string{filepath.Join(dir, FSImageFile), filepath.Join(dir, EmulatorDirName, slowdisk.DeviceFile)} {
		if l := loopsBackedBy(f); len(l) > 0 {
			t.Errorf("loop devices on %s: %v", f, l)
		}
	}
}

// TestEmulatedDeviceTearDown: a node's file system on an emulated device
// (ClusterConfig.Device) is recorded in cluster.json, and the teardown
// of a stop closes it: no mount, no loop device left.
func TestEmulatedDeviceTearDown(t *testing.T) {
	iso, dir := emulatedIsolation(t)
	if err := iso.tearDown(); err != nil {
		t.Fatal(err)
	}
	checkEmulatedGone(t, dir)
}

// emulatedHelperEnv makes the test binary the child of
// TestEmulatedDeviceCleanupAfterCrash.
const emulatedHelperEnv = "KSCOPE_LAB_EMULATED_HELPER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(emulatedHelperEnv); dir != "" {
		os.Exit(runEmulatedHelper(dir))
	}
	os.Exit(m.Run())
}

// runEmulatedHelper sets up a node's ext4 on an emulated device in dir,
// prints "ready" and waits to be killed.
func runEmulatedHelper(dir string) int {
	p, _ := slowdisk.Named("fast")
	cfg := ClusterConfig{Dir: dir, Brokers: 1, FS: "ext4", FSSizeMB: 64, Device: &p}
	iso, err := planIsolation(dir, 1, cfg, nil, false)
	if err == nil {
		_, err = setUpIsolation(context.Background(), iso)
	}
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("ready")
	select {}
}

// TestEmulatedDeviceCleanupAfterCrash: a process serving a node's
// emulated device is killed (SIGKILL) with the node's ext4 mounted on
// it; Cleanup from cluster.json (what `lab broker stop` runs) removes
// the ext4 mount, the loop device and the FUSE mount whose server is
// gone.
func TestEmulatedDeviceCleanupAfterCrash(t *testing.T) {
	requireEmulatedFS(t)
	dir := t.TempDir()
	child, first := childtest.Start(t, emulatedHelperEnv+"="+dir)
	cmd := child.Cmd
	if first != "ready" {
		t.Fatalf("child: %q", first)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !isMountPoint(filepath.Join(dir, EmulatorDirName)) {
		t.Fatal("no FUSE mount left by the killed process: nothing to test")
	}
	if err := Cleanup(dir); err != nil {
		t.Fatal(err)
	}
	checkEmulatedGone(t, dir)
}

// TestDeviceNeedsFSNotDetach: Device without FS, or with Detach, is
// refused before anything is made.
func TestDeviceNeedsFSNotDetach(t *testing.T) {
	p, _ := slowdisk.Named("fast")
	for _, c := range []struct {
		cfg  ClusterConfig
		want string
	}{
		{ClusterConfig{Device: &p}, "needs FS"},
		{ClusterConfig{Device: &p, FS: "ext4", Detach: true}, "cannot be Detach"},
	} {
		c.cfg.Dir = t.TempDir()
		iso := &isolation{dir: c.cfg.Dir}
		if c.cfg.FS != "" {
			iso.st.FS = &clusterFS{Type: c.cfg.FS}
		}
		if err := iso.planDevice(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}
