package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/recording"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

// The cold data a lagging consumer reads: coldPartitions partitions of
// coldPerPartition bytes in records of coldRecord bytes, incompressible.
const (
	coldTopic        = "explain-cold"
	coldPartitions   = 4
	coldRecord       = 128 << 10
	coldPerPartition = 40 << 20
	coldRecords      = coldPerPartition / coldRecord // per partition
	coldClientID     = "kscope-cold-consumer"
	// coldReadLimit is the log device's read limit in the broker's blkio
	// cgroup during an injection: a disk far slower than the page cache.
	// At 16 MB/s each 8 MB fetch holds the network thread about half a
	// second, in sleeps of 50-200 ms (one per readahead), and a window
	// ends with the consumer closing its connection during a fetch,
	// which then stays unanswered (4 MB/s holds one fetch the whole
	// window).
	coldReadLimit = 16 << 20
)

// TestExplainNetworkThreadBlocked is issue 16's scenario for
// network-thread-blocked (LINE's KAFKA-7504): a broker with one network
// thread, so that every connection shares it; recordScenario's producers;
// and three times for 1.2 s a consumer reading data that is no longer in
// the page cache, with the log device's reads throttled in the broker's
// blkio cgroup. Kafka answers a Fetch with sendfile from the network
// thread: reading cold pages, that thread sleeps in the kernel, and the
// producers' connections wait. explain must put at least 90% of the slow
// requests in those windows on network-thread-blocked with the cold
// consumer's fetch in the evidence; a control run, the same consumer
// reading the same data from the page cache, must name no such fetch.
func TestExplainNetworkThreadBlocked(t *testing.T) {
	iotRequire(t)
	libs := labtest.RequireKafka(t)
	mnt, dev := iotLoopFS(t, "ext4")
	logDir := filepath.Join(mnt, "data")
	b := labtest.Broker(t, lab.BrokerConfig{
		Dir:     filepath.Join(t.TempDir(), "broker"),
		Port:    19641,
		LibsDir: libs,
		LogDirs: []string{logDir},
		// One network (processor) thread serves every connection: the
		// consumer's and the producers'.
		ExtraProps: map[string]string{"num.partitions": "4", "num.network.threads": "1"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const topic = "explain-netblocked"

	profileCreateTopic(ctx, t, b.Addr(), coldTopic, coldPartitions, nil)
	start := time.Now()
	fillCold(ctx, t, b.Addr())
	segs, err := filepath.Glob(filepath.Join(logDir, coldTopic+"-*", "*.log"))
	if err != nil || len(segs) < coldPartitions {
		t.Fatalf("segments of %s: %v %v", coldTopic, segs, err)
	}
	t.Logf("filled %s: %d MB in %d segments in %v", coldTopic, coldPartitions*coldPerPartition>>20, len(segs), time.Since(start).Round(time.Millisecond))

	cg := brokerBlkioCgroup(t, b.PID())
	limit := filepath.Join(cg, "blkio.throttle.read_bps_device")
	t.Cleanup(func() { os.WriteFile(limit, []byte(dev+" 0"), 0o644) })

	record := func(t *testing.T, inject func(context.Context) []freezeWindow) (string, []freezeWindow) {
		dir, windows, meta := recordKept(ctx, t, b, logDir, topic, inject)
		t.Logf("capture: %+v; trace: %+v", meta.Capture, meta.Trace)
		return dir, windows
	}
	// consume runs the cold consumer three times for 1.2 s, each time on
	// another third of every partition (so what an earlier window read
	// into the page cache is not read again), with prepare before each
	// and lift at the end of each.
	consume := func(ctx context.Context, t *testing.T, prepare, throttle, lift func()) []freezeWindow {
		var ws []freezeWindow
		for i := range 3 {
			time.Sleep(800 * time.Millisecond)
			// It joins its group first, its fetches paused: the window
			// is its reading, not its joining.
			resume, stop := coldConsumer(ctx, t, b.Addr(), coldWindowOffset(i))
			prepare()
			var w freezeWindow
			w.frozeAt = time.Now()
			throttle()
			w.frozen = time.Now()
			resume()
			time.Sleep(1200 * time.Millisecond)
			w.thawAt = time.Now()
			// Lifted before the consumer stops: its fetch in flight then
			// completes, so the capture has it answered.
			lift()
			w.thawed = time.Now()
			n, polls := stop()
			t.Logf("window %d: the cold consumer read %.1f MB in %d polls", i, float64(n)/(1<<20), polls)
			ws = append(ws, w)
		}
		time.Sleep(800 * time.Millisecond)
		return ws
	}

	// The control reads the same ranges, all in the page cache and with
	// no read limit: the consumer's fetches keep the network thread busy
	// on a CPU, but not asleep in the kernel. A finding may be slow for
	// other reasons (a p99 always has some), but none may rest on the
	// cold consumer's fetch blocking the network thread.
	t.Run("control", func(t *testing.T) {
		warm := func() {
			for _, s := range segs {
				if _, err := os.ReadFile(s); err != nil {
					t.Fatal(err)
				}
				if r := pageCacheShare(t, s); r < 0.99 {
					t.Fatalf("%s: %.0f%% in the page cache after reading it", s, 100*r)
				}
			}
		}
		warm()
		dir, _ := record(t, func(ctx context.Context) []freezeWindow {
			return consume(ctx, t, warm, func() {}, func() {})
		})
		findings, sum := runExplain(t, dir)
		t.Logf("control: %d produce requests, p99 %.1f ms, causes %s", sum.ProduceRequests, sum.ThresholdMs, causeCounts(sum))
		for _, f := range findings {
			t.Logf("control: %s/%d %.1f ms: %s: %s", f.Client, f.CorrelationID, f.LatencyMs, f.Cause, f.Detail)
			if blockedByColdFetch(f, nil) {
				t.Errorf("control run: %s/%d put on the cold consumer's fetch blocking the network thread: %s", f.Client, f.CorrelationID, f.Detail)
			}
		}
		checkColdFetchesCaptured(t, dir)
		// explain --api fetch: the cold reader's fetches, served from the
		// page cache, may be slow on two busy CPUs, but none came from disk.
		// Every fetch of 1 ms or more is judged, not only the p99's one.
		fetches, fsum := runExplain(t, dir, "--api", "fetch", "--slow", "1ms")
		t.Logf("control, --api fetch: %d fetches, %d judged, causes %s", fsum.FetchRequests, len(fetches), causeCounts(fsum))
		for _, f := range fetches {
			if f.Cause == explain.CauseDiskRead {
				t.Errorf("control run: fetch %s/%d put on a disk read (data in the page cache): %s", f.Client, f.CorrelationID, f.Detail)
			}
		}
	})

	t.Run("cold-consumer", func(t *testing.T) {
		evict := func() {
			for _, s := range segs {
				dropFromPageCache(t, s)
			}
		}
		dir, windows := record(t, func(ctx context.Context) []freezeWindow {
			return consume(ctx, t, evict,
				func() { writeFile(t, limit, fmt.Sprintf("%s %d", dev, coldReadLimit)) },
				func() { writeFile(t, limit, dev+" 0") })
		})
		checkColdFetchesCaptured(t, dir)
		evidence := func(f *explain.Finding) bool { return blockedByColdFetch(f, windows) }
		// The measure: the slow requests by the recording's p99
		// (here those held nearly the whole window).
		t.Run("p99", func(t *testing.T) {
			checkCause(t, dir, windows, explain.CauseNetworkThreadBlocked, evidence)
		})
		// Stricter: every request of 100 ms or more, including those that
		// came late in a window, or were read between two of the thread's
		// sleeps.
		t.Run("100ms", func(t *testing.T) {
			checkCause(t, dir, windows, explain.CauseNetworkThreadBlocked, evidence, "--slow", "100ms")
		})
		// Which of the consumer's fetches the findings rest on: answered,
		// or cut off by the consumer closing (the thread still read them).
		findings, _ := runExplain(t, dir, "--slow", "100ms")
		offsets := map[string]int{}
		var behind []int64 // how far behind the high watermark the answered ones read
		for _, f := range findings {
			for _, bf := range f.BlockingFetches {
				if bf.ClientID == coldClientID && len(bf.Partitions) > 0 && bf.Partitions[0].FetchOffset != nil {
					offsets[fmt.Sprintf("%d/%v", *bf.Partitions[0].FetchOffset, bf.Unanswered)]++
					if b := bf.Partitions[0].Behind; b != nil {
						behind = append(behind, *b)
					}
				}
			}
		}
		t.Logf("cold fetches in the evidence (offset/unanswered: findings): %v; records behind the high watermark: %v", offsets, behind)
		// The consumer reads the first two thirds of a filled topic: its
		// answered fetches are that far behind.
		if !slices.ContainsFunc(behind, func(b int64) bool { return b >= coldRecords/3 }) {
			t.Errorf("no answered cold fetch in the evidence says it read %d or more records behind the high watermark: %v", coldRecords/3, behind)
		}
		t.Run("the cold reader named", func(t *testing.T) { checkColdReaderNamed(t, dir, findings) })
		t.Run("explain --api fetch", func(t *testing.T) { checkColdFetchesFromDisk(t, dir, windows) })
	})
}

// fillCold writes coldPerPartition bytes of incompressible records to
// each partition of coldTopic.
func fillCold(ctx context.Context, t *testing.T, addr string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(coldTopic), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ClientID("kscope-cold-fill"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	value := make([]byte, coldRecord)
	rand.Read(value)
	var mu sync.Mutex
	var firstErr error
	for i := range coldRecords {
		for p := range coldPartitions {
			cl.Produce(ctx, &kgo.Record{Value: value, Partition: int32(p), Key: fmt.Appendf(nil, "%d", i)}, func(_ *kgo.Record, err error) {
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			})
		}
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if firstErr != nil {
		t.Fatalf("filling %s: %v", coldTopic, firstErr)
	}
}

// coldGroup is the cold consumer's group: the finding must name it.
const coldGroup = "kscope-cold-backfill"

// coldConsumer starts a consumer of coldTopic in coldGroup from offset on
// every partition (committed for the group before it joins), with large
// fetches paused until resume, and returns resume and stop. The consumer
// polls until it has 16 MB (about as much as a cold window reads: in the
// control it would otherwise read the page cache as fast as lo carries
// it). stop waits up to 5 s for the first fetch to be answered (so the
// capture has it whole), ends the consumer (leaving the group), and says
// how many bytes and polls it got.
func coldConsumer(ctx context.Context, t *testing.T, addr string, offset int64) (resume func(), stop func() (read int64, polls int)) {
	t.Helper()
	commitColdOffsets(ctx, t, addr, offset)
	assigned := make(chan struct{}, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(coldClientID),
		kgo.ConsumerGroup(coldGroup), kgo.ConsumeTopics(coldTopic), kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			select {
			case assigned <- struct{}{}:
			default:
			}
		}),
		kgo.FetchMaxBytes(8<<20), kgo.FetchMaxPartitionBytes(4<<20))
	if err != nil {
		t.Fatal(err)
	}
	cl.PauseFetchTopics(coldTopic)
	ctx, cancel := context.WithCancel(ctx)
	var n int64
	var polls int
	got, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		signalled := false
		for ; polls < 100 && n < 16<<20 && ctx.Err() == nil; polls++ {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) { n += int64(len(r.Value)) })
			if n > 0 && !signalled {
				close(got)
				signalled = true
			}
		}
	}()
	select {
	case <-assigned:
	case <-time.After(30 * time.Second):
		t.Fatalf("the cold consumer was not assigned %s within 30 s", coldTopic)
	}
	return func() { cl.ResumeFetchTopics(coldTopic) }, func() (int64, int) {
		select {
		case <-got:
		case <-done:
		case <-time.After(5 * time.Second):
			t.Errorf("the cold consumer got nothing within 5 s of the read limit's end")
		}
		cancel()
		<-done
		cl.Close()
		return n, polls
	}
}

// commitColdOffsets commits offset on every partition of coldTopic for
// coldGroup (empty between windows: the last window's consumer left).
func commitColdOffsets(ctx context.Context, t *testing.T, addr string, offset int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = coldGroup, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = coldTopic
	for p := range coldPartitions {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = int32(p), offset
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("commit %s offsets: %v", coldGroup, err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				t.Fatalf("commit %s offsets: %s-%d: %v", coldGroup, rt.Topic, rp.Partition, err)
			}
		}
	}
}

// dropFromPageCache writes path's dirty pages and drops all its pages
// from the page cache (only that file's, unlike drop_caches), and checks
// that they are gone.
func dropFromPageCache(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Dirty pages are not dropped: write them first.
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	if r := pageCacheShare(t, path); r > 0.05 {
		t.Fatalf("%s: %.0f%% still in the page cache after FADV_DONTNEED", path, 100*r)
	}
}

// pageCacheShare is the share of path's pages in the page cache
// (mincore of a mapping of it).
func pageCacheShare(t *testing.T, path string) float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() == 0 {
		return 1
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	page := os.Getpagesize()
	vec := make([]byte, (len(m)+page-1)/page)
	// x/sys/unix has no wrapper for mincore(2).
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore %s: %v", path, errno)
	}
	in := 0
	for _, v := range vec {
		in += int(v & 1)
	}
	return float64(in) / float64(len(vec))
}

// coldWindowOffset is where the cold consumer starts reading in window i:
// each window reads another third of every partition.
func coldWindowOffset(i int) int64 { return int64(i * coldRecords / 3) }

// blockedByColdFetch: f is put on its network thread blocked, asleep in
// sendfile (reading the page cache's misses), and the cold consumer's
// fetch of coldTopic is among the fetches that thread served then. With
// windows, every fetch of the cold consumer in its evidence must be of
// the window f was in (by the offsets read): a fetch of another window
// is not what blocked it.
func blockedByColdFetch(f *explain.Finding, windows []freezeWindow) bool {
	if f.Cause != explain.CauseNetworkThreadBlocked {
		return false
	}
	sendfile := false
	for _, k := range f.NetworkThreadWaits {
		sendfile = sendfile || strings.Contains(strings.Join(k.Stack, " "), "sendfile")
	}
	if !sendfile {
		return false
	}
	win := -1
	for i, w := range windows {
		if w.overlaps(f.Arrival, f.End, 0) {
			win = i
			break
		}
	}
	cold := 0
	for _, bf := range f.BlockingFetches {
		if bf.ClientID != coldClientID || len(bf.Partitions) == 0 || bf.Partitions[0].Topic != coldTopic {
			continue
		}
		if win >= 0 {
			off := bf.Partitions[0].FetchOffset
			if off == nil || *off < coldWindowOffset(win) || *off >= coldWindowOffset(win+1) {
				return false
			}
		}
		cold++
	}
	return cold > 0
}

// checkColdFetchesCaptured: the recording has the cold consumer's
// answered fetches of coldTopic (the evidence explain looks for).
func checkColdFetchesCaptured(t *testing.T, dir string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, recording.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range bytes.Split(data, []byte("\n")) {
		var r event.Request
		if len(line) == 0 || json.Unmarshal(line, &r) != nil {
			continue
		}
		if r.ClientID == coldClientID && r.API == "Fetch" && r.Answered && r.ResponseBytes > coldRecord {
			n++
		}
	}
	t.Logf("%d answered fetches of the cold consumer captured", n)
	if n == 0 {
		t.Errorf("no answered fetch of %s in the capture", coldClientID)
	}
}

// checkColdReaderNamed: the network-thread-blocked findings name the
// cold reader as the operator knows it: its consumer group, its client,
// the topic-partition, how far behind the high watermark it read, and how
// much the log device read while its fetch was served; in the JSON and
// in the table of one of those requests (--request).
func checkColdReaderNamed(t *testing.T, dir string, findings []*explain.Finding) {
	t.Helper()
	named := 0
	var disk int64
	var example *explain.Finding
	for _, f := range findings {
		if f.Cause != explain.CauseNetworkThreadBlocked {
			continue
		}
		for _, bf := range f.BlockingFetches {
			if bf.ClientID != coldClientID || bf.Unanswered || len(bf.Partitions) == 0 {
				continue
			}
			p := bf.Partitions[0]
			if bf.Group == coldGroup && p.Topic == coldTopic && p.Behind != nil && *p.Behind >= coldRecords/3 && bf.DiskReadBytes >= 1<<20 {
				named++
				disk = max(disk, bf.DiskReadBytes)
				example = f
			}
		}
	}
	t.Logf("%d findings name the cold reader whole; the most read from disk during one of its fetches: %.1f MB", named, float64(disk)/(1<<20))
	if named == 0 {
		t.Fatalf("no network-thread-blocked finding names %s of group %s reading %s %d or more records behind with 1 MB or more read from disk",
			coldClientID, coldGroup, coldTopic, coldRecords/3)
	}
	// The table of one request: its timeline and the cause's detail.
	id := fmt.Sprintf("%s/%d", example.Client, example.CorrelationID)
	out, errOut, code := runCLI([]string{"explain", dir, "--slow", "100ms", "--request", id})
	if code != 0 {
		t.Fatalf("explain: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"of consumer group " + coldGroup, coldClientID, "records behind the high watermark", "read from disk while it was served"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain --request %s lacks %q", id, want)
		}
	}
	if t.Failed() {
		t.Logf("explain --request %s:\n%s", id, out)
	}
}

// checkColdFetchesFromDisk: explain --api fetch on the cold run puts the
// cold reader's slow fetches in the windows on disk-read, with the pages
// its network thread read into the page cache as evidence (the page-cache
// tracepoint is on this kernel), and never on purgatory.
func checkColdFetchesFromDisk(t *testing.T, dir string, windows []freezeWindow) {
	t.Helper()
	// The cold reader makes a few large fetches a window (9 in all in one
	// run): their p99 is their slowest; all of 100 ms or more are judged.
	findings, sum := runExplain(t, dir, "--api", "fetch", "--slow", "100ms")
	t.Logf("--api fetch: %d fetches, threshold %.1f ms, causes %s", sum.FetchRequests, sum.ThresholdMs, causeCounts(sum))
	var cold, fromDisk, withPages int
	for _, f := range findings {
		during := false
		for _, w := range windows {
			during = during || w.overlaps(f.Arrival, f.End, 0)
		}
		if f.ClientID != coldClientID || !during {
			continue
		}
		cold++
		t.Logf("cold fetch %d %.1f ms: %s: %s", f.CorrelationID, f.LatencyMs, f.Cause, f.Detail)
		if f.Cause == explain.CauseDiskRead {
			fromDisk++
			if f.PagesFromDisk > 0 {
				withPages++
			}
		}
	}
	if cold == 0 {
		t.Fatal("no slow fetch of the cold reader in the windows")
	}
	if fromDisk*10 < cold*9 {
		t.Errorf("%d of %d slow cold fetches on %s, want at least 90%%", fromDisk, cold, explain.CauseDiskRead)
	}
	if withPages == 0 {
		t.Errorf("no disk-read finding names the pages read into the page cache")
	}
}
