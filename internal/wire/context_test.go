package wire

import (
	"testing"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/records"
)

// TestPacketContext: a capture info survives the compact form reassembly
// carries, in the locations the capture readers use.
func TestPacketContext(t *testing.T) {
	ts := time.Date(2026, 11, 22, 4, 5, 6, 123456789, time.UTC)
	tests := []struct {
		name string
		ci   gopacket.CaptureInfo
	}{
		{"utc", gopacket.CaptureInfo{Timestamp: ts, CaptureLength: 1514, Length: 1514, InterfaceIndex: 2}},
		{"local", gopacket.CaptureInfo{Timestamp: ts.Local(), CaptureLength: 60, Length: 9000}},
		{"epoch", gopacket.CaptureInfo{Timestamp: time.Unix(0, 0).UTC()}},
	}
	d := NewDecoder(DefaultConfig(), &records.Decoder{}, nil, func(*event.Request) {})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := d.context(tt.ci).GetCaptureInfo()
			if !got.Timestamp.Equal(tt.ci.Timestamp) || got.Timestamp.Location() != tt.ci.Timestamp.Location() ||
				got.CaptureLength != tt.ci.CaptureLength || got.Length != tt.ci.Length || got.InterfaceIndex != tt.ci.InterfaceIndex {
				t.Errorf("got %+v, want %+v", got, tt.ci)
			}
		})
	}
}
