package iotrace

import (
	"context"
	"sync"
)

// delivery serialises the handlers of all ring readers and stops
// delivering after the first error, while the other readers drain. It is
// a type rather than a func value so that the closure each event is
// handed over in stays on the reader's stack: through a func value it
// escaped, one allocation per event.
type delivery struct {
	mu     sync.Mutex
	failed error
	cancel context.CancelFunc
}

// do runs f unless a handler failed before; f's error stops delivery.
func (d *delivery) do(f func() error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failed != nil {
		return nil
	}
	if err := f(); err != nil {
		d.failed = err
		d.cancel()
		return err
	}
	return nil
}
