package fsbench

// The emulated slow device (Config.Device, `kscope lab fs --device`):
// each run's image is served by package slowdisk's FUSE file system, and
// the loop device is attached to that file instead of the image, so
// every variant's file system sits on a device with the profile's
// latencies.

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"time"

	"github.com/kscope-dev/kscope/internal/slowdisk"
)

// slowLoopDevice starts the emulator on img (a run's image) and returns
// its loop device. The emulator is one resource on the stack, a mount:
// its undo detaches the loop device and unmounts the FUSE file system
// (the file system on the loop device is unmounted before, being above
// it on the stack). A killed run leaves a FUSE mount whose server is
// gone and a loop device on its file; sweep removes both.
func (r *runner) slowLoopDevice(img, tag string, rr *RunResult) (string, error) {
	dir := filepath.Join(r.dir, tag+".dev")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	if err := r.st.push(&item{Kind: kindDir, Path: dir, undo: func() error { return os.Remove(dir) }}); err != nil {
		return "", err
	}
	dev, err := slowdisk.Start(context.Background(), slowdisk.Config{
		Image: img, MountDir: dir, Profile: *r.cfg.Device, Seed: runSeed(r.cfg.DeviceSeed, tag),
	})
	if err != nil {
		return "", err
	}
	if rr != nil {
		rr.Emulated = &EmulatedDevice{Profile: r.cfg.Device.Name, File: dev.File()}
	}
	if err := r.st.push(&item{Kind: kindMount, Path: dir, Dev: dev.Loop(), Name: "slow device " + dev.Loop(), undo: r.closeDevice(tag, dev, rr)}); err != nil {
		return "", err
	}
	logf(r.cfg.Progress, "%s: %s is an emulated %s device (%s)", tag, dev.Loop(), r.cfg.Device.Name, r.cfg.Device.Source)
	return dev.Loop(), nil
}

// closeDevice is the emulator's undo: Close, then a line with what it
// served, so that a run's progress shows how much the device held, and
// the same counts in the run's result (rr, when not nil): the run
// unwinds before its result is returned, so they are there by then.
func (r *runner) closeDevice(tag string, dev *slowdisk.Device, rr *RunResult) func() error {
	return func() error {
		err := dev.Close()
		st := dev.Stats()
		if rr != nil && rr.Emulated != nil {
			rr.Emulated.served(st)
		}
		logf(r.cfg.Progress, "%s: the emulated device served %d reads, %d writes, %d flushes (%d unheld while closing)",
			tag, st.Requests[slowdisk.OpRead], st.Requests[slowdisk.OpWrite], st.Requests[slowdisk.OpFlush], st.Unheld)
		return err
	}
}

// runSeed is a run's seed: the configured one mixed with the run's tag,
// so that trials differ and a rerun with the same seed repeats them.
func runSeed(seed uint64, tag string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", seed, tag)
	return h.Sum64()
}

// isEmulatorMount reports whether a mount is an emulator's FUSE file
// system, which sweep unmounts only once the loop devices on its file
// are detached.
func isEmulatorMount(fsType string) bool { return fsType == slowdisk.FSType }

// DeviceProfile is the emulated device of a run, in its result.
type DeviceProfile struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	Seed   uint64 `json:"seed"`
}

// EmulatedDevice is the emulated slow device of one run: its profile,
// the FUSE file its loop device is attached to, and what it served
// (requests of each kind and the mean time each was held, from the
// emulator's own counts).
type EmulatedDevice struct {
	Profile string `json:"profile"`
	File    string `json:"file"`
	Reads   uint64 `json:"reads"`
	Writes  uint64 `json:"writes"`
	Flushes uint64 `json:"flushes"`
	// Mean*HeldMs: the mean time a request of the kind was held.
	MeanReadHeldMs  float64 `json:"mean_read_held_ms"`
	MeanWriteHeldMs float64 `json:"mean_write_held_ms"`
	MeanFlushHeldMs float64 `json:"mean_flush_held_ms"`
	// Unheld counts requests served without their latency: the device
	// was closing or the kernel interrupted them.
	Unheld uint64 `json:"unheld"`
}

// served sets the counts from the emulator's Stats.
func (e *EmulatedDevice) served(st slowdisk.Stats) {
	e.Reads, e.Writes, e.Flushes = st.Requests[slowdisk.OpRead], st.Requests[slowdisk.OpWrite], st.Requests[slowdisk.OpFlush]
	e.MeanReadHeldMs = meanHeldMs(st, slowdisk.OpRead)
	e.MeanWriteHeldMs = meanHeldMs(st, slowdisk.OpWrite)
	e.MeanFlushHeldMs = meanHeldMs(st, slowdisk.OpFlush)
	e.Unheld = st.Unheld
}

// meanHeldMs is the mean hold of op's requests in ms, 0 without any.
func meanHeldMs(st slowdisk.Stats, op slowdisk.Op) float64 {
	if st.Requests[op] == 0 {
		return 0
	}
	return float64(st.Held[op]) / float64(st.Requests[op]) / float64(time.Millisecond)
}
