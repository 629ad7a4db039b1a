package recorder

import (
	"context"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/recording"
	"github.com/kscope-dev/kscope/internal/use"
)

// recordUse samples USE every second into the recording's use.jsonl
// until ctx ends, for `kscope record`. A sampler that cannot start or
// fails is reported, and the recording goes on without it.
func recordUse(ctx context.Context, o *Options, logDirs []recording.LogDir, rec *recording.Writer) {
	var devs []string
	for _, ld := range logDirs {
		if ld.Device != "" && !strings.HasPrefix(ld.Device, "0:") {
			devs = append(devs, ld.Device)
		}
	}
	s, err := use.NewSampler(use.Config{PID: o.PID, Devices: devs})
	if err != nil {
		o.warnf("no USE figures: %s", output.Escape(err.Error()))
		return
	}
	for _, n := range s.Notes() {
		o.notef("use: %s", output.Escape(n))
	}
	if err := use.Run(ctx, s, time.Second, rec.Use); err != nil {
		o.warnf("USE sampling stopped: %s", output.Escape(err.Error()))
	}
}
