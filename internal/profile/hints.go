package profile

import (
	"fmt"
	"strings"
)

// Hint thresholds: shares of the JVM's estimated CPU, and lock waits.
const (
	// CompressionHintShare: a codec at or above it gets a hint.
	CompressionHintShare = 0.05
	// CryptoHintShare: MD5 or AES at or above it gets a hint.
	CryptoHintShare = 0.02
	// TLSHintShare, CRC32CHintShare: likewise for TLS and CRC32C.
	TLSHintShare    = 0.10
	CRC32CHintShare = 0.05
	// GCHintShare and GCPauseHintShare: GC CPU, or time paused (of the
	// recording).
	GCHintShare      = 0.15
	GCPauseHintShare = 0.05
	// UnsampledHintShare: a thread with this share of the CPU but under
	// UnsampledDensity of the samples its share would give (at the
	// density of the threads that have samples).
	UnsampledHintShare = 0.05
	UnsampledDensity   = 0.25
	// LockHintTotalMs and LockHintWorstMs: a monitor whose waits add up
	// to, or whose worst wait reaches, these.
	LockHintTotalMs = 100
	LockHintWorstMs = 50
	// minHintSamples: fewer busy samples than this in a category is too
	// little to state anything about it.
	minHintSamples = 10
)

// intrinsicTargets are methods the JIT replaces with a stub when the
// intrinsic is on: samples inside them mean the work ran as Java code.
var intrinsicTargets = map[string]string{
	"sun.security.provider.MD5.implCompress0":                 "UseMD5Intrinsics",
	"sun.security.provider.SHA.implCompress0":                 "UseSHA1Intrinsics",
	"sun.security.provider.SHA2.implCompress0":                "UseSHA256Intrinsics",
	"sun.security.provider.SHA5.implCompress0":                "UseSHA512Intrinsics",
	"com.sun.crypto.provider.AESCrypt.implEncryptBlock":       "UseAESIntrinsics",
	"com.sun.crypto.provider.AESCrypt.implDecryptBlock":       "UseAESIntrinsics",
	"com.sun.crypto.provider.CounterMode.implCrypt":           "UseAESCTRIntrinsics",
	"com.sun.crypto.provider.GHASH.processBlocks":             "UseGHASHIntrinsics",
	"java.util.zip.CRC32C.updateBytes":                        "UseCRC32CIntrinsics",
	"java.util.zip.CRC32C.updateDirectByteBuffer":             "UseCRC32CIntrinsics",
	"com.sun.crypto.provider.GaloisCounterMode.implGCMCrypt0": "UseAESIntrinsics",
}

func hints(r *Report, busy []weighted) []Hint {
	var out []Hint
	byCat := map[string]*Category{}
	for i := range r.Categories {
		byCat[r.Categories[i].Name] = &r.Categories[i]
	}
	busyN := r.Samples.Busy
	// in counts a category's samples by a predicate on the deciding frame.
	in := func(cat string, pred func(frame string) bool) int64 {
		var n int64
		for _, b := range busy {
			if b.category == cat && b.decider >= 0 && pred(frameName(b.s.Stack.Frames[b.decider])) {
				n++
			}
		}
		return n
	}
	// intrinsic counts a category's samples whose innermost frame is an
	// intrinsic's target, and names those methods and their flags.
	intrinsic := func(cat string) (n int64, methods, flags []string) {
		seen := map[string]bool{}
		for _, b := range busy {
			if b.category != cat {
				continue
			}
			top := b.s.Stack.Frames[0]
			f, ok := intrinsicTargets[frameName(top)]
			if !ok {
				continue
			}
			n++
			if m := shortName(frameName(top)); !seen[m] {
				seen[m] = true
				methods = append(methods, m)
			}
			if !seen[f] {
				seen[f] = true
				flags = append(flags, f)
			}
		}
		return n, methods, flags
	}
	head := func(name string, c *Category) string {
		return fmt.Sprintf("%s: %s of the JVM's CPU (%d of %d busy samples; top frame %s)", name, pct(c.Share), c.Samples, busyN, topFrame(c))
	}

	for _, codec := range []string{Zstd, LZ4, Snappy, Gzip} {
		c := byCat[codec]
		if c == nil || c.Share < CompressionHintShare || c.Samples < minHintSamples {
			continue
		}
		name := strings.TrimPrefix(codec, "compression/")
		comp := in(codec, isCompressing)
		decomp := in(codec, isDecompressing)
		text := head(name, c) + fmt.Sprintf(", %d compressing and %d decompressing", comp, decomp)
		if comp > decomp {
			text += ": a broker compresses batches only to recompress them, when a topic's compression.type differs from the codec producers send"
			var from []string
			for _, other := range []string{Zstd, LZ4, Snappy, Gzip} {
				if other == codec {
					continue
				}
				if n := in(other, isDecompressing); n > 0 {
					from = append(from, fmt.Sprintf("%s, decompressed in %d samples", strings.TrimPrefix(other, "compression/"), n))
				}
			}
			if len(from) > 0 {
				text += " (here batches arrive as " + strings.Join(from, "; ") + ")"
			}
			text += ", or when it converts batches for old clients; with compression.type=producer, or producers using " + name + ", the broker keeps the producers' batches as they are"
		} else {
			text += ": the broker decompresses compressed batches to validate their records (and to convert them for old clients)"
		}
		out = append(out, Hint{Kind: "compression", Text: text + "."})
	}

	for _, cat := range []string{MD5, AESGCM} {
		c := byCat[cat]
		if c == nil || c.Share < CryptoHintShare || c.Samples < minHintSamples {
			continue
		}
		name := map[string]string{MD5: "MD5", AESGCM: "AES"}[cat]
		text := head(name, c)
		if cat == MD5 {
			text += ": MD5 in a broker is usually an object-store client computing Content-MD5 for tiered-storage uploads"
		} else {
			text += ": AES in a broker is TLS (with AES-GCM suites) or an object-store client's HTTPS"
		}
		if n, ms, fl := intrinsic(cat); n > 0 {
			text += fmt.Sprintf("; %d samples are in %s, which compiled code replaces with an intrinsic (%s): that code ran as Java, without the intrinsic",
				n, strings.Join(ms, ", "), strings.Join(fl, ", "))
			for _, f := range fl {
				if v, ok := r.Flags[f]; ok {
					text += fmt.Sprintf(" (%s=%s)", f, v)
				}
			}
		}
		if cat == AESGCM {
			if v, ok := r.Flags["UseAES"]; ok && v == "false" {
				text += "; UseAES is false: the CPU has no AES instructions (or -XX:-UseAES), so AES runs without intrinsics"
			}
		}
		out = append(out, Hint{Kind: "crypto", Text: text + "."})
	}
	if c := byCat[TLS]; c != nil && c.Share >= TLSHintShare && c.Samples >= minHintSamples {
		out = append(out, Hint{Kind: "crypto", Text: head("TLS", c) + ": the TLS engine itself (records, handshakes), besides the cipher."})
	}
	if c := byCat[CRC32C]; c != nil && c.Share >= CRC32CHintShare && c.Samples >= minHintSamples {
		text := head("CRC32C", c) + ": the broker checks the CRC of every batch it receives"
		if n, ms, fl := intrinsic(CRC32C); n > 0 {
			text += fmt.Sprintf("; %d samples are in %s, which compiled code replaces with an intrinsic (%s): that code ran as Java, without the intrinsic",
				n, strings.Join(ms, ", "), strings.Join(fl, ", "))
		}
		out = append(out, Hint{Kind: "checksum", Text: text + "."})
	}

	gcShare := 0.0
	if c := byCat[GC]; c != nil {
		gcShare = c.Share
	}
	if gcShare >= GCHintShare || r.GCPauses.PausedShare >= GCPauseHintShare {
		text := fmt.Sprintf("GC: %s of the JVM's CPU in GC and VM threads", pct(gcShare))
		if r.GCPauses.Count > 0 {
			text += fmt.Sprintf("; %d collections paused the JVM for %.0f ms in all (%s of the recording), the longest %.1f ms",
				r.GCPauses.Count, r.GCPauses.PausesMs, pct(r.GCPauses.PausedShare), r.GCPauses.LongestMs)
		}
		out = append(out, Hint{Kind: "gc", Text: text + "."})
	}

	// Threads JFR could hardly sample: fewer samples than their share of
	// the CPU gives at the density of the threads that have samples.
	var sampledShare float64
	for _, t := range r.Threads {
		if t.Samples > 0 {
			sampledShare += t.Share
		}
	}
	if busyN > 0 && sampledShare > 0 {
		density := float64(busyN) / sampledShare
		for _, t := range r.Threads {
			if t.Share < UnsampledHintShare || t.Category == JIT || t.Category == GC {
				continue
			}
			expect := t.Share * density
			if float64(t.Samples) >= UnsampledDensity*expect {
				continue
			}
			out = append(out, Hint{Kind: "unsampled", Text: fmt.Sprintf(
				"thread %s used %s of the JVM's CPU but JFR took %d samples of it (its share would give about %.0f): its time is likely in intrinsic stubs (CRC32C, MD5, AES) or JVM code, whose stacks JFR cannot walk, so where it went is unknown or rests on few samples.",
				t.Thread, pct(t.Share), t.Samples, expect)})
		}
	}

	for i, m := range r.Monitors {
		if i >= 3 {
			break
		}
		if m.TotalMs < LockHintTotalMs && m.WorstMs < LockHintWorstMs {
			continue
		}
		text := fmt.Sprintf("lock: %d waits for %s %s in %s, %.0f ms in all, the worst %.1f ms; waiting: %s",
			m.Waits, m.Monitor, map[string]string{"monitor": "(synchronized)", "park": "(java.util.concurrent lock)"}[m.Kind], m.Site, m.TotalMs, m.WorstMs, strings.Join(m.Threads, ", "))
		if len(m.Owners) > 0 {
			text += "; held by " + strings.Join(m.Owners, ", ")
		}
		out = append(out, Hint{Kind: "lock", Text: text + "."})
	}
	return out
}

func topFrame(c *Category) string {
	if len(c.Frames) == 0 {
		return "-"
	}
	return c.Frames[0].Frame
}

// isCompressing and isDecompressing read a codec frame's direction from
// its class and method names.
func isDecompressing(frame string) bool {
	f := strings.ToLower(frame)
	for _, s := range []string{"decompress", "uncompress", "inflat", "inputstream", "decode", "decoder"} {
		if strings.Contains(f, s) {
			return true
		}
	}
	return false
}

func isCompressing(frame string) bool {
	if isDecompressing(frame) {
		return false
	}
	f := strings.ToLower(frame)
	for _, s := range []string{"compress", "deflat", "outputstream", "encode", "encoder"} {
		if strings.Contains(f, s) {
			return true
		}
	}
	return false
}
