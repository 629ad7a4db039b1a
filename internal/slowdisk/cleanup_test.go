package slowdisk

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/testkit/childtest"
)

// helperEnv makes the test binary the child of TestInterruptCleansUp.
const helperEnv = "KSCOPE_SLOWDISK_HELPER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		os.Exit(runHelper(dir))
	}
	os.Exit(m.Run())
}

// runHelper is the child: an emulated device with ext4 mounted on it, in
// dir (image, fuse, mnt made by the parent); it prints "ready LOOP" and
// on SIGINT unmounts and closes, as `kscope lab fs` does when
// interrupted.
func runHelper(dir string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	p, _ := Named("hdd-busy")
	dev, err := Start(ctx, Config{Image: filepath.Join(dir, "image"), MountDir: filepath.Join(dir, "fuse"), Profile: p, Seed: 1})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	mnt := filepath.Join(dir, "mnt")
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", dev.Loop()).CombinedOutput(); err != nil {
		fmt.Println("error mkfs", err, string(out))
		return 1
	}
	if err := unix.Mount(dev.Loop(), mnt, "ext4", 0, ""); err != nil {
		fmt.Println("error mount", err)
		return 1
	}
	// Writes in flight when the interrupt comes: held by the profile.
	go func() {
		for i := 0; ctx.Err() == nil; i++ {
			_ = os.WriteFile(filepath.Join(mnt, "f"), make([]byte, 1<<16), 0o644)
			unix.Sync()
		}
	}()
	fmt.Println("ready", dev.Loop())
	<-ctx.Done()
	if err := unmountRetry(mnt); err != nil {
		fmt.Println("error unmount", err)
	}
	if err := dev.Close(); err != nil {
		fmt.Println("error close", err)
		return 1
	}
	return 0
}

func unmountRetry(mnt string) error {
	var err error
	for range 50 {
		if err = unix.Unmount(mnt, 0); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// emulatorDirs makes dir/image (64 MiB, sparse), dir/fuse and dir/mnt.
func emulatorDirs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "image"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, "image"), 64<<20); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"fuse", "mnt"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// checkNothingLeft: no mount on dir's fuse and mnt, no loop device on
// the emulator's file, and (in this process) no go-fuse goroutine.
func checkNothingLeft(t *testing.T, dir, loop string, inProcess bool) {
	t.Helper()
	for _, d := range []string{"fuse", "mnt"} {
		if p := filepath.Join(dir, d); mounted(t, p) {
			t.Errorf("%s still mounted", p)
			_ = unix.Unmount(p, unix.MNT_DETACH)
		}
	}
	if loop != "" {
		if back := LoopBackingFile(loop); back != "" {
			t.Errorf("%s still attached to %s", loop, back)
		}
	}
	if !inProcess {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "hanwen/go-fuse") {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("go-fuse goroutines left:\n%s", stacks)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCloseCleansUp: Close after the file system on the loop device is
// unmounted detaches the loop device, unmounts FUSE and ends its server;
// Close while it is still mounted fails and keeps serving (the file
// system on it keeps working), and succeeds once it is unmounted.
func TestCloseCleansUp(t *testing.T) {
	requireDeviceTools(t)
	p, _ := Named("fast")
	e := startEmulated(t, p, 64)
	dir := filepath.Dir(e.mnt)
	loop := e.dev.Loop()
	if err := e.dev.Close(); err == nil || !strings.Contains(err.Error(), "still in use") {
		t.Fatalf("Close with ext4 mounted: %v, want still in use", err)
	}
	if err := os.WriteFile(filepath.Join(e.mnt, "after"), []byte("x"), 0o644); err != nil {
		t.Fatalf("the file system stopped working after a refused Close: %v", err)
	}
	unix.Sync()
	if err := unix.Unmount(e.mnt, 0); err != nil {
		t.Fatal(err)
	}
	if err := e.dev.Close(); err != nil {
		t.Fatal(err)
	}
	checkNothingLeft(t, dir, loop, true)
	if err := e.dev.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

// TestStartFailureCleansUp: a Start that fails half-way (no losetup, so
// after the FUSE mount; or its context ended) leaves nothing behind.
func TestStartFailureCleansUp(t *testing.T) {
	requireDeviceTools(t)
	p, _ := Named("fast")
	cases := []struct {
		name string
		prep func(t *testing.T) context.Context
		want string
	}{
		{"no losetup", func(t *testing.T) context.Context {
			t.Setenv("PATH", t.TempDir())
			return context.Background()
		}, "losetup"},
		{"context ended", func(t *testing.T) context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, "context canceled"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := emulatorDirs(t)
			ctx := c.prep(t)
			dev, err := Start(ctx, Config{Image: filepath.Join(dir, "image"), MountDir: filepath.Join(dir, "fuse"), Profile: p})
			if err == nil {
				dev.Close()
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want %q", err, c.want)
			}
			checkNothingLeft(t, dir, "", true)
			if back := loopsOn(filepath.Join(dir, "fuse", DeviceFile)); back != "" {
				t.Errorf("loop device %s left", back)
			}
		})
	}
}

// TestInterruptCleansUp: a process running the emulator under a mounted
// ext4, with writes in flight, gets SIGINT: it exits 0 and leaves no
// mount, no loop device and no process.
func TestInterruptCleansUp(t *testing.T) {
	requireDeviceTools(t)
	dir := emulatorDirs(t)
	child, first := childtest.Start(t, helperEnv+"="+dir)
	cmd, lines := child.Cmd, child.Lines
	if !strings.HasPrefix(first, "ready ") {
		t.Fatalf("child: %q", first)
	}
	loop := strings.TrimPrefix(first, "ready ")
	time.Sleep(500 * time.Millisecond) // writes in flight
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for lines.Scan() {
			t.Logf("child: %s", lines.Text())
		}
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("child: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("child still running 60 s after SIGINT")
	}
	if err := syscall.Kill(cmd.Process.Pid, 0); err == nil {
		t.Errorf("child pid %d still exists", cmd.Process.Pid)
	}
	checkNothingLeft(t, dir, loop, false)
}

// loopsOn names a loop device whose backing file is file, "" for none.
func loopsOn(file string) string {
	devs, _ := filepath.Glob("/sys/block/loop*")
	for _, d := range devs {
		if LoopBackingFile("/dev/"+filepath.Base(d)) == file {
			return "/dev/" + filepath.Base(d)
		}
	}
	return ""
}

// TestCloseWithFileHeldOpen: a process holding the emulator's file open
// makes the unmount fail; Close then detaches the mount lazily and does
// not wait for the holder for ever (where fusectl is mounted it aborts
// the connection; where not, it gives up after serverWait and says
// why). Once the holder lets go, nothing is left.
func TestCloseWithFileHeldOpen(t *testing.T) {
	requireDeviceTools(t)
	dir := emulatorDirs(t)
	p, _ := Named("fast")
	dev, err := Start(context.Background(), Config{Image: filepath.Join(dir, "image"), MountDir: filepath.Join(dir, "fuse"), Profile: p})
	if err != nil {
		t.Fatal(err)
	}
	loop := dev.Loop()
	held, err := os.Open(dev.File())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = dev.Close()
	if took := time.Since(start); took > serverWait+5*time.Second {
		t.Errorf("Close took %v", took)
	}
	if err != nil && !strings.Contains(err.Error(), "holds device open") {
		t.Errorf("Close: %v", err)
	}
	held.Close()
	checkNothingLeft(t, dir, loop, true)
}
