// Package source runs the first stage of the request pipeline: it reads
// packets from capture files, decodes them to TCP segments and hands them
// to the wire decoder, which emits request events. Commands that start
// from a capture (requests, explain --pcap, report --pcap, model
// --from-capture) share it.
package source

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/capture"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/records"
	"github.com/kscope-dev/kscope/internal/wire"
)

// Result says what reading the files found.
type Result struct {
	Files    int
	Live     string // the interface of a live capture (Live); "" for files
	Wire     wire.Stats
	Capture  CaptureStats
	TLS      TLSResult
	Warnings []error // damaged files that were read as far as possible, and what files left out
	// secretsKept are the key log bytes kept from the files' secrets
	// blocks: their budget is shared.
	secretsKept int64
}

// CaptureStats counts packets before the Kafka decoder.
type CaptureStats struct {
	Packets     int64 `json:"packets"` // all packets in the files
	FileBytes   int64 `json:"file_bytes"`
	NotTCP      int64 `json:"not_tcp"`
	Undecodable int64 `json:"undecodable"`
	Fragments   int64 `json:"fragments"`
	// UnsupportedLink counts packets of a link type kscope does not
	// decode (each file's warning names the type).
	UnsupportedLink int64 `json:"unsupported_link,omitempty"`
	// Secrets blocks (pcapng) whose TLS key logs were kept, and those
	// skipped because they did not fit in capture.MaxSecretsBytes.
	SecretsBlocks       int64 `json:"secrets_blocks,omitempty"`
	SecretsSkipped      int64 `json:"secrets_skipped,omitempty"`
	SecretsSkippedBytes int64 `json:"secrets_skipped_bytes,omitempty"`

	// Live captures only: the kernel's counters of the packet socket.
	KernelPackets int64 `json:"kernel_packets,omitempty"` // accepted by the socket filter, dropped ones included
	KernelDrops   int64 `json:"kernel_drops,omitempty"`   // lost because the ring was full
	QueueFreezes  int64 `json:"queue_freezes,omitempty"`  // times the ring filled up
}

// Add adds o's counters to c.
func (c *CaptureStats) Add(o CaptureStats) {
	c.Packets += o.Packets
	c.FileBytes += o.FileBytes
	c.NotTCP += o.NotTCP
	c.Undecodable += o.Undecodable
	c.Fragments += o.Fragments
	c.UnsupportedLink += o.UnsupportedLink
	c.SecretsBlocks += o.SecretsBlocks
	c.SecretsSkipped += o.SecretsSkipped
	c.SecretsSkippedBytes += o.SecretsSkippedBytes
	c.KernelPackets += o.KernelPackets
	c.KernelDrops += o.KernelDrops
	c.QueueFreezes += o.QueueFreezes
}

// Add adds the counters of o, a later capture, to r (files, warnings
// and the interface name are not counters: r keeps its own).
func (r *Result) Add(o Result) {
	r.Wire.Add(o.Wire)
	r.Capture.Add(o.Capture)
}

// Options configure ReadFiles.
type Options struct {
	Wire   wire.Config
	Topics *wire.TopicNames
	// Progress, when set, is called with bytes read of the current file
	// and its size, every few thousand packets (not for a pipe, whose
	// size is not known).
	Progress func(file string, done, total int64)
	// TLSKeyLog is an NSS key log (SSLKEYLOGFILE) with the secrets of
	// the TLS connections captured, or a directory of them (*.log): a
	// regular file, which may still be growing (a live capture), or a
	// pipe or FIFO read once. Secrets in the captures' pcapng Decryption
	// Secrets Blocks are used too, read before the key log (they win a
	// conflict) and, for a regular file, before its packets.
	TLSKeyLog string
	// TLSKeyLogFromBroker says the key log is the one the broker's
	// key-log agent writes (--tls-keys attach), for messages.
	TLSKeyLogFromBroker bool
	// Tick, when set, is called by Live about once a TickEvery with the
	// counters so far and the decoder's gauges, from the goroutine that
	// decodes (so it must not block): a long-running capture's health.
	Tick func(Result, wire.Gauges)
}

// TickEvery is how often Live calls Options.Tick.
const TickEvery = time.Second

// ReadFiles decodes the files in order, as one capture (rotated files of
// one capture continue each other's connections), and calls emit for every
// request. A file that is not a capture stops the run with an error; a
// damaged file is read up to the damage and reported in Result.Warnings,
// as is what a file left out (capture.File.Warnings). The files' secrets
// blocks share one budget, capture.MaxSecretsBytes.
func ReadFiles(paths []string, opts Options, emit func(*event.Request)) (Result, error) {
	var res Result
	// Open every file first: an unusable input should fail before any
	// output is written.
	files := make([]*capture.File, 0, len(paths))
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, p := range paths {
		f, err := capture.OpenFile(p)
		if err != nil {
			return res, err
		}
		files = append(files, f)
	}
	keys, streamed := newCaptureKeys(), make([]bool, len(files))
	for i, f := range files {
		streamed[i] = keys.readSecretsFirst(f)
	}
	if err := keys.openKeyLog(opts.TLSKeyLog, opts.TLSKeyLogFromBroker); err != nil {
		return res, err
	}
	opts.Wire.TLSKeys = keys
	dec := wire.NewDecoder(opts.Wire, &records.Decoder{}, opts.Topics, emit)
	seg := capture.NewDecoder()
	for i, f := range files {
		res.Files++
		f.LimitSecrets(capture.MaxSecretsBytes - res.secretsKept)
		err := readFile(f, seg, dec, fileSecrets{keys, streamed[i], res.Capture.Packets > 0}, opts.Progress)
		res.addFile(f)
		if err != nil {
			res.Warnings = append(res.Warnings, err)
		}
		res.Warnings = append(res.Warnings, f.Warnings()...)
	}
	dec.Close()
	res.Wire = dec.Stats()
	res.TLS = keys.result(dec)
	res.Capture.NotTCP, res.Capture.Undecodable, res.Capture.Fragments = seg.NotTCP, seg.Undecodable, seg.Fragments
	res.Capture.UnsupportedLink = seg.UnsupportedLink
	return res, nil
}

// addFile adds the counters of a file read.
func (r *Result) addFile(f *capture.File) {
	r.Capture.Packets += f.Packets()
	r.Capture.FileBytes += f.Offset()
	s := f.SecretsStats()
	r.Capture.SecretsBlocks += s.Blocks
	r.Capture.SecretsSkipped += s.Skipped
	r.Capture.SecretsSkippedBytes += s.SkippedBytes
	r.secretsKept += s.Bytes
}

// fileSecrets says what to do with the secrets blocks read with a
// file's packets: add them to keys when the file is a stream (a regular
// file's were all read first), as late ones once packets came before.
type fileSecrets struct {
	keys        *captureKeys
	streamed    bool
	packetsRead bool // packets of earlier files
}

func (fs fileSecrets) add(f *capture.File, packetsBefore int) {
	// Taken even when not used: the reader keeps them until then.
	s := f.Secrets()
	if s != nil && fs.streamed {
		fs.keys.addStreamed(s, f.Path, fs.packetsRead || packetsBefore > 0)
	}
}

func readFile(f *capture.File, seg *capture.Decoder, dec *wire.Decoder, secrets fileSecrets, progress func(string, int64, int64)) error {
	for n := 0; ; n++ {
		data, ci, link, err := f.Next()
		secrets.add(f, n)
		if err != nil {
			if errors.Is(err, io.EOF) {
				if progress != nil && f.Size > 0 {
					progress(f.Path, f.Size, f.Size)
				}
				return nil
			}
			return err
		}
		if s, ok := seg.Decode(data, link); ok {
			dec.Packet(s, ci)
		}
		if progress != nil && f.Size > 0 && n%4096 == 0 {
			progress(f.Path, f.Offset(), f.Size)
		}
	}
}

// FormatFooter renders the counters as the one-paragraph footer that
// commands print on stderr.
func (r Result) FormatFooter() string {
	w := r.Wire
	from := fmt.Sprintf("%d file(s)", r.Files)
	if r.Live != "" {
		from = "live on " + r.Live
	}
	s := fmt.Sprintf("%s, %d packets (%d on Kafka ports, %s of TCP payload), %d connections\n",
		from, r.Capture.Packets, w.Packets, humanBytes(w.Bytes), w.Connections)
	s += fmt.Sprintf("%d requests decoded: %d answered, %d acks=0 (no response), %d unanswered; %d unknown API/version; %d responses unpaired\n",
		w.Requests, w.Responses, w.NoResponse, w.Unanswered, w.UnknownAPIs, w.Unpaired)
	s += fmt.Sprintf("%s skipped at %d gaps (%d resyncs); %d partial%s, %d oversized, %d decode errors, %d batch errors",
		humanBytes(w.SkippedBytes), w.Gaps, w.Resyncs, w.Partial, partialDetail(w), w.Oversized, w.DecodeErrors, w.BatchErrors)
	if w.ClockStepped > 0 {
		s += fmt.Sprintf(", %d responses timestamped before their requests (the capture's clock stepped back: no latency, left out of statistics)", w.ClockStepped)
	}
	if w.Evicted > 0 {
		s += fmt.Sprintf(", %d evicted from a full in-flight table", w.Evicted)
	}
	if w.SASLTokens > 0 {
		s += fmt.Sprintf(", %d raw SASL tokens (after SaslHandshake v0)", w.SASLTokens)
	}
	if c := r.Capture; c.Undecodable+c.Fragments > 0 {
		s += fmt.Sprintf("; %d undecodable packets, %d IP fragments ignored", c.Undecodable, c.Fragments)
	}
	if n := r.Capture.UnsupportedLink; n > 0 {
		s += fmt.Sprintf("; %d packets of an unsupported link type", n)
	}
	if c := r.Capture; c.SecretsSkipped > 0 {
		s += fmt.Sprintf("; %d secrets blocks (%s) skipped over the %s budget for TLS key logs",
			c.SecretsSkipped, humanBytes(c.SecretsSkippedBytes), humanBytes(capture.MaxSecretsBytes))
	}
	if t := formatTLS(w, r.TLS); t != "" {
		s += "\n" + t
	}
	if r.Live != "" {
		s += fmt.Sprintf("\n%d packets dropped by the kernel (ring full %d times) of %d the socket filter kept",
			r.Capture.KernelDrops, r.Capture.QueueFreezes, r.Capture.KernelPackets)
	}
	return s
}

// partialDetail says why frames were partial besides a gap: cut off by
// the end of the capture, or not kept within the budget for frames in
// progress.
func partialDetail(w wire.Stats) string {
	var parts []string
	if w.Unfinished > 0 {
		parts = append(parts, fmt.Sprintf("%d cut off by the end of the capture", w.Unfinished))
	}
	if w.OverBudget > 0 {
		parts = append(parts, fmt.Sprintf("%d not decoded: the frames in progress on all connections held their memory budget", w.OverBudget))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
