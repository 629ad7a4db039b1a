package iotrace

import (
	"fmt"

	"github.com/cilium/ebpf"
)

// bpfRBNoWakeup is BPF_RB_NO_WAKEUP (include/uapi/linux/bpf.h).
const bpfRBNoWakeup = 1

// ringFlags is what the BPF programs submit their events with (their
// ringbuf_flags): no wake-up when the readers poll (Config.RingPoll).
func (c Config) ringFlags() uint64 {
	if c.RingPoll > 0 {
		return bpfRBNoWakeup
	}
	return 0
}

// setRingFlags sets a program's ringbuf_flags before it is loaded.
func setRingFlags(spec *ebpf.CollectionSpec, flags uint64) error {
	v, ok := spec.Variables["ringbuf_flags"]
	if !ok {
		return fmt.Errorf("no variable ringbuf_flags")
	}
	if err := v.Set(flags); err != nil {
		return fmt.Errorf("set ringbuf_flags: %w", err)
	}
	return nil
}
