package slowdisk

import (
	"slices"
	"strings"
	"time"
)

// The named profiles. Their figures are stated by their sources as
// typical or guaranteed latencies, not measured here; each Source says
// where they come from and what was assumed.
var named = []func() Profile{
	fastProfile, cloudBaselineProfile, burstSpentProfile, busyHDDProfile,
}

func ms(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

// pts builds points from (percentile, ms) pairs.
func pts(pairs ...float64) []Point {
	out := make([]Point, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, Point{Q: pairs[i] / 100, Latency: ms(pairs[i+1])})
	}
	return out
}

// fastProfile is the control: a local NVMe drive, whose reads and writes
// take tens of microseconds and whose flushes (with a volatile write
// cache) well under a millisecond.
func fastProfile() Profile {
	return Profile{
		Name:   "fast",
		Source: "control: a local NVMe SSD (vendor data sheets: ~20-100 µs 4 KiB reads and writes at low queue depth; cache flush < 1 ms)",
		Read:   Dist{Min: ms(0.02), Points: pts(50, 0.08, 99, 0.2, 99.9, 0.5, 100, 1)},
		Write:  Dist{Min: ms(0.02), Points: pts(50, 0.05, 99, 0.2, 99.9, 0.5, 100, 1)},
		Flush:  Dist{Min: ms(0.05), Points: pts(50, 0.2, 99, 0.8, 99.9, 1.5, 100, 2)},
	}
}

// cloudBaselineProfile is a general-purpose cloud SSD volume (AWS EBS
// gp3) within its provisioned IOPS: "single-digit millisecond latency",
// network-attached, so every request and flush crosses the network.
func cloudBaselineProfile() Profile {
	return Profile{
		Name:   "cloud-baseline",
		Source: "AWS EBS gp3 within its 3000 baseline IOPS (AWS EBS volume types: SSD volumes deliver single-digit millisecond latency; p99 and tail assumed from that)",
		Read:   Dist{Min: ms(0.3), Points: pts(50, 0.8, 90, 1.5, 99, 4, 99.9, 9, 100, 25)},
		Write:  Dist{Min: ms(0.4), Points: pts(50, 1, 90, 2, 99, 5, 99.9, 12, 100, 30)},
		Flush:  Dist{Min: ms(0.4), Points: pts(50, 1.2, 90, 2.5, 99, 6, 99.9, 15, 100, 40)},
	}
}

// burstSpentProfile is a burstable cloud volume (AWS EBS gp2, or st1)
// whose burst credits are spent: throttled to its baseline IOPS, requests
// queue in the hypervisor for tens to hundreds of milliseconds. Its tail
// is the seed's: jbd2 commits of 100 ms to 1.3 s.
func burstSpentProfile() Profile {
	return Profile{
		Name: "burst-spent",
		Source: "AWS EBS gp2 with its burst credits spent (baseline 3 IOPS/GiB, e.g. 100 IOPS for 33 GiB; queued requests wait tens to hundreds of ms); " +
			"tail from the Allegro investigation's broker (journal commits 100 ms to 1.3 s)",
		Read:        Dist{Min: ms(1), Points: pts(50, 8, 90, 40, 99, 150, 99.9, 400, 100, 900)},
		Write:       Dist{Min: ms(1), Points: pts(50, 10, 90, 50, 99, 200, 99.9, 600, 100, 1300)},
		Flush:       Dist{Min: ms(2), Points: pts(50, 20, 90, 100, 99, 400, 99.9, 1000, 100, 1300)},
		MaxInflight: 16,
	}
}

// busyHDDProfile is a 7200 rpm disk kept busy by other work: a random
// request costs a seek (~8.5 ms) plus half a turn (4.17 ms), and waits
// behind others in the drive's queue; a cache flush writes out the
// drive's cache.
func busyHDDProfile() Profile {
	return Profile{
		Name:   "hdd-busy",
		Source: "a 7200 rpm SATA disk at ~80% utilisation (data sheets: 8.5 ms average seek + 4.17 ms average rotational latency; queueing tail assumed)",
		Read:   Dist{Min: ms(0.5), Points: pts(50, 12, 90, 25, 99, 60, 99.9, 150, 100, 300)},
		Write:  Dist{Min: ms(0.5), Points: pts(50, 10, 90, 22, 99, 55, 99.9, 140, 100, 300)},
		Flush:  Dist{Min: ms(2), Points: pts(50, 15, 90, 35, 99, 100, 99.9, 250, 100, 500)},
		// NCQ's depth: a drive reorders at most 32 requests.
		MaxInflight: 32,
	}
}

// Named returns the named profile, and whether there is one.
func Named(name string) (Profile, bool) {
	for _, f := range named {
		if p := f(); p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
}

// Names lists the named profiles.
func Names() []string {
	out := make([]string, 0, len(named))
	for _, f := range named {
		out = append(out, f().Name)
	}
	return slices.Clip(out)
}

// namesList is Names for messages.
func namesList() string { return strings.Join(Names(), ", ") }
