package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/cli"
	"github.com/kscope-dev/kscope/internal/hostinfo"
	"github.com/kscope-dev/kscope/internal/jfr"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/profile"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

// Issue 9's acceptance for kscope profile, on real brokers:
//
//   - a topic with compression.type=zstd fed lz4 batches: the broker
//     recompresses every batch, and the profile must show zstd
//     (compression/zstd, decided by zstd-jni frames) as a clear share of
//     the JVM's CPU, with the recompression hint;
//   - the same load, uncompressed, to a topic that keeps the producers'
//     codec: no zstd at all;
//   - the file system of the log dir frozen (fsfreeze) under produce load:
//     the monitor report shows the partition log's lock, the
//     java.lang.Object that UnifiedLog.append synchronizes on, with waits
//     as long as the freeze.
//
// The thresholds rest on measured shares (docs/profile.md): zstd was
// 45-60% of the JVM's CPU on this 2-core machine, the control 0%.
const (
	profileZstdMin    = 0.15  // zstd's share of the JVM's CPU when recompressing
	profileControlMax = 0.005 // ... and when nothing is compressed
	profileDuration   = "20s"
)

func TestProfile(t *testing.T) {
	if _, err := hostinfo.JDKTool("jcmd"); err != nil {
		labtest.Unavailable(t, "%v", err)
	}
	b := labtest.Broker(t, lab.BrokerConfig{Dir: filepath.Join(t.TempDir(), "broker")})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	t.Run("zstd-recompressed", func(t *testing.T) {
		const topic = "profile-zstd"
		profileCreateTopic(ctx, t, b.Addr(), topic, 4, map[string]string{"compression.type": "zstd"})
		dir := t.TempDir()
		rep := profileUnderLoad(ctx, t, b, topic, kgo.Lz4Compression(), "--out", filepath.Join(dir, "zstd.jfr"),
			"--flame", filepath.Join(dir, "flame.html"))
		z := profileCategory(rep, profile.Zstd)
		t.Logf("zstd: %.1f%% of the JVM's CPU, %d of %d busy samples (%.1f%% of them), decided by %+v",
			z.Share*100, z.Samples, rep.Samples.Busy, 100*float64(z.Samples)/float64(max(1, rep.Samples.Busy)), z.Frames)
		if z.Share < profileZstdMin || z.Samples < 20 {
			t.Errorf("zstd is %.1f%% of the JVM's CPU (%d samples), want at least %.0f%% (and 20 samples)", z.Share*100, z.Samples, profileZstdMin*100)
		}
		if len(z.Frames) == 0 || !strings.HasPrefix(z.Frames[0].Frame, "com.github.luben.zstd.") {
			t.Errorf("zstd decided by %+v, want zstd-jni frames", z.Frames)
		}
		hinted := false
		for _, h := range rep.Hints {
			if h.Kind == "compression" && strings.HasPrefix(h.Text, "zstd:") && strings.Contains(h.Text, "recompress") {
				hinted = true
				t.Logf("hint: %s", h.Text)
			}
		}
		if !hinted {
			t.Errorf("no recompression hint in %+v", rep.Hints)
		}
		// The kept recording reads back the same, and the flame graph
		// is one self-contained page.
		pr, err := jfr.ReadProfile(filepath.Join(dir, "zstd.jfr"))
		if err != nil || int64(len(pr.Samples)) != rep.Samples.Java+rep.Samples.Native {
			t.Errorf("kept recording: %d samples, error %v; report %+v", len(pr.Samples), err, rep.Samples)
		}
		page, err := os.ReadFile(filepath.Join(dir, "flame.html"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(page, []byte("default-src 'none'")) || bytes.Contains(page, []byte("<script")) || !bytes.Contains(page, []byte("ZstdOutputStreamNoFinalizer")) {
			t.Errorf("flame graph page: %d bytes, not self-contained or without zstd", len(page))
		}
		i, j := bytes.Index(page, []byte("<svg")), bytes.LastIndex(page, []byte("</svg>"))
		if i < 0 || j < i || !profileWellFormed(page[i:j+len("</svg>")]) {
			t.Errorf("the flame graph's SVG is not well-formed XML")
		}
	})

	t.Run("uncompressed", func(t *testing.T) {
		const topic = "profile-none"
		profileCreateTopic(ctx, t, b.Addr(), topic, 4, nil)
		rep := profileUnderLoad(ctx, t, b, topic, kgo.NoCompression())
		z := profileCategory(rep, profile.Zstd)
		t.Logf("zstd: %.2f%% of the JVM's CPU, %d of %d busy samples; categories %s", z.Share*100, z.Samples, rep.Samples.Busy, profileShares(rep))
		if z.Share >= profileControlMax {
			t.Errorf("zstd is %.2f%% of the JVM's CPU without compression, want under %.1f%%", z.Share*100, profileControlMax*100)
		}
		// Not an empty profile: the broker was busy with the load.
		if rep.Samples.Busy < 20 || profileCategory(rep, profile.Request).Samples == 0 {
			t.Errorf("only %d busy samples, categories %s", rep.Samples.Busy, profileShares(rep))
		}
	})

	t.Run("fsfreeze", func(t *testing.T) { testProfileFreeze(ctx, t) })
}

// testProfileFreeze freezes the log dir's file system twice for 500 ms
// while clients produce, under a 12 s profile.
func testProfileFreeze(ctx context.Context, t *testing.T) {
	labtest.RequireRoot(t)
	for _, tool := range []string{"mkfs.ext4", "mount", "umount", "fsfreeze", "losetup"} {
		if labtest.Tool(tool) == "" {
			labtest.Unavailable(t, "profile e2e: %s not found", tool)
		}
	}
	mnt, _ := iotLoopFS(t, "ext4")
	b := labtest.Broker(t, lab.BrokerConfig{Dir: filepath.Join(t.TempDir(), "broker"), LogDirs: []string{filepath.Join(mnt, "data")},
		ExtraProps: map[string]string{"num.partitions": "4"}})
	const topic = "profile-stall"
	profileCreateTopic(ctx, t, b.Addr(), topic, 4, nil)

	// Synchronous producers, many requests in flight: while a handler
	// holding a partition's log lock is stuck in a frozen write, the
	// others queue on that lock.
	lctx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var wg sync.WaitGroup
	var produced atomic.Int64
	for c := range 4 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
			kgo.ProducerLinger(0), kgo.ClientID(fmt.Sprintf("profile-freeze-%d", c)))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for lctx.Err() == nil {
					if err := cl.ProduceSync(lctx, &kgo.Record{Value: []byte("freeze value")}).FirstErr(); err == nil {
						produced.Add(1)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}()
		}
	}
	defer wg.Wait()
	defer stopLoad()
	time.Sleep(2 * time.Second)

	var rep *profile.Report
	done := make(chan struct{})
	profErr := &logWriter{}
	go func() {
		defer close(done)
		rep = profileRunTo(t, b.PID(), profErr, "--duration", "12s")
	}()
	// The freezes must fall inside the flight recording: jcmd's JFR.start
	// takes seconds on a busy machine (a full-suite run froze before the
	// recording began and saw no long lock wait at all).
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(profErr.String(), "profile: recording pid"); {
		select {
		case <-done:
			t.FailNow()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("kscope profile did not start recording in 60 s")
		}
	}
	recordingAt := time.Now()
	time.Sleep(2 * time.Second)
	var frozen []time.Duration
	for range 2 {
		begin := time.Now()
		iotRun(t, "fsfreeze", "-f", mnt)
		time.Sleep(500 * time.Millisecond)
		iotRun(t, "fsfreeze", "-u", mnt)
		frozen = append(frozen, time.Since(begin))
		time.Sleep(2 * time.Second)
	}
	freezesEnd := time.Since(recordingAt)
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		t.Fatal("kscope profile did not finish")
	}
	stopLoad()
	if rep == nil {
		t.FailNow()
	}
	t.Logf("froze %v, from 2 s to %v into the 12 s recording; %d records produced", frozen, freezesEnd.Round(time.Millisecond), produced.Load())
	var log *profile.Monitor
	for i, m := range rep.Monitors {
		t.Logf("monitor %d: %s (%s) in %s: %d waits, %.0f ms, worst %.0f ms, threads %v, held by %v", i, m.Monitor, m.Kind, m.Site, m.Waits, m.TotalMs, m.WorstMs, m.Threads, m.Owners)
		if log == nil && strings.HasSuffix(m.Site, ".UnifiedLog.append") {
			log = &rep.Monitors[i]
		}
	}
	// Kafka 4.1: UnifiedLog.append runs under synchronized (lock), lock
	// a plain Object; the waiters are request handlers queued behind
	// the one whose write the freeze holds.
	if log == nil {
		t.Fatalf("no lock wait in UnifiedLog.append among %d monitors", len(rep.Monitors))
	}
	if log.Monitor != "java.lang.Object" || log.Kind != "monitor" || log.WorstMs < 200 ||
		len(log.Threads) == 0 || !strings.HasPrefix(log.Threads[0], "data-plane-kafka-request-handler") || len(log.Stack) == 0 {
		t.Errorf("the log lock: %+v", log)
	}
	// The freeze's mark is the longest single wait: by their sum, the
	// network threads' selector monitor (hundreds of waits of up to
	// 10 ms on a busy machine) came within 6% of the log lock once (CI:
	// 899 against 847 ms) and first.
	for i := range rep.Monitors {
		if m := &rep.Monitors[i]; m != log && m.WorstMs >= log.WorstMs {
			t.Errorf("the log lock (worst wait %.0f ms) is not the monitor with the longest wait: %+v", log.WorstMs, *m)
		}
	}
	locked := false
	for _, h := range rep.Hints {
		locked = locked || h.Kind == "lock" && strings.Contains(h.Text, "UnifiedLog.append")
	}
	if !locked {
		t.Errorf("no lock hint for the log lock: %+v", rep.Hints)
	}
}

// profileUnderLoad produces to topic with codec from two clients and
// profiles the broker meanwhile.
func profileUnderLoad(ctx context.Context, t *testing.T, b *lab.Broker, topic string, codec kgo.CompressionCodec, args ...string) *profile.Report {
	t.Helper()
	lctx, stop := context.WithCancel(ctx)
	n, wait := profileLoad(lctx, t, b.Addr(), topic, codec, 2)
	defer func() {
		stop()
		wait()
		t.Logf("%s: %d records produced", topic, n.Load())
	}()
	time.Sleep(3 * time.Second) // the broker's JIT warms up to the load
	rep := profileRun(t, b.PID(), append([]string{"--duration", profileDuration}, args...)...)
	if rep == nil {
		t.FailNow()
	}
	return rep
}

// profileRun runs kscope profile --pid PID --format json ARGS and
// returns its report, or nil after reporting the failure.
func profileRun(t *testing.T, pid int, args ...string) *profile.Report {
	t.Helper()
	return profileRunTo(t, pid, &logWriter{}, args...)
}

// profileRunTo is profileRun with kscope's stderr going to errOut, which
// the caller may read meanwhile.
func profileRunTo(t *testing.T, pid int, errOut *logWriter, args ...string) *profile.Report {
	t.Helper()
	var out bytes.Buffer
	args = append([]string{"profile", "--pid", strconv.Itoa(pid), "--format", "json"}, args...)
	if code := cli.Main(args, &out, errOut); code != 0 {
		t.Errorf("kscope %s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
		return nil
	}
	t.Logf("kscope %s: %s", strings.Join(args, " "), strings.TrimSpace(errOut.String()))
	var rep profile.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Errorf("report: %v", err) // not Fatal: the freeze runs this in a goroutine
		return nil
	}
	t.Logf("%d busy samples (%d Java, %d native, %d idle), K %.1f, JVM %.0f%% of the machine; %s", rep.Samples.Busy, rep.Samples.Java,
		rep.Samples.Native, rep.Samples.Idle, rep.NativeWeight, rep.JVMCPU*100, profileShares(&rep))
	return &rep
}

func profileCategory(rep *profile.Report, name string) profile.Category {
	if rep != nil {
		for _, c := range rep.Categories {
			if c.Name == name {
				return c
			}
		}
	}
	return profile.Category{Name: name}
}

func profileShares(rep *profile.Report) string {
	var parts []string
	for _, c := range rep.Categories {
		parts = append(parts, fmt.Sprintf("%s %.1f%% (%d)", c.Name, c.Share*100, c.Samples))
	}
	return strings.Join(parts, ", ")
}

func profileWellFormed(b []byte) bool {
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// profileCreateTopic creates topic with partitions and configs.
func profileCreateTopic(ctx context.Context, t *testing.T, addr, topic string, partitions int32, configs map[string]string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create %s: error code %d", topic, code)
	}
}

// profileLoad produces compressible 1 KB records to topic with codec
// from clients producers until ctx ends. It returns the count of
// records acknowledged and a wait for the producers to finish.
func profileLoad(ctx context.Context, t *testing.T, addr, topic string, codec kgo.CompressionCodec, clients int) (*atomic.Int64, func()) {
	t.Helper()
	var n atomic.Int64
	words := []string{"kafka", "broker", "partition", "segment", "offset", "replica", "leader", "fetch", "produce", "index"}
	var wg sync.WaitGroup
	var cls []*kgo.Client
	for i := range clients {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec),
			kgo.ProducerLinger(5*time.Millisecond), kgo.ClientID(fmt.Sprintf("profile-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		cls = append(cls, cl)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for ctx.Err() == nil {
				v := make([]byte, 0, 1100)
				for len(v) < 1000 {
					v = append(v, words[rng.IntN(len(words))]...)
					v = fmt.Appendf(v, " %d ", rng.IntN(100000))
				}
				// Produce blocks when the client's buffer is full: the
				// load follows what the broker takes.
				cl.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
					if err == nil {
						n.Add(1)
					}
				})
			}
		}()
	}
	return &n, func() {
		wg.Wait()
		for _, cl := range cls {
			cl.Close()
		}
	}
}
