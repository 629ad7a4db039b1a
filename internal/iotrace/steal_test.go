package iotrace

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

func TestDecodeStealEvent(t *testing.T) {
	b := make([]byte, stealEventSize)
	binary.LittleEndian.PutUint64(b[0:], 1000)
	binary.LittleEndian.PutUint64(b[8:], 5000)
	binary.LittleEndian.PutUint64(b[16:], 3000)
	binary.LittleEndian.PutUint32(b[24:], 1)
	binary.LittleEndian.PutUint32(b[28:], 77)
	binary.LittleEndian.PutUint32(b[32:], 70)
	tests := []struct {
		name string
		in   []byte
		ok   bool
	}{
		{"whole", b, true},
		{"short", b[:stealEventSize-1], false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, ok := decodeStealEvent(tt.in)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if ok && (ev.StartNs != 1000 || ev.EndNs != 5000 || ev.StolenNs != 3000 || ev.Cpu != 1 || ev.Tid != 77 || ev.Tgid != 70) {
				t.Errorf("decoded %+v", ev)
			}
		})
	}
}

// procStatSteal reads every CPU's steal time from /proc/stat (USER_HZ
// ticks, 10 ms each on Linux).
func procStatSteal(t *testing.T) map[int]time.Duration {
	t.Helper()
	f, err := os.Open("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int]time.Duration{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 9 || !strings.HasPrefix(fields[0], "cpu") || fields[0] == "cpu" {
			continue
		}
		cpu, err := strconv.Atoi(strings.TrimPrefix(fields[0], "cpu"))
		if err != nil {
			continue
		}
		ticks, err := strconv.ParseUint(fields[8], 10, 64)
		if err != nil {
			t.Fatalf("/proc/stat: %q: %v", sc.Text(), err)
		}
		out[cpu] = time.Duration(ticks) * 10 * time.Millisecond
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStealMatchesProcStat: the steal traced per context switch must add
// up, per CPU, to what the kernel's own accounting (/proc/stat, tick by
// tick from the same steal clock) counts over the same time, while every
// CPU is kept busy.
func TestStealMatchesProcStat(t *testing.T) {
	requireRoot(t)
	tr, err := Open(Config{PID: os.Getpid(), LogDirs: []string{t.TempDir()}, Steal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var (
		mu  sync.Mutex
		all []*event.CPUSteal
		n   int
		bad []string
	)
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() {
		runErr <- tr.RunAll(ctx, Handlers{Steal: func(s *event.CPUSteal) error {
			mu.Lock()
			defer mu.Unlock()
			n++
			if !s.End.After(s.Start) || s.StolenMs <= 0 {
				bad = append(bad, fmt.Sprintf("%+v", *s))
			}
			all = append(all, s)
			return nil
		}})
	}()
	from := time.Now()
	before := procStatSteal(t)
	// Busy on every CPU: steal is only counted while a vCPU wants to run.
	deadline := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Go(func() {
			for x := 0; time.Now().Before(deadline); x++ {
				if x%1000 == 0 {
					runtime.Gosched()
				}
			}
		})
	}
	wg.Wait()
	after := procStatSteal(t)
	to := time.Now()
	// The tracer reads its ring until flushed: every interval up to now.
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	st, err := tr.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d steal intervals, %d context switches seen, stats %+v", n, st.StealSwitches, st)
	if st.StealSwitches == 0 {
		t.Fatal("bpf/iosteal.bpf.c saw no context switch")
	}
	if st.StealRingbufDrops != 0 {
		t.Errorf("%d steal intervals lost", st.StealRingbufDrops)
	}
	// Steal is summed over the intervals that end between the two reads
	// of /proc/stat.
	traced := map[int]time.Duration{}
	for _, s := range all {
		if !s.End.Before(from) && !s.End.After(to) {
			traced[s.CPU] += s.Stolen()
		}
	}
	for _, b := range bad {
		t.Errorf("empty or backward steal interval: %s", b)
	}
	for cpu, b := range before {
		want := after[cpu] - b
		got := traced[cpu]
		// /proc/stat is in 10 ms units, read at two ends, and counts at
		// ticks (4 ms at HZ=250) what the run queue counts at switches.
		tol := 30*time.Millisecond + want/10
		t.Logf("cpu%d: traced %v of steal, /proc/stat %v", cpu, got.Round(time.Microsecond), want)
		if d := got - want; d > tol || d < -tol {
			t.Errorf("cpu%d: traced %v of steal, /proc/stat counted %v (tolerance %v)", cpu, got, want, tol)
		}
	}
}
