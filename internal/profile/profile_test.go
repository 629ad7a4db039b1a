package profile

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/jfr"
)

// stack makes a stack from "pkg.Class.method" names, innermost first.
func stack(names ...string) *jfr.Stack {
	s := &jfr.Stack{}
	for _, n := range names {
		i := strings.LastIndexByte(n, '.')
		if i < 0 {
			s.Frames = append(s.Frames, jfr.Frame{Method: n})
			continue
		}
		s.Frames = append(s.Frames, jfr.Frame{Class: n[:i], Method: n[i+1:]})
	}
	return s
}

func TestCategorize(t *testing.T) {
	for _, c := range []struct {
		name    string
		frames  []string
		thread  string
		want    string
		decider int
	}{
		{"zstd-jni", []string{"com.github.luben.zstd.ZstdOutputStreamNoFinalizer.compressStream", "com.github.luben.zstd.ZstdOutputStreamNoFinalizer.write",
			"org.apache.kafka.common.record.MemoryRecordsBuilder.appendDefaultRecord", "org.apache.kafka.storage.internals.log.LogValidator.validateMessagesAndAssignOffsets",
			"kafka.server.KafkaApis.handle"}, "data-plane-kafka-request-handler-1", Zstd, 0},
		{"innermost rule wins over the JDK frames above it", []string{"java.io.BufferedOutputStream.write", "org.apache.kafka.common.compress.ZstdCompression.wrapForOutput",
			"org.apache.kafka.common.record.MemoryRecordsBuilder.<init>"}, "h", Zstd, 1},
		{"crc32c in validation", []string{"java.util.zip.CRC32C.updateBytes", "java.util.zip.CRC32C.update", "org.apache.kafka.common.utils.Crc32C.compute",
			"org.apache.kafka.common.record.DefaultRecordBatch.isValid", "org.apache.kafka.storage.internals.log.LogValidator.validateBatch"}, "h", CRC32C, 0},
		{"CRC32 is not CRC32C", []string{"java.util.zip.CRC32.updateBytes0"}, "h", CRC32, 0},
		{"CRC32C is not CRC32", []string{"java.util.zip.CRC32C.updateBytes"}, "h", CRC32C, 0},
		{"md5", []string{"sun.security.provider.MD5.implCompress0", "sun.security.provider.MD5.implCompress", "sun.security.provider.DigestBase.engineUpdate"}, "t", MD5, 0},
		{"digest without its algorithm", []string{"sun.security.provider.DigestBase.implCompressMultiBlock0", "java.security.MessageDigest.update"}, "t", Digest, 0},
		{"SHA2 is not SHA", []string{"sun.security.provider.SHA2.implCompress0"}, "t", SHA, 0},
		{"aes-gcm", []string{"com.sun.crypto.provider.GHASH.processBlocks", "com.sun.crypto.provider.GaloisCounterMode$GCMEngine.doLastBlock"}, "t", AESGCM, 0},
		{"aes inside tls", []string{"com.sun.crypto.provider.AESCrypt.implEncryptBlock", "sun.security.ssl.SSLCipher$T13GcmWriteCipherGenerator$GcmWriteCipher.encrypt",
			"org.apache.kafka.common.network.SslTransportLayer.write"}, "n", AESGCM, 0},
		{"tls engine", []string{"java.nio.HeapByteBuffer.put", "sun.security.ssl.SSLEngineImpl.writeRecord", "org.apache.kafka.common.network.SslTransportLayer.write",
			"org.apache.kafka.common.network.Selector.write"}, "n", TLS, 1},
		{"ssl transport layer is tls, not network", []string{"org.apache.kafka.common.network.SslTransportLayer.read", "org.apache.kafka.common.network.Selector.poll"}, "n", TLS, 0},
		{"socket read", []string{"sun.nio.ch.SocketDispatcher.read0", "sun.nio.ch.SocketDispatcher.read", "sun.nio.ch.IOUtil.read", "sun.nio.ch.SocketChannelImpl.read"}, "n", Network, 0},
		{"file write is the log", []string{"sun.nio.ch.FileDispatcherImpl.write0", "sun.nio.ch.IOUtil.write", "sun.nio.ch.FileChannelImpl.write",
			"org.apache.kafka.common.record.FileRecords.append"}, "h", Log, 0},
		{"sendfile is network", []string{"sun.nio.ch.FileChannelImpl.transferTo0", "sun.nio.ch.FileChannelImpl.transferTo", "org.apache.kafka.common.record.FileRecords.writeTo"}, "n", Log, 0},
		{"sendfile frame itself", []string{"sun.nio.ch.FileChannelImpl.transferTo", "org.apache.kafka.common.record.FileRecords.writeTo"}, "n", Network, 0},
		{"index", []string{"java.nio.DirectByteBuffer.putInt", "org.apache.kafka.storage.internals.log.OffsetIndex.append"}, "h", Log, 1},
		{"replica fetcher", []string{"java.util.HashMap.get", "kafka.server.ReplicaFetcherThread.processPartitionData"}, "ReplicaFetcherThread-0-2", Replicate, 1},
		{"fetch path", []string{"kafka.server.ReplicaManager.readFromLog", "kafka.server.ReplicaManager.fetchMessages", "kafka.server.KafkaApis.handleFetchRequest"}, "h", Replicate, 0},
		{"ReplicaManager's produce path is request handling", []string{"kafka.server.ReplicaManager.appendRecords", "kafka.server.KafkaApis.handleProduceRequest"}, "h", Request, 0},
		{"method prefix at a boundary only", []string{"kafka.server.ReplicaManager.fetchMessagesX"}, "h", Request, 0},
		{"KafkaApis", []string{"java.util.HashMap.put", "kafka.server.KafkaApis.handle"}, "h", Request, 1},
		{"no rule: thread name", []string{"java.util.HashMap.put", "java.lang.Thread.run"}, "data-plane-kafka-request-handler-3", Request, -1},
		{"no rule, no thread rule", []string{"java.util.HashMap.put"}, "kafka-scheduler-1", Other, -1},
		{"gc thread", nil, "GC Thread#0", GC, -1},
		{"g1", nil, "G1 Conc#0", GC, -1},
		{"jit", nil, "C2 CompilerThread0", JIT, -1},
		{"async-profiler native zstd frame", []string{"ZSTD_compressBlock_doubleFast", "Java_com_github_luben_zstd_ZstdOutputStreamNoFinalizer_compressStream"}, "h", Zstd, 0},
		{"lz4", []string{"net.jpountz.lz4.LZ4JNI.LZ4_decompress_safe"}, "h", LZ4, 0},
		{"snappy", []string{"org.xerial.snappy.SnappyNative.rawCompress"}, "h", Snappy, 0},
		{"gzip", []string{"java.util.zip.Deflater.deflateBytesBytes", "java.util.zip.Deflater.deflate"}, "h", Gzip, 0},
		{"a class named like a prefix", []string{"com.github.luben.zstdx.Other.m"}, "x", Other, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, i := Categorize(stack(c.frames...).Frames, c.thread)
			if got != c.want || i != c.decider {
				t.Errorf("%s at frame %d, want %s at %d", got, i, c.want, c.decider)
			}
		})
	}
	for cat := range map[string]bool{Zstd: true, LZ4: true, Snappy: true, Gzip: true, CRC32C: true, CRC32: true, MD5: true, SHA: true, Digest: true,
		AESGCM: true, TLS: true, CryptoMisc: true, Network: true, Log: true, Replicate: true, Request: true, GC: true, JIT: true, Other: true, Unsampled: true} {
		if CategoryInfo[cat] == "" {
			t.Errorf("category %s undocumented", cat)
		}
	}
}

func TestIdle(t *testing.T) {
	for _, c := range []struct {
		frame string
		want  bool
	}{
		{"sun.nio.ch.EPoll.wait", true},
		{"sun.nio.ch.Net.poll", true},
		{"sun.nio.ch.FileDispatcherImpl.force0", true},
		{"sun.nio.ch.SocketDispatcher.read0", false},
		{"com.github.luben.zstd.ZstdOutputStreamNoFinalizer.compressStream", false},
		{"sun.nio.ch.FileDispatcherImpl.write0", false},
	} {
		if got := Idle(stack(c.frame).Frames[0]); got != c.want {
			t.Errorf("%s: %v", c.frame, got)
		}
	}
}

// synthProfile is a profile built by hand: thread "handler-1" with three
// Java samples in KafkaApis and four native ones in zstd-jni; two network
// threads with four idle native samples each. K = 12/4 = 3.
func synthProfile() *jfr.Profile {
	base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	handler := jfr.Thread{TID: 10, JavaID: 1, Name: "data-plane-kafka-request-handler-1"}
	net1 := jfr.Thread{TID: 11, JavaID: 2, Name: "data-plane-kafka-network-thread-1"}
	net2 := jfr.Thread{TID: 12, JavaID: 3, Name: "data-plane-kafka-network-thread-2"}
	api := stack("java.util.HashMap.get", "kafka.server.KafkaApis.handle", "kafka.server.KafkaRequestHandler.run")
	zstd := stack("com.github.luben.zstd.ZstdOutputStreamNoFinalizer.compressStream", "com.github.luben.zstd.ZstdOutputStreamNoFinalizer.write",
		"kafka.server.KafkaApis.handle", "kafka.server.KafkaRequestHandler.run")
	epoll := stack("sun.nio.ch.EPoll.wait", "sun.nio.ch.EPollSelectorImpl.doSelect")
	pr := &jfr.Profile{Start: base, End: base.Add(10 * time.Second), Flags: map[string]bool{}, Settings: map[string]map[string]string{}}
	add := func(th jfr.Thread, st *jfr.Stack, native bool, n int) {
		for i := range n {
			pr.Samples = append(pr.Samples, jfr.Sample{Time: base.Add(time.Duration(i) * time.Second), Thread: th, Native: native, Stack: st})
		}
	}
	add(handler, api, false, 3)
	add(handler, zstd, true, 4)
	add(net1, epoll, true, 4)
	add(net2, epoll, true, 4)
	return pr
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func category(r *Report, name string) *Category {
	for i := range r.Categories {
		if r.Categories[i].Name == name {
			return &r.Categories[i]
		}
	}
	return nil
}

// TestBuildWeights checks the arithmetic of the package doc on a
// profile built by hand.
func TestBuildWeights(t *testing.T) {
	handler := jfr.Thread{TID: 10, JavaID: 1, Name: "data-plane-kafka-request-handler-1"}
	c2 := jfr.Thread{TID: 20, JavaID: 5, Name: "C2 CompilerThread0"}
	worker := jfr.Thread{TID: 21, JavaID: 6, Name: "kafka-scheduler-0"}
	load := func(pr *jfr.Profile, th jfr.Thread, loads ...float64) {
		for i, l := range loads {
			pr.ThreadCPU = append(pr.ThreadCPU, jfr.ThreadCPU{Time: pr.Start.Add(time.Duration(i) * time.Second), Thread: th, User: l})
		}
	}
	for _, c := range []struct {
		name   string
		modify func(*jfr.Profile)
		method string
		want   map[string]float64
	}{
		// zstd 4 samples × K=3 = 12, request 3 × 1: 80% and 20%.
		{"samples", func(*jfr.Profile) {}, "samples", map[string]float64{Zstd: 0.8, Request: 0.2}},
		// Native samples every 20 ms, Java every 10 ms: a native sample
		// weighs 2K = 6; zstd 24 of 27.
		{"periods", func(pr *jfr.Profile) {
			pr.Settings["jdk.ExecutionSample"] = map[string]string{"period": "10 ms"}
			pr.Settings["jdk.NativeMethodSample"] = map[string]string{"period": "20 ms"}
		}, "samples", map[string]float64{Zstd: 24.0 / 27, Request: 3.0 / 27}},
		// The handler used 0.5 of the machine for 2 s (its first load
		// does not count): 1.0; the compiler 0.25 for 2 s: 0.5, with no
		// sample; a scheduler 0.25 for 2 s, no sample: unsampled; the
		// JVM 1.0 for 3 s: 3.0, so GC and VM threads 1.0.
		{"thread cpu", func(pr *jfr.Profile) {
			load(pr, handler, 0.9, 0.5, 0.5)
			load(pr, c2, 0.9, 0.25, 0.25)
			load(pr, worker, 0.9, 0.25, 0.25)
			for i := range 4 {
				pr.CPULoad = append(pr.CPULoad, jfr.CPULoad{Time: pr.Start.Add(time.Duration(i) * time.Second), JVMUser: 1, JVMUserOK: true, MachineTotal: 1, MachineOK: true})
			}
			pr.Settings["jdk.ThreadCPULoad"] = map[string]string{"period": "1 s"}
		}, "thread-cpu", map[string]float64{Zstd: 0.8 / 3, Request: 0.2 / 3, JIT: 0.5 / 3, Unsampled: 0.5 / 3, GC: 1.0 / 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pr := synthProfile()
			c.modify(pr)
			r := Build(pr, Options{})
			if r.Method != c.method || !near(r.NativeWeight, 3) {
				t.Errorf("method %s, K %v", r.Method, r.NativeWeight)
			}
			if r.Samples.Java != 3 || r.Samples.Native != 12 || r.Samples.Idle != 8 || r.Samples.Busy != 7 {
				t.Errorf("samples %+v", r.Samples)
			}
			var sum float64
			for _, cat := range r.Categories {
				sum += cat.Share
				if w, ok := c.want[cat.Name]; !ok || !near(cat.Share, w) {
					t.Errorf("%s: %v, want %v", cat.Name, cat.Share, c.want[cat.Name])
				}
			}
			if len(r.Categories) != len(c.want) || !near(sum, 1) {
				t.Errorf("categories %+v", r.Categories)
			}
			if z := category(r, Zstd); z == nil || z.Samples != 4 || z.Frames[0].Frame != "com.github.luben.zstd.ZstdOutputStreamNoFinalizer.compressStream" {
				t.Errorf("zstd %+v", z)
			}
			// Every share adds up in the flame graph's root.
			if r.Flame == nil || len(r.Flame.Children) == 0 {
				t.Fatalf("no flame tree")
			}
			var kids float64
			for _, k := range r.Flame.Children {
				kids += k.Weight
			}
			if !near(kids, r.Flame.Weight) {
				t.Errorf("flame root %v, children %v", r.Flame.Weight, kids)
			}
		})
	}
}

// busyProfile reads the jfr package's recording of Busy.java: threads
// "spin" (plain Java), "crc32c", "md5", "aes-gcm", "deflate" (zlib) and
// "mixed" (as long in zlib as in plain Java), three contenders for a
// Busy$Lock and four threads idle in epoll.
func busyProfile(t *testing.T) (*jfr.Profile, string) {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "jfr", "testdata", "busy.jfr.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "busy.jfr")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	pr, err := jfr.ReadProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("..", "jfr", "testdata", "busy.want.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want struct{ Mixed string }
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	return pr, want.Mixed
}

func TestBuildTestdata(t *testing.T) {
	pr, mixed := busyProfile(t)
	r := Build(pr, Options{Top: 50})
	if r.Method != "thread-cpu" || r.JVMCPU <= 0 || r.Samples.Idle == 0 || r.Samples.Busy == 0 {
		t.Fatalf("report %s, JVM %v, samples %+v", r.Method, r.JVMCPU, r.Samples)
	}
	threads := map[string]ThreadUse{}
	for _, tu := range r.Threads {
		threads[tu.Thread] = tu
	}
	for name, cat := range map[string]string{"spin": Other, "deflate": Gzip, "aes-gcm": AESGCM} {
		if tu, ok := threads[name]; !ok || tu.Category != cat {
			t.Errorf("thread %s: %+v, want category %s", name, tu, cat)
		}
	}
	for _, name := range []string{Gzip, AESGCM, Other, JIT} {
		if c := category(r, name); c == nil || c.Share <= 0 {
			t.Errorf("no %s in %+v", name, r.Categories)
		}
	}
	if g := category(r, Gzip); g == nil || g.Frames[0].Frame != "java.util.zip.Deflater.deflateBytesBytes" {
		t.Errorf("gzip decided by %+v", g)
	}
	// The idle selectors are not CPU.
	for _, c := range r.Categories {
		for _, f := range c.Frames {
			if strings.Contains(f.Frame, "EPoll.wait") {
				t.Errorf("idle frame %s counted in %s", f.Frame, c.Name)
			}
		}
	}

	// "mixed" spent as long in zlib as in Java (Busy measured both):
	// weighing native samples by K brings the estimate closer to that
	// than counting samples does.
	f := strings.Fields(mixed)
	if len(f) != 3 {
		t.Fatalf("mixed %q", mixed)
	}
	javaNs, _ := strconv.ParseFloat(f[1], 64)
	nativeNs, _ := strconv.ParseFloat(f[2], 64)
	truth := nativeNs / (javaNs + nativeNs)
	var nJava, nNative int
	for _, s := range pr.Samples {
		if s.Thread.Name == "mixed" && s.Stack != nil {
			if s.Native {
				nNative++
			} else {
				nJava++
			}
		}
	}
	counted := float64(nNative) / float64(nJava+nNative)
	weighted := float64(nNative) * r.NativeWeight / (float64(nNative)*r.NativeWeight + float64(nJava))
	t.Logf("mixed: %.0f%% of its time in zlib; samples say %.0f%%, weighted by K=%.1f %.0f%%", truth*100, counted*100, r.NativeWeight, weighted*100)
	if math.Abs(weighted-truth) >= math.Abs(counted-truth) {
		t.Errorf("weighted %.2f is no closer to %.2f than counted %.2f", weighted, truth, counted)
	}

	// The contenders' lock.
	var lock *Monitor
	for i := range r.Monitors {
		if r.Monitors[i].Monitor == "Busy$Lock" {
			lock = &r.Monitors[i]
		}
	}
	if lock == nil || lock.Kind != "monitor" || !strings.HasPrefix(lock.Site, "Busy.lambda$main$") || lock.Waits < 5 ||
		lock.Threads[0] != "contender-N" || len(lock.Owners) == 0 || lock.WorstMs < 1 || lock.TotalMs < lock.WorstMs || len(lock.Stack) == 0 {
		t.Errorf("Busy$Lock: %+v", lock)
	}
	if len(r.WorstWaits) == 0 || r.WorstWaits[0].Ms < r.WorstWaits[len(r.WorstWaits)-1].Ms {
		t.Errorf("worst waits %+v", r.WorstWaits)
	}
	if r.Flags["UseAES"] == "" {
		t.Errorf("flags %v", r.Flags)
	}
	// The crc32c thread computes CRC32C in the intrinsic's stub, which
	// JFR cannot walk: a handful of samples for as much CPU as "spin".
	hints := ""
	for _, h := range r.Hints {
		hints += h.Kind + ": " + h.Text + "\n"
	}
	for _, w := range []string{"unsampled: thread crc32c used", "crypto: MD5:", "compression: gzip:", "lock: "} {
		if !strings.Contains(hints, w) {
			t.Errorf("no %q in hints:\n%s", w, hints)
		}
	}
	if g := threadGroup("md5"); g != "md5" {
		t.Errorf("thread group of md5: %s", g)
	}
}

func TestThreadGroup(t *testing.T) {
	for name, want := range map[string]string{
		"data-plane-kafka-request-handler-3":                      "data-plane-kafka-request-handler-N",
		"data-plane-kafka-network-thread-1-PLAINTEXT-PLAINTEXT-0": "data-plane-kafka-network-thread-N-PLAINTEXT-PLAINTEXT-N",
		"ReplicaFetcherThread-0-2":                                "ReplicaFetcherThread-N-N",
		"GC Thread#1":                                             "GC Thread#N",
		"C2 CompilerThread0":                                      "C2 CompilerThreadN",
		"md5":                                                     "md5",
		"crc32c":                                                  "crc32c",
	} {
		if got := threadGroup(name); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
}

func TestContention(t *testing.T) {
	park := func(class string, frames ...string) jfr.Wait {
		return jfr.Wait{LockWait: event.LockWait{Monitor: class, Park: true, LatencyMs: 5, Thread: "h-1"}, Stack: stack(frames...)}
	}
	for _, c := range []struct {
		name string
		w    jfr.Wait
		lock bool
		site string
	}{
		{"reentrant lock", park("java.util.concurrent.locks.ReentrantLock$NonfairSync", "jdk.internal.misc.Unsafe.park", "java.util.concurrent.locks.LockSupport.park",
			"java.util.concurrent.locks.AbstractQueuedSynchronizer.acquire", "java.util.concurrent.locks.ReentrantLock.lock", "kafka.utils.CoreUtils$.inLock",
			"kafka.cluster.Partition.appendRecordsToLeader"), true, "kafka.cluster.Partition.appendRecordsToLeader"},
		{"read lock", park("java.util.concurrent.locks.ReentrantReadWriteLock$NonfairSync", "jdk.internal.misc.Unsafe.park",
			"java.util.concurrent.locks.AbstractQueuedSynchronizer.acquireShared", "org.apache.kafka.server.util.LockUtils.inReadLock",
			"kafka.server.ReplicaManager.appendRecords"), true, "kafka.server.ReplicaManager.appendRecords"},
		{"condition wait", park("java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject", "jdk.internal.misc.Unsafe.park",
			"java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject.await", "java.util.concurrent.LinkedBlockingQueue.take",
			"java.util.concurrent.ThreadPoolExecutor.getTask"), false, ""},
		{"latch", park("java.util.concurrent.CountDownLatch$Sync", "jdk.internal.misc.Unsafe.park",
			"java.util.concurrent.locks.AbstractQueuedSynchronizer.acquireSharedInterruptibly", "java.util.concurrent.CountDownLatch.await", "kafka.Kafka.main"), false, ""},
		{"future", park("java.util.concurrent.CompletableFuture$Signaller", "jdk.internal.misc.Unsafe.park", "java.util.concurrent.CompletableFuture.get"), false, ""},
		{"no stack", jfr.Wait{LockWait: event.LockWait{Monitor: "x.Y", Park: true, LatencyMs: 1}}, true, "?"},
		{"monitor", jfr.Wait{LockWait: event.LockWait{Monitor: "java.lang.Object", LatencyMs: 1},
			Stack: stack("org.apache.kafka.storage.internals.log.UnifiedLog.append", "kafka.cluster.Partition.appendRecordsToLeader")}, true,
			"org.apache.kafka.storage.internals.log.UnifiedLog.append"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ms, lines := contention([]jfr.Wait{c.w}, 10)
			if (len(ms) == 1) != c.lock || len(lines) != len(ms) {
				t.Fatalf("monitors %+v", ms)
			}
			if c.lock && ms[0].Site != c.site {
				t.Errorf("site %s, want %s", ms[0].Site, c.site)
			}
		})
	}

	// Grouping: one lock class at two sites is two monitors.
	w := func(site string, ms float64, thread, owner string) jfr.Wait {
		return jfr.Wait{LockWait: event.LockWait{Monitor: "java.lang.Object", LatencyMs: ms, Thread: thread, Owner: owner}, Stack: stack(site, "x.Caller.m")}
	}
	ms, lines := contention([]jfr.Wait{
		w("a.Log.append", 10, "handler-1", "handler-2"), w("a.Log.append", 30, "handler-2", "handler-1"), w("a.Log.append", 5, "handler-3", "handler-1"),
		w("a.Log.hw", 20, "handler-1", ""),
	}, 10)
	if len(ms) != 2 || ms[0].Site != "a.Log.append" || ms[0].Waits != 3 || ms[0].TotalMs != 45 || ms[0].WorstMs != 30 ||
		strings.Join(ms[0].Threads, ",") != "handler-N" || strings.Join(ms[0].Owners, ",") != "handler-N" || ms[1].TotalMs != 20 {
		t.Errorf("monitors %+v", ms)
	}
	if len(lines) != 4 || lines[0].Ms != 30 || lines[3].Ms != 5 {
		t.Errorf("worst waits %+v", lines)
	}
}

// hintProfile is a profile of one handler thread whose samples are n
// of each stack given.
func hintProfile(stacks map[*jfr.Stack]int) *jfr.Profile {
	base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	pr := &jfr.Profile{Start: base, End: base.Add(30 * time.Second), Flags: map[string]bool{}, Settings: map[string]map[string]string{}}
	th := jfr.Thread{TID: 1, JavaID: 1, Name: "data-plane-kafka-request-handler-0"}
	for st, n := range stacks {
		for range n {
			pr.Samples = append(pr.Samples, jfr.Sample{Time: base, Thread: th, Stack: st})
		}
	}
	return pr
}

func TestHints(t *testing.T) {
	api := stack("java.util.HashMap.get", "kafka.server.KafkaApis.handle")
	zstdOut := stack("com.github.luben.zstd.ZstdOutputStreamNoFinalizer.compressStream", "kafka.server.KafkaApis.handle")
	zstdIn := stack("com.github.luben.zstd.ZstdInputStreamNoFinalizer.decompressStream", "kafka.server.KafkaApis.handle")
	lz4In := stack("net.jpountz.lz4.LZ4JNI.LZ4_decompress_safe", "org.apache.kafka.common.compress.Lz4BlockInputStream.readBlock")
	md5 := stack("sun.security.provider.MD5.implCompress0", "sun.security.provider.MD5.implCompress")
	aes := stack("com.sun.crypto.provider.AESCrypt.implEncryptBlock", "com.sun.crypto.provider.GCTR.doFinal")
	for _, c := range []struct {
		name   string
		stacks map[*jfr.Stack]int
		flags  map[string]bool
		want   []string // substrings of the hints, in order
	}{
		{"recompression", map[*jfr.Stack]int{zstdOut: 40, lz4In: 5, api: 55}, nil,
			[]string{"zstd: 40% of the JVM's CPU (40 of 100 busy samples", "40 compressing and 0 decompressing", "recompress", "here batches arrive as lz4, decompressed in 5 samples"}},
		{"decompression only", map[*jfr.Stack]int{zstdIn: 30, api: 70}, nil, []string{"zstd: 30%", "0 compressing and 30 decompressing", "validate"}},
		{"below the threshold", map[*jfr.Stack]int{zstdOut: 4, api: 96}, nil, nil},
		{"too few samples", map[*jfr.Stack]int{zstdOut: 5, api: 5}, nil, nil},
		{"md5 as java", map[*jfr.Stack]int{md5: 10, api: 90}, nil, []string{"MD5: 10%", "10 samples are in MD5.implCompress0, which compiled code replaces with an intrinsic (UseMD5Intrinsics)"}},
		{"aes without AES instructions", map[*jfr.Stack]int{aes: 20, api: 80}, map[string]bool{"UseAES": false},
			[]string{"AES: 20%", "UseAESIntrinsics", "UseAES is false"}},
		{"nothing", map[*jfr.Stack]int{api: 100}, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			pr := hintProfile(c.stacks)
			for k, v := range c.flags {
				pr.Flags[k] = v
			}
			r := Build(pr, Options{})
			var texts []string
			for _, h := range r.Hints {
				texts = append(texts, h.Text)
			}
			all := strings.Join(texts, "\n")
			if len(c.want) == 0 && len(r.Hints) > 0 {
				t.Errorf("hints: %s", all)
			}
			at := 0
			for _, w := range c.want {
				i := strings.Index(all[at:], w)
				if i < 0 {
					t.Fatalf("no %q in hints:\n%s", w, all)
				}
				at += i
			}
		})
	}

	// GC, unsampled threads and locks.
	pr := hintProfile(map[*jfr.Stack]int{api: 100})
	busy := jfr.Thread{TID: 2, JavaID: 2, Name: "kafka-log-cleaner-thread-0"}
	handler := pr.Samples[0].Thread
	for i := range 3 {
		at := pr.Start.Add(time.Duration(i) * time.Second)
		pr.ThreadCPU = append(pr.ThreadCPU, jfr.ThreadCPU{Time: at, Thread: handler, User: 0.2}, jfr.ThreadCPU{Time: at, Thread: busy, User: 0.2})
		pr.CPULoad = append(pr.CPULoad, jfr.CPULoad{Time: at, JVMUser: 0.8, JVMUserOK: true})
	}
	for i := range 20 {
		pr.GCs = append(pr.GCs, jfr.GC{Start: pr.Start.Add(time.Duration(i) * time.Second), SumOfPauses: 100 * time.Millisecond, LongestPause: time.Duration(i) * time.Millisecond})
	}
	pr.Waits = append(pr.Waits, jfr.Wait{LockWait: event.LockWait{Monitor: "java.lang.Object", LatencyMs: 120, Thread: "h-1", Owner: "h-2"},
		Stack: stack("org.apache.kafka.storage.internals.log.UnifiedLog.append")})
	r := Build(pr, Options{})
	all := ""
	for _, h := range r.Hints {
		all += h.Kind + ": " + h.Text + "\n"
	}
	for _, w := range []string{
		"gc: GC: 50% of the JVM's CPU in GC and VM threads; 20 collections paused the JVM for 2000 ms in all (6.7% of the recording), the longest 19.0 ms.",
		"unsampled: thread kafka-log-cleaner-thread-0 used 25% of the JVM's CPU but JFR took 0 samples",
		"lock: 1 waits for java.lang.Object (synchronized) in org.apache.kafka.storage.internals.log.UnifiedLog.append, 120 ms in all",
	} {
		if !strings.Contains(all, w) {
			t.Errorf("no %q in\n%s", w, all)
		}
	}
}

// hostileProfile has names a crafted recording could hold.
func hostileProfile() *jfr.Profile {
	pr := synthProfile()
	evil := &jfr.Stack{Frames: []jfr.Frame{{Class: "<script>alert(1)</script>", Method: "m\x01\x1b[31m&amp;"}, {Class: "a.\xff\xfe", Method: "]]>"}}}
	for range 5 {
		pr.Samples = append(pr.Samples, jfr.Sample{Time: pr.Start, Thread: jfr.Thread{TID: 99, Name: "evil\x00\"thread'"}, Stack: evil})
	}
	pr.Waits = append(pr.Waits, jfr.Wait{LockWait: event.LockWait{Monitor: "<b>\x07", LatencyMs: 500, Thread: "t\x1b"}, Stack: evil})
	return pr
}

// wellFormed parses s as XML to the end.
func wellFormed(t *testing.T, s string) int {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(s))
	elements := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return elements
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if _, ok := tok.(xml.StartElement); ok {
			elements++
		}
	}
}

func TestFlame(t *testing.T) {
	pr, _ := busyProfile(t)
	for name, p := range map[string]*jfr.Profile{"testdata": pr, "hostile": hostileProfile(), "empty": {}} {
		t.Run(name, func(t *testing.T) {
			r := Build(p, Options{})
			var svg bytes.Buffer
			if err := FlameSVG(&svg, r); err != nil {
				t.Fatal(err)
			}
			n := wellFormed(t, svg.String())
			if name != "empty" && (n < 10 || !strings.Contains(svg.String(), "<title>all: 100% of CPU")) {
				t.Errorf("%d elements:\n%.2000s", n, svg.String())
			}
			var page bytes.Buffer
			if err := FlameHTML(&page, r); err != nil {
				t.Fatal(err)
			}
			h := page.String()
			if !strings.Contains(h, `content="default-src 'none';`) || strings.Contains(strings.ToLower(h), "<script") ||
				strings.Contains(h, "http://") && !strings.Contains(h, `xmlns="http://www.w3.org/2000/svg"`) {
				t.Errorf("page not self-contained:\n%.3000s", h)
			}
			i, j := strings.Index(h, "<svg"), strings.Index(h, "</svg>")
			wellFormed(t, h[i:j+len("</svg>")])
			for _, bad := range []string{"\x01", "\x1b", "\x00", "\xff"} {
				if strings.Contains(h, bad) || strings.Contains(svg.String(), bad) {
					t.Errorf("raw %q in the output", bad)
				}
			}
		})
	}
}

func TestWriteText(t *testing.T) {
	pr, _ := busyProfile(t)
	for name, p := range map[string]*jfr.Profile{"testdata": pr, "hostile": hostileProfile(), "empty": {}} {
		t.Run(name, func(t *testing.T) {
			r := Build(p, Options{Top: 5})
			var out bytes.Buffer
			if err := WriteText(&out, r); err != nil {
				t.Fatal(err)
			}
			s := out.String()
			for _, want := range []string{"CPU by category", "Top methods (self", "Top stacks", "Threads", "Lock contention", "Hints"} {
				if !strings.Contains(s, want) {
					t.Errorf("no %q in\n%s", want, s)
				}
			}
			for _, bad := range []string{"\x01", "\x1b", "\x00", "\x07"} {
				if strings.Contains(s, bad) {
					t.Errorf("raw %q in the text", bad)
				}
			}
			b, err := json.Marshal(r)
			if err != nil || !json.Valid(b) {
				t.Errorf("json: %v", err)
			}
		})
	}
}

// The same stack read from several chunks is one line, with the same
// share however the map of stacks happens to be iterated: floating-point
// sums depend on their order, and a ranking on them must not.
func TestTopStacksMergeIsDeterministic(t *testing.T) {
	frames := []jfr.Frame{{Class: "a.B", Method: "spin"}, {Class: "java.lang.Thread", Method: "run"}}
	other := []jfr.Frame{{Class: "a.B", Method: "wait"}, {Class: "java.lang.Thread", Method: "run"}}
	build := func() map[*jfr.Stack]*StackLine {
		m := map[*jfr.Stack]*StackLine{}
		for _, w := range []float64{0.1, 0.2, 0.3, 0.7, 1.1, 1.3} {
			m[&jfr.Stack{Frames: frames}] = &StackLine{Category: Other, Share: w, Samples: 1}
		}
		// The other stack's weight is one rounding of the first's sum.
		m[&jfr.Stack{Frames: other}] = &StackLine{Category: Other, Share: 3.7, Samples: 6}
		return m
	}
	first := topStacks(build(), 10, func(w float64) float64 { return w })
	if len(first) != 2 || first[0].Samples != 6 || first[1].Samples != 6 {
		t.Fatalf("stacks %+v, want two of 6 samples each", first)
	}
	for range 200 {
		got := topStacks(build(), 10, func(w float64) float64 { return w })
		for i := range got {
			if got[i].Share != first[i].Share || !slices.Equal(got[i].Frames, first[i].Frames) {
				t.Fatalf("run differs: %+v, first %+v", got, first)
			}
		}
	}
}
