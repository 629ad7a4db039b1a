package iotrace

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/event"
)

// TestRingKick traces this process's writes with rings polled only every
// hour: a write is not read while nobody kicks (the poller made its
// first pass before it, and its next is far away), and is read by the
// time Kick returns, in the kicker's goroutine. A kick also keeps the
// poller from reading in between: with a poll of 100 ms, writes made
// while kicks come every 50 ms are all read by kicks.
func TestRingKick(t *testing.T) {
	requireRoot(t)
	for _, tc := range []struct {
		name string
		poll time.Duration
	}{{"hour", time.Hour}, {"100ms", 100 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) { ringKick(t, tc.poll) })
	}
}

func ringKick(t *testing.T, poll time.Duration) {
	logDir := t.TempDir()
	partDir := filepath.Join(logDir, "kick-0")
	if err := os.Mkdir(partDir, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(filepath.Join(partDir, "00000000000000000000.log"), unix.O_CREAT|unix.O_RDWR|unix.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var kick RingKick
	tr, err := Open(Config{PID: os.Getpid(), LogDirs: []string{logDir}, RingPoll: poll, Kick: &kick})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var (
		read     atomic.Int64
		inKicker atomic.Bool // the handler ran while a kick was under way
		kicking  atomic.Bool
		outside  atomic.Int64 // reads outside a kick
	)
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() {
		runErr <- tr.Run(ctx, func(*event.Write) error {
			read.Add(1)
			if kicking.Load() {
				inKicker.Store(true)
			} else {
				outside.Add(1)
			}
			return nil
		})
	}()
	defer func() {
		cancel()
		if err := <-runErr; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	doKick := func() {
		kicking.Store(true)
		kick.Kick()
		kicking.Store(false)
	}
	// The poller joins its rings as Run starts; kicks before that find
	// none, and its first passes (no kick has read yet) read what came.
	// Wait until a kick reads a write: from then on kicks hold it back.
	deadline := time.Now().Add(5 * time.Second)
	for !inKicker.Load() {
		if time.Now().After(deadline) {
			t.Fatal("no write read by a kick within 5 s of kicks")
		}
		if _, err := unix.Write(fd, []byte("x")); err != nil {
			t.Fatal(err)
		}
		doKick()
		time.Sleep(10 * time.Millisecond)
	}
	base := read.Load()
	outsideBase := outside.Load()

	if poll == time.Hour {
		if _, err := unix.Write(fd, []byte("y")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		if n := read.Load() - base; n != 0 {
			t.Fatalf("%d writes read without a kick, with a poll of an hour", n)
		}
		doKick()
		if n := read.Load() - base; n != 1 {
			t.Fatalf("%d writes read by the time Kick returned, want 1", n)
		}
		if outside.Load() != outsideBase {
			t.Error("the handler did not run in the kick")
		}
		return
	}
	// Kicks every 50 ms for a second, a write before each: the poller's
	// 100 ms tick is pushed back by every kick, so the kicks read them.
	const writes = 20
	for range writes {
		if _, err := unix.Write(fd, []byte("z")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		doKick()
	}
	if n := read.Load() - base; n != writes {
		t.Fatalf("%d writes read, want %d", n, writes)
	}
	if n := outside.Load() - outsideBase; n != 0 {
		t.Errorf("%d of %d writes read by the poller between kicks 50 ms apart (poll 100 ms), want 0", n, writes)
	}
	// Without kicks the poller reads again at its tick.
	if _, err := unix.Write(fd, []byte("w")); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(2 * time.Second)
	for read.Load()-base != writes+1 {
		if time.Now().After(deadline) {
			t.Fatal("a write after the kicks stopped was not read by the poller within 2 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
