package doctor

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/findings"
	"github.com/kscope-dev/kscope/internal/jfr"
	"github.com/kscope-dev/kscope/internal/profile"
	"github.com/kscope-dev/kscope/internal/safefile"
)

// cpuIsTheProblem is whether the findings blame the CPU: an alarm of slow
// requests that waited for a CPU, or of the CPU saturated.
func cpuIsTheProblem(fs []findings.Finding) bool {
	for _, f := range fs {
		if f.Severity < findings.Alarm {
			continue
		}
		if f.Check == "slow-requests" && strings.HasPrefix(f.Title, "cpu-") || f.Check == "use" && strings.HasPrefix(f.Title, "cpu ") {
			return true
		}
	}
	return false
}

// profile records the broker's JVM for o.Profile (CPU samples and lock
// waits, JFR), draws its flame graph into dir and sums it up as a
// finding: where the JVM's own CPU went, and how much of the machine's
// it was.
func (o *Options) profile(ctx context.Context, dir string) (findings.Finding, error) {
	path := filepath.Join(dir, ProfileFile)
	o.notef("the CPU is the problem: profiling the broker's JVM for %v", o.Profile)
	jctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	rec, err := jfr.StartProfile(jctx, o.PID, "kscope-doctor", path, jfr.ProfileOptions{})
	cancel()
	if err != nil {
		return findings.Finding{}, err
	}
	select {
	case <-time.After(o.Profile):
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	err = rec.Stop(sctx)
	cancel()
	if err != nil {
		return findings.Finding{}, err
	}
	pr, err := jfr.ReadProfile(path)
	if err != nil && pr.Stats.Chunks == 0 {
		return findings.Finding{}, err
	}
	rep := profile.Build(pr, profile.Options{Top: 5})
	if _, err := safefile.Write(safefile.Target{Path: filepath.Join(dir, FlameFile)}, func(w io.Writer) error { return profile.FlameHTML(w, rep) }); err != nil {
		return findings.Finding{}, err
	}
	return profileFinding(rep, dir), nil
}

// profileFinding sums a profile up: the JVM's share of the machine's CPU
// against everything's, and the categories and methods its CPU went to.
func profileFinding(rep *profile.Report, dir string) findings.Finding {
	f := findings.Finding{Severity: findings.Note, Check: "profile",
		Title: fmt.Sprintf("the broker's JVM used %.0f%% of the machine's CPU while everything used %.0f%% (%.0f s profiled)",
			100*rep.JVMCPU, 100*rep.MachineCPU, rep.DurationSec),
		Next: fmt.Sprintf("kscope profile --jfr %s (flame graph: %s)", filepath.Join(dir, ProfileFile), filepath.Join(dir, FlameFile)),
	}
	if rep.MachineCPU >= 0.9 && rep.JVMCPU < 0.5*rep.MachineCPU {
		f.Title += ": most of the CPU went to other processes"
	}
	var parts []string
	for _, c := range rep.Categories[:min(3, len(rep.Categories))] {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", c.Name, 100*c.Share))
	}
	if len(rep.TopSelf) > 0 {
		parts = append(parts, fmt.Sprintf("hottest method %s (%.0f%%)", rep.TopSelf[0].Method, 100*rep.TopSelf[0].Share))
	}
	f.Evidence = "the JVM's CPU: " + strings.Join(parts, ", ")
	return f
}
