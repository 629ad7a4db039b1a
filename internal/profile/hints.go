package profile

import (
	"fmt"
	"slices"
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

// hints are the observations about known costly patterns in r (busy:
// its weighed samples), in a fixed order: compression, crypto, checksums,
// GC, threads JFR could hardly sample, locks.
func hints(r *Report, busy []weighted) []Hint {
	h := &hinter{r: r, busy: busy, byCat: map[string]*Category{}}
	for i := range r.Categories {
		h.byCat[r.Categories[i].Name] = &r.Categories[i]
	}
	return slices.Concat(h.compression(), h.crypto(), h.checksum(), h.gc(), h.unsampled(), h.locks())
}

// hinter is what the hints are drawn from: the report so far, its busy
// samples and its categories by name.
type hinter struct {
	r     *Report
	busy  []weighted
	byCat map[string]*Category
}

// in counts a category's samples by a predicate on the deciding frame.
func (h *hinter) in(cat string, pred func(frame string) bool) int64 {
	var n int64
	for _, b := range h.busy {
		if b.category == cat && b.decider >= 0 && pred(frameName(b.s.Stack.Frames[b.decider])) {
			n++
		}
	}
	return n
}

// intrinsic counts a category's samples whose innermost frame is an
// intrinsic's target, and names those methods and their flags.
func (h *hinter) intrinsic(cat string) (n int64, methods, flags []string) {
	seen := map[string]bool{}
	for _, b := range h.busy {
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

// head is a hint's opening: the category's share, samples and top frame.
func (h *hinter) head(name string, c *Category) string {
	return fmt.Sprintf("%s: %s of the JVM's CPU (%d of %d busy samples; top frame %s)", name, pct(c.Share), c.Samples, h.r.Samples.Busy, topFrame(c))
}

// compression: a codec's share of the CPU, and whether the broker
// compressed (recompressing for a topic's compression.type) or only
// decompressed (validating).
func (h *hinter) compression() []Hint {
	var out []Hint
	for _, codec := range []string{Zstd, LZ4, Snappy, Gzip} {
		c := h.byCat[codec]
		if c == nil || c.Share < CompressionHintShare || c.Samples < minHintSamples {
			continue
		}
		name := strings.TrimPrefix(codec, "compression/")
		comp := h.in(codec, isCompressing)
		decomp := h.in(codec, isDecompressing)
		text := h.head(name, c) + fmt.Sprintf(", %d compressing and %d decompressing", comp, decomp)
		if comp > decomp {
			text += ": a broker compresses batches only to recompress them, when a topic's compression.type differs from the codec producers send"
			var from []string
			for _, other := range []string{Zstd, LZ4, Snappy, Gzip} {
				if other == codec {
					continue
				}
				if n := h.in(other, isDecompressing); n > 0 {
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
	return out
}

// crypto: MD5 and AES, with their intrinsics off or missing, and the TLS
// engine itself.
func (h *hinter) crypto() []Hint {
	var out []Hint
	for _, cat := range []string{MD5, AESGCM} {
		c := h.byCat[cat]
		if c == nil || c.Share < CryptoHintShare || c.Samples < minHintSamples {
			continue
		}
		name := map[string]string{MD5: "MD5", AESGCM: "AES"}[cat]
		text := h.head(name, c)
		if cat == MD5 {
			text += ": MD5 in a broker is usually an object-store client computing Content-MD5 for tiered-storage uploads"
		} else {
			text += ": AES in a broker is TLS (with AES-GCM suites) or an object-store client's HTTPS"
		}
		if n, ms, fl := h.intrinsic(cat); n > 0 {
			text += fmt.Sprintf("; %d samples are in %s, which compiled code replaces with an intrinsic (%s): that code ran as Java, without the intrinsic",
				n, strings.Join(ms, ", "), strings.Join(fl, ", "))
			for _, f := range fl {
				if v, ok := h.r.Flags[f]; ok {
					text += fmt.Sprintf(" (%s=%s)", f, v)
				}
			}
		}
		if cat == AESGCM {
			if v, ok := h.r.Flags["UseAES"]; ok && v == "false" {
				text += "; UseAES is false: the CPU has no AES instructions (or -XX:-UseAES), so AES runs without intrinsics"
			}
		}
		out = append(out, Hint{Kind: "crypto", Text: text + "."})
	}
	if c := h.byCat[TLS]; c != nil && c.Share >= TLSHintShare && c.Samples >= minHintSamples {
		out = append(out, Hint{Kind: "crypto", Text: h.head("TLS", c) + ": the TLS engine itself (records, handshakes), besides the cipher."})
	}
	return out
}

// checksum: CRC32C of every batch received, with its intrinsic missing.
func (h *hinter) checksum() []Hint {
	c := h.byCat[CRC32C]
	if c == nil || c.Share < CRC32CHintShare || c.Samples < minHintSamples {
		return nil
	}
	text := h.head("CRC32C", c) + ": the broker checks the CRC of every batch it receives"
	if n, ms, fl := h.intrinsic(CRC32C); n > 0 {
		text += fmt.Sprintf("; %d samples are in %s, which compiled code replaces with an intrinsic (%s): that code ran as Java, without the intrinsic",
			n, strings.Join(ms, ", "), strings.Join(fl, ", "))
	}
	return []Hint{{Kind: "checksum", Text: text + "."}}
}

// gc: the GC and VM threads' share of the CPU, and the pauses.
func (h *hinter) gc() []Hint {
	gcShare := 0.0
	if c := h.byCat[GC]; c != nil {
		gcShare = c.Share
	}
	p := h.r.GCPauses
	if gcShare < GCHintShare && p.PausedShare < GCPauseHintShare {
		return nil
	}
	text := fmt.Sprintf("GC: %s of the JVM's CPU in GC and VM threads", pct(gcShare))
	if p.Count > 0 {
		text += fmt.Sprintf("; %d collections paused the JVM for %.0f ms in all (%s of the recording), the longest %.1f ms",
			p.Count, p.PausesMs, pct(p.PausedShare), p.LongestMs)
	}
	return []Hint{{Kind: "gc", Text: text + "."}}
}

// unsampled: threads JFR could hardly sample, with fewer samples than
// their share of the CPU gives at the density of the threads that have
// samples.
func (h *hinter) unsampled() []Hint {
	var out []Hint
	busyN := h.r.Samples.Busy
	var sampledShare float64
	for _, t := range h.r.Threads {
		if t.Samples > 0 {
			sampledShare += t.Share
		}
	}
	if busyN <= 0 || sampledShare <= 0 {
		return nil
	}
	density := float64(busyN) / sampledShare
	for _, t := range h.r.Threads {
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
	return out
}

// locks: the three most contended monitors, when they held threads long.
func (h *hinter) locks() []Hint {
	var out []Hint
	for i, m := range h.r.Monitors {
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
