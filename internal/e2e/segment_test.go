package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/logdir"
	"github.com/kscope-dev/kscope/internal/records"
	"github.com/kscope-dev/kscope/internal/segment"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
	"github.com/kscope-dev/kscope/internal/testkit/traffic"
)

// TestSegmentsMatchDumpLogSegments writes segments with a real broker
// (franz-go and the Java producer with every codec, a transactional
// producer that commits and aborts, a compacted topic the log cleaner has
// cleaned), stops it, and checks that kscope's segment reader agrees with
// Kafka's own DumpLogSegments, run from the same jars, on every batch and
// every record. It then checks lookup on every batch of the topics whose
// message ids are known, and that verify finds the log directory intact.
func TestSegmentsMatchDumpLogSegments(t *testing.T) {
	libs := labtest.RequireKafka(t)
	start := time.Now()
	b := labtest.Broker(t, lab.BrokerConfig{
		Dir:     filepath.Join(t.TempDir(), "broker"),
		LibsDir: libs,
		ExtraProps: map[string]string{
			// Let the cleaner look for work often.
			"log.cleaner.backoff.ms": "100",
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	const nFranz, nJava = 400, 1500
	for _, codec := range traffic.Codecs() {
		if err := traffic.ProduceFranz(ctx, b.Addr(), "seg-franz-"+codec, nFranz, codec, true); err != nil {
			t.Fatal(err)
		}
	}
	for _, codec := range traffic.Codecs() {
		if err := traffic.JavaProducerPerf(ctx, libs, b.Addr(), "seg-java-"+codec, nJava, 120, codec); err != nil {
			t.Fatal(err)
		}
	}
	for _, codec := range traffic.Codecs() {
		produceIDs(ctx, t, b.Addr(), "seg-ids-"+codec, codec)
	}
	produceTransactions(ctx, t, b.Addr(), "seg-txn")
	produced, lastRound := produceCompacted(ctx, t, b.Addr(), "seg-compact")
	logDir := b.LogDirs()[0]
	waitCleaned(ctx, t, logDir, "seg-compact", lastRound)
	t.Logf("traffic written in %v", time.Since(start).Round(time.Millisecond))
	// A controlled shutdown flushes the segments and trims the indexes.
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}

	if keep := os.Getenv("KSCOPE_KEEP_SEGMENTS"); keep != "" {
		if err := os.CopyFS(keep, os.DirFS(logDir)); err != nil {
			t.Fatal(err)
		}
	}

	var logs []string
	for _, topic := range []string{"seg-franz-", "seg-ids-", "seg-java-", "seg-txn", "seg-compact"} {
		matches, _ := filepath.Glob(filepath.Join(logDir, topic+"*", "*.log"))
		logs = append(logs, matches...)
	}
	sort.Strings(logs)
	if len(logs) < 18 {
		t.Fatalf("only %d segment files: %v", len(logs), logs)
	}
	dumped := dumpLogSegments(ctx, t, libs, logs)

	var totals struct{ batches, recs, control, txn, compressed, horizon int }
	compacted := 0
	for _, path := range logs {
		want, ok := dumped[path]
		if !ok {
			t.Fatalf("DumpLogSegments printed nothing for %s", path)
		}
		got := readSegment(t, path)
		if len(got) != len(want) {
			t.Errorf("%s: %d batches, DumpLogSegments %d", path, len(got), len(want))
			continue
		}
		for i := range got {
			compareBatch(t, path, got[i], want[i])
			totals.batches++
			totals.recs += len(got[i].recs)
			if got[i].b.Control {
				totals.control++
			}
			if got[i].b.Transactional {
				totals.txn++
			}
			if got[i].b.Codec != records.CodecNone {
				totals.compressed++
			}
			if got[i].b.DeleteHorizon {
				totals.horizon++
			}
			if strings.Contains(path, "seg-compact") {
				compacted += len(got[i].recs)
			}
		}
	}
	t.Logf("compared %d files, %d batches (%d compressed, %d transactional, %d control, %d with a delete horizon), %d records",
		len(logs), totals.batches, totals.compressed, totals.txn, totals.control, totals.horizon, totals.recs)
	if totals.control < 4 || totals.compressed == 0 || totals.horizon == 0 {
		t.Errorf("traffic lacks control, compressed or delete-horizon batches: %+v", totals)
	}
	if compacted >= produced {
		t.Errorf("compacted topic holds %d of %d records produced: the cleaner did not remove any", compacted, produced)
	}

	// Lookup: for every batch of the topics whose ids are known, the
	// batch's exact byte range must give exactly its ids; a range from
	// inside one batch to inside the next must give both.
	lookups, indexed := 0, 0
	for _, codec := range traffic.Codecs() {
		topic := "seg-ids-" + codec
		path := filepath.Join(logDir, topic+"-0", "00000000000000000000.log")
		batches := readSegment(t, path)
		for i, sb := range batches {
			if checkLookup(t, path, topic, sb.b.Position, int64(sb.b.Size), batches[i:i+1]) > 0 {
				indexed++
			}
			if i+1 < len(batches) {
				checkLookup(t, path, topic, sb.b.Position+int64(sb.b.Size)-1, 2, batches[i:i+2])
			}
			lookups++
		}
	}
	if lookups < 50 || indexed < 10 {
		t.Errorf("only %d lookups, %d of them starting from an index entry", lookups, indexed)
	}
	t.Logf("%d lookups returned exactly their batch's ids; %d started from an index entry", lookups, indexed)

	rep, err := segment.Verify(logDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		t.Errorf("verify: %v", &p)
	}
	if rep.Partitions < 12 || rep.IndexEntries == 0 {
		t.Errorf("verify checked too little: %+v", rep)
	}
	t.Logf("verify: %d partitions, %d log files, %d batches, %d index entries, no problems", rep.Partitions, rep.LogFiles, rep.Batches, rep.IndexEntries)
}

// checkLookup looks up [pos, pos+n) and checks it returns exactly the
// batches want, with the ids produceIDs gave their records. It returns
// where the lookup started reading.
func checkLookup(t *testing.T, path, topic string, pos, n int64, want []segBatch) int64 {
	t.Helper()
	res, err := segment.Lookup(path, pos, n, traffic.MessageIDHeader, nil)
	if err != nil {
		t.Fatalf("lookup %s %d+%d: %v", path, pos, n, err)
	}
	if len(res.Matches) != len(want) {
		t.Fatalf("lookup %s %d+%d: %d batches, want %d", path, pos, n, len(res.Matches), len(want))
	}
	for i, m := range res.Matches {
		w := want[i].b
		var ids []string
		for o := w.BaseOffset; o <= w.LastOffset; o++ {
			ids = append(ids, topic+"-"+strconv.FormatInt(o, 10))
		}
		if m.Batch.Position != w.Position || m.Records != w.NumRecords || strings.Join(m.MessageIDs, ",") != strings.Join(ids, ",") {
			t.Fatalf("lookup %s %d+%d: batch %d at %d with ids %v, want the batch at %d with ids %v",
				path, pos, n, i, m.Batch.Position, m.MessageIDs, w.Position, ids)
		}
	}
	if res.ScanStart > pos {
		t.Fatalf("lookup %s %d+%d started at %d", path, pos, n, res.ScanStart)
	}
	return res.ScanStart
}

// produceIDs writes 400 records to topic in 16 synchronous rounds of 25,
// so that the segment holds many batches, with message ids
// "<topic>-<offset>".
func produceIDs(ctx context.Context, t *testing.T, addr, topic, codec string) {
	t.Helper()
	c := map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
		"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}[codec]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.ProducerBatchCompression(c))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	n := 0
	for range 16 {
		var recs []*kgo.Record
		for range 25 {
			recs = append(recs, &kgo.Record{Key: []byte("key-" + strconv.Itoa(n)), Value: bytes.Repeat([]byte("v"+strconv.Itoa(n)), 20),
				Headers: []kgo.RecordHeader{{Key: traffic.MessageIDHeader, Value: []byte(topic + "-" + strconv.Itoa(n))}}})
			n++
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// produceTransactions commits and aborts transactions alternately, so the
// log holds transactional batches and COMMIT and ABORT markers.
func produceTransactions(ctx context.Context, t *testing.T, addr, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.TransactionalID("kscope-seg-txn"),
		kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	n := 0
	for txn := range 6 {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for range 25 {
			recs = append(recs, &kgo.Record{Key: []byte("k" + strconv.Itoa(n)), Value: []byte("txn value " + strconv.Itoa(n)),
				Headers: []kgo.RecordHeader{{Key: traffic.MessageIDHeader, Value: []byte(topic + "-" + strconv.Itoa(n))}, {Key: "txn", Value: []byte{byte(txn), 0xff}}}})
			n++
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(txn%2 == 0)); err != nil {
			t.Fatal(err)
		}
	}
}

// produceCompacted creates a compacted topic whose segments roll every
// 300 ms, and writes the same 20 keys (and some tombstones) in rounds, so
// that the cleaner has old segments to clean. It returns the number of
// records produced and the offset of the last round, which lands in the
// active segment that the cleaner leaves alone.
func produceCompacted(ctx context.Context, t *testing.T, addr, topic string) (produced int, lastRound int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 1
	for k, v := range map[string]string{
		"cleanup.policy":            "compact",
		"segment.ms":                "300",
		"min.cleanable.dirty.ratio": "0.01",
		"min.compaction.lag.ms":     "0",
		"delete.retention.ms":       "100",
	} {
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
	n := 0
	for round := range 8 {
		var recs []*kgo.Record
		for k := range 20 {
			r := &kgo.Record{Key: []byte("key-" + strconv.Itoa(k)), Value: []byte("round " + strconv.Itoa(round))}
			switch {
			case round == 6 && k%4 == 0:
				// Tombstones that nothing later supersedes: the
				// cleaner keeps them and marks their batch with a
				// delete horizon.
				r.Value = nil
			case round == 7 && k%4 == 0:
				continue
			}
			recs = append(recs, r)
		}
		if round == 7 {
			lastRound = int64(n)
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		n += len(recs)
		time.Sleep(350 * time.Millisecond) // the next append rolls the segment
	}
	return n, lastRound
}

// waitCleaned waits until the log cleaner has recorded a cleaned offset of
// at least upTo for topic in the log dir's cleaner-offset-checkpoint.
func waitCleaned(ctx context.Context, t *testing.T, logDir, topic string, upTo int64) {
	t.Helper()
	deadline := time.Now().Add(40 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		data, _ := os.ReadFile(filepath.Join(logDir, "cleaner-offset-checkpoint"))
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) != 3 || f[0] != topic {
				continue
			}
			if off, err := strconv.ParseInt(f[2], 10, 64); err == nil && off >= upTo {
				t.Logf("cleaner checkpoint: %s", line)
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the log cleaner did not clean %s up to offset %d within 40 s", topic, upTo)
}

// segBatch is a batch and its records as kscope reads them.
type segBatch struct {
	b    records.Batch
	recs []records.Record
}

func readSegment(t *testing.T, path string) []segBatch {
	t.Helper()
	r, err := segment.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []segBatch
	for {
		b, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%v", err)
		}
		sb := segBatch{b: b}
		for rec, err := range r.Decoder().Records(b) {
			if err != nil {
				t.Fatalf("%s: position %d: %v", path, b.Position, err)
			}
			c := *rec
			c.Key, c.Value = bytes.Clone(rec.Key), bytes.Clone(rec.Value)
			c.Headers = nil
			for _, h := range rec.Headers {
				c.Headers = append(c.Headers, records.Header{Key: h.Key, Value: bytes.Clone(h.Value)})
			}
			sb.recs = append(sb.recs, c)
		}
		sb.b.Data = nil
		out = append(out, sb)
	}
}

// dumpBatch is a batch as DumpLogSegments prints it: its line's fields
// and its records' lines.
type dumpBatch struct {
	fields map[string]string
	recs   []dumpRecord
}

type dumpRecord struct {
	fields     map[string]string
	headerKeys []string
	key        *string
	payload    *string
}

// dumpLogSegments runs kafka.tools.DumpLogSegments --deep-iteration
// --print-data-log on all files in one JVM and parses its output.
func dumpLogSegments(ctx context.Context, t *testing.T, libs string, files []string) map[string][]dumpBatch {
	t.Helper()
	cmd, err := lab.JavaCommand(ctx, libs, lab.ToolJVMArgs(), "kafka.tools.DumpLogSegments",
		"--deep-iteration", "--print-data-log", "--files", strings.Join(files, ","))
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("DumpLogSegments: %v: %s", err, stderr.String())
	}
	if os.Getenv("KSCOPE_KEEP_DUMP") != "" {
		os.WriteFile(os.Getenv("KSCOPE_KEEP_DUMP"), out, 0o644)
	}
	res := map[string][]dumpBatch{}
	var cur string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Dumping "):
			cur = strings.TrimPrefix(line, "Dumping ")
			res[cur] = []dumpBatch{}
		case strings.HasPrefix(line, "baseOffset: "):
			res[cur] = append(res[cur], dumpBatch{fields: pairs(t, line)})
		case strings.HasPrefix(line, "| offset: "):
			bs := res[cur]
			if len(bs) == 0 {
				t.Fatalf("record line before any batch: %s", line)
			}
			bs[len(bs)-1].recs = append(bs[len(bs)-1].recs, parseDumpRecord(t, line))
		case strings.HasPrefix(line, "Log starting offset"), line == "":
		default:
			t.Fatalf("unexpected DumpLogSegments line: %q", line)
		}
	}
	return res
}

// pairs splits "k1: v1 k2: v2 ..." whose values have no spaces.
func pairs(t *testing.T, s string) map[string]string {
	t.Helper()
	f := strings.Fields(s)
	if len(f)%2 != 0 {
		t.Fatalf("odd field count in %q", s)
	}
	m := make(map[string]string, len(f)/2)
	for i := 0; i < len(f); i += 2 {
		k, ok := strings.CutSuffix(f[i], ":")
		if !ok {
			t.Fatalf("field %q in %q", f[i], s)
		}
		m[k] = f[i+1]
	}
	return m
}

// parseDumpRecord parses "| offset: ... headerKeys: [a,b] [key: K]
// [payload: P]" or a control record's line. Keys and payloads may hold
// spaces: a key runs to " payload: ", a payload to the end of the line.
func parseDumpRecord(t *testing.T, line string) dumpRecord {
	t.Helper()
	line = strings.TrimPrefix(line, "| ")
	head, rest, ok := strings.Cut(line, " headerKeys: [")
	if !ok {
		t.Fatalf("no headerKeys in %q", line)
	}
	r := dumpRecord{fields: pairs(t, head)}
	keys, rest, ok := strings.Cut(rest, "]")
	if !ok {
		t.Fatalf("unterminated headerKeys in %q", line)
	}
	if keys != "" {
		r.headerKeys = strings.Split(keys, ",")
	}
	rest = strings.TrimPrefix(rest, " ")
	if before, payload, ok := strings.Cut(rest, "payload: "); ok {
		r.payload = &payload
		rest = strings.TrimSuffix(before, " ")
	}
	if k, ok := strings.CutPrefix(rest, "key: "); ok {
		r.key = &k
		rest = ""
	}
	if rest != "" {
		for k, v := range pairs(t, rest) {
			r.fields[k] = v
		}
	}
	return r
}

func compareBatch(t *testing.T, path string, got segBatch, want dumpBatch) {
	t.Helper()
	b := got.b
	ts := "CreateTime"
	if b.TimestampType == records.LogAppendTime {
		ts = "LogAppendTime"
	}
	codec := b.Codec.String()
	horizon := "OptionalLong.empty"
	if b.DeleteHorizon {
		horizon = "OptionalLong[" + strconv.FormatInt(b.FirstTimestamp, 10) + "]"
	}
	fields := map[string]string{
		"baseOffset":           strconv.FormatInt(b.BaseOffset, 10),
		"lastOffset":           strconv.FormatInt(b.LastOffset, 10),
		"count":                strconv.Itoa(b.NumRecords),
		"baseSequence":         strconv.Itoa(int(b.BaseSequence)),
		"producerId":           strconv.FormatInt(b.ProducerID, 10),
		"producerEpoch":        strconv.Itoa(int(b.ProducerEpoch)),
		"partitionLeaderEpoch": strconv.Itoa(int(b.PartitionLeaderEpoch)),
		"isTransactional":      strconv.FormatBool(b.Transactional),
		"isControl":            strconv.FormatBool(b.Control),
		"deleteHorizonMs":      horizon,
		"position":             strconv.FormatInt(b.Position, 10),
		ts:                     strconv.FormatInt(b.MaxTimestamp, 10),
		"size":                 strconv.Itoa(b.Size),
		"magic":                strconv.Itoa(int(b.Magic)),
		"compresscodec":        codec,
		"crc":                  strconv.FormatUint(uint64(b.CRC), 10),
		"isvalid":              strconv.FormatBool(b.CRCValid),
	}
	for k, v := range fields {
		if wv := want.fields[k]; wv != v {
			t.Errorf("%s: batch at %d: %s = %s, DumpLogSegments %q", path, b.Position, k, v, wv)
		}
	}
	if len(got.recs) != len(want.recs) || len(got.recs) != b.NumRecords {
		t.Errorf("%s: batch at %d: %d records (count %d), DumpLogSegments %d", path, b.Position, len(got.recs), b.NumRecords, len(want.recs))
		return
	}
	for i, r := range got.recs {
		w := want.recs[i]
		seq := int64(-1)
		if b.BaseSequence >= 0 {
			seq = (int64(b.BaseSequence) + r.Offset - b.BaseOffset) % (1 << 31)
		}
		rf := map[string]string{
			"offset":    strconv.FormatInt(r.Offset, 10),
			ts:          strconv.FormatInt(r.Timestamp, 10),
			"keySize":   strconv.Itoa(r.KeySize),
			"valueSize": strconv.Itoa(r.ValueSize),
			"sequence":  strconv.FormatInt(seq, 10),
		}
		if b.Control {
			typ, epoch, ok := segment.ParseControl(r.Key, r.Value)
			if !ok {
				t.Errorf("%s: batch at %d: control record %d is not a marker", path, b.Position, r.Offset)
			}
			rf["endTxnMarker"] = strings.ToUpper(typ)
			rf["coordinatorEpoch"] = strconv.Itoa(int(epoch))
		}
		for k, v := range rf {
			if wv := w.fields[k]; wv != v {
				t.Errorf("%s: batch at %d: record %d: %s = %s, DumpLogSegments %q", path, b.Position, i, k, v, wv)
			}
		}
		if len(w.fields) != len(rf) {
			t.Errorf("%s: batch at %d: record %d: DumpLogSegments fields %v, compared %v", path, b.Position, i, w.fields, rf)
		}
		var keys []string
		for _, h := range r.Headers {
			keys = append(keys, h.Key)
		}
		if strings.Join(keys, ",") != strings.Join(w.headerKeys, ",") {
			t.Errorf("%s: batch at %d: record %d: header keys %q, DumpLogSegments %q", path, b.Position, i, keys, w.headerKeys)
		}
		if !b.Control {
			checkText(t, path, b.Position, i, "key", r.Key, w.key)
			checkText(t, path, b.Position, i, "payload", r.Value, w.payload)
		}
		checkHeaderValues(t, path, b, r)
	}
}

// checkText compares a key or value with DumpLogSegments's rendering of
// it: absent or "null" for null, else the bytes as UTF-8 text.
func checkText(t *testing.T, path string, pos int64, i int, what string, got []byte, want *string) {
	t.Helper()
	switch {
	case got == nil && (want == nil || *want == "null"):
	case got != nil && want != nil && string(got) == *want:
	default:
		t.Errorf("%s: batch at %d: record %d: %s %q, DumpLogSegments %v", path, pos, i, what, got, fmtPtr(want))
	}
}

func fmtPtr(s *string) string {
	if s == nil {
		return "(absent)"
	}
	return strconv.Quote(*s)
}

// checkHeaderValues checks header values, which DumpLogSegments does not
// print, against what the producers wrote: message ids "<topic>-<n>"
// where franz-go topics number records by offset.
func checkHeaderValues(t *testing.T, path string, b records.Batch, r records.Record) {
	t.Helper()
	loc, err := logdir.ParsePath(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range r.Headers {
		if h.Key != traffic.MessageIDHeader {
			continue
		}
		want := loc.Topic + "-" + strconv.FormatInt(r.Offset, 10)
		if (strings.HasPrefix(loc.Topic, "seg-franz-") || strings.HasPrefix(loc.Topic, "seg-ids-")) && string(h.Value) != want {
			t.Errorf("%s: batch at %d: record %d: message id %q, produced %q", path, b.Position, r.Offset, h.Value, want)
		}
		if !strings.HasPrefix(string(h.Value), loc.Topic+"-") {
			t.Errorf("%s: batch at %d: record %d: message id %q is not from %s", path, b.Position, r.Offset, h.Value, loc.Topic)
		}
	}
}
