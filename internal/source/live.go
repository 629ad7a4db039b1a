package source

import (
	"context"
	"errors"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/kscope-dev/kscope/internal/capture"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/records"
	"github.com/kscope-dev/kscope/internal/wire"
)

// liveDrainMax bounds how long Live keeps reading after ctx ends, to take
// the packets the kernel captured before that from the ring.
const liveDrainMax = time.Second

// Live captures on an interface until ctx ends, and decodes like
// ReadFiles: emit is called for every request, from the goroutine that
// called Live. raw, when not nil, is given every packet the kernel filter
// kept with its link type, before it is decoded (the bytes are valid only
// during the call), e.g. for a PcapNGWriter (Ethernet unless cfg.Interface
// is a raw-IP interface).
//
// The broker ports are cfg.Ports, or opts.Wire.Ports when cfg.Ports is
// empty (and the other way round). When ctx ends, the packets captured
// until then are still read from the ring, the decoder is flushed
// (requests still waiting for a response are reported unanswered), and the
// Result is returned with a nil error. An error opening or reading the
// socket is returned with the Result so far.
func Live(ctx context.Context, cfg capture.LiveConfig, opts Options, emit func(*event.Request),
	raw func(link layers.LinkType, ci gopacket.CaptureInfo, data []byte)) (Result, error) {
	var res Result
	if len(cfg.Ports) == 0 {
		cfg.Ports = opts.Wire.Ports
	}
	if len(opts.Wire.Ports) == 0 {
		opts.Wire.Ports = cfg.Ports
	}
	keys := newCaptureKeys()
	if err := keys.openKeyLog(opts.TLSKeyLog, opts.TLSKeyLogFromBroker); err != nil {
		return res, err
	}
	opts.Wire.TLSKeys = keys
	lv, err := capture.OpenLive(cfg)
	if err != nil {
		return res, err
	}
	defer lv.Close()
	res.Live = lv.Interface()
	dec := wire.NewDecoder(opts.Wire, &records.Decoder{}, opts.Topics, emit)
	seg := capture.NewDecoder()
	var tick func()
	if opts.Tick != nil {
		tick = func() {
			r := res
			fillLiveResult(&r, lv, seg, dec)
			r.TLS = keys.result(dec)
			opts.Tick(r, dec.Gauges())
		}
	}
	readErr := readLive(ctx, lv, seg, dec, raw, tick)
	dec.Close()
	closeErr := lv.Close()
	fillLiveResult(&res, lv, seg, dec) // the final counters, kept by Close
	res.TLS = keys.result(dec)
	if readErr != nil {
		return res, readErr
	}
	return res, closeErr
}

// fillLiveResult copies the counters of the socket, the packet decoder
// and the wire decoder into res.
func fillLiveResult(res *Result, lv *capture.Live, seg *capture.Decoder, dec *wire.Decoder) {
	st, _ := lv.Stats()
	res.Wire = dec.Stats()
	res.Capture.Packets = st.Read
	res.Capture.KernelPackets, res.Capture.KernelDrops, res.Capture.QueueFreezes = st.Kernel, st.Drops, st.QueueFreezes
	res.Capture.NotTCP, res.Capture.Undecodable, res.Capture.Fragments = seg.NotTCP, seg.Undecodable, seg.Fragments
	res.Capture.UnsupportedLink = seg.UnsupportedLink
}

func readLive(ctx context.Context, lv *capture.Live, seg *capture.Decoder, dec *wire.Decoder,
	raw func(layers.LinkType, gopacket.CaptureInfo, []byte), tick func()) error {
	done := ctx.Done()
	var stopAt, deadline time.Time
	var nextTick time.Time
	maybeTick := func(now time.Time) {
		if tick != nil && !now.Before(nextTick) {
			nextTick = now.Add(TickEvery)
			tick()
		}
	}
	for {
		if stopAt.IsZero() {
			select {
			case <-done:
				stopAt = time.Now()
				deadline = stopAt.Add(liveDrainMax)
			default:
			}
		} else if time.Now().After(deadline) {
			return nil
		}
		data, ci, link, err := lv.Next()
		if err != nil {
			if errors.Is(err, capture.ErrTimeout) {
				if !stopAt.IsZero() {
					return nil // the ring is empty: everything before ctx ended is read
				}
				maybeTick(time.Now())
				continue
			}
			return err
		}
		if !stopAt.IsZero() && ci.Timestamp.After(stopAt) {
			return nil // captured after ctx ended
		}
		if raw != nil {
			raw(link, ci, data)
		}
		if s, ok := seg.Decode(data, link); ok {
			dec.Packet(s, ci)
		}
		maybeTick(ci.Timestamp)
	}
}
