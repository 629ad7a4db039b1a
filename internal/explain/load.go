package explain

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kscope-dev/kscope/internal/clockalign"
	"github.com/kscope-dev/kscope/internal/recording"
)

// Recording is one broker's recording read for explain: the first pass
// over its requests and the index of its evidence.
type Recording struct {
	Dir   string
	Meta  *recording.Meta
	Scan  *Scan
	Index *Index
	// NodeID is the broker's node id: from meta.json, else inferred from
	// its own replica fetches (Scan.NodeID); -1 when neither says.
	NodeID int32
	// JFR is the recording's flight recording, to be read for lock waits
	// by the caller when the recording has no lockwaits.jsonl.
	JFR string
	// Tally counts the lines left out of the recording's files: a last
	// line cut short by a crash, events whose values cannot be true.
	Tally *recording.Tally
}

// LoadRecording reads the recording in dir: its requests are scanned
// (only: also find that request) while its writes, journal and
// scheduling evidence and lock waits load. What is left out of its files
// (Recording.Tally) is checked against the recording's window.
func LoadRecording(dir string, only *RequestID) (*Recording, error) {
	meta, err := recording.ReadMeta(dir)
	if err != nil {
		return nil, fmt.Errorf("%s is not a kscope recording: %w", dir, err)
	}
	rec := &Recording{Dir: dir, Meta: meta, Index: NewIndex(), NodeID: -1, Tally: &recording.Tally{}}
	rd := recording.Reader{Window: meta.Window(), Tally: rec.Tally}
	var scanErr error
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		rec.Scan, scanErr = ScanRequestsWith(rd, filepath.Join(dir, recording.RequestsFile), only)
	}()
	io := []string{filepath.Join(dir, recording.WritesFile), filepath.Join(dir, recording.JournalFile)}
	if p := filepath.Join(dir, recording.SchedFile); exists(p) {
		io = append(io, p)
	}
	err = LoadIOWith(rd, rec.Index, io...)
	if err == nil {
		if p := filepath.Join(dir, recording.LockWaitsFile); exists(p) {
			err = LoadLockWaitsWith(rd, rec.Index, p)
		} else if p := filepath.Join(dir, recording.JFRFile); exists(p) {
			rec.JFR = p
		}
	}
	<-scanned
	if err = errors.Join(err, scanErr); err != nil {
		return nil, err
	}
	if meta.Broker.NodeID != nil {
		rec.NodeID = *meta.Broker.NodeID
	} else if id, ok := rec.Scan.NodeID(); ok {
		rec.NodeID = id
	}
	return rec, nil
}

// LogDirs are the broker's log dirs as meta.json records them.
func (r *Recording) LogDirs() []string {
	var dirs []string
	for _, d := range r.Meta.Broker.LogDirs {
		dirs = append(dirs, d.Path)
	}
	return dirs
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Cluster is several brokers' recordings read together, their clocks
// aligned to the first one's.
type Cluster struct {
	Recordings []*Recording
	// Clocks[i] is recording i's clock against recording 0's; Aligned[i]
	// false when no replica fetch joins it to the others.
	Clocks  []clockalign.Estimate
	Aligned []bool
}

// NewCluster aligns the recordings' clocks. Every recording must name a
// distinct broker.
func NewCluster(recs []*Recording) (*Cluster, error) {
	seen := make(map[int32]string)
	scans, ids := make([]*Scan, len(recs)), make([]int32, len(recs))
	for i, r := range recs {
		if r.NodeID < 0 {
			return nil, fmt.Errorf("%s: the broker's node id is neither in meta.json nor in its replica fetches", r.Dir)
		}
		if d, ok := seen[r.NodeID]; ok {
			return nil, fmt.Errorf("%s and %s are both recordings of broker %d", d, r.Dir, r.NodeID)
		}
		seen[r.NodeID] = r.Dir
		scans[i], ids[i] = r.Scan, r.NodeID
	}
	c := &Cluster{Recordings: recs}
	c.Clocks, c.Aligned = ClusterClocks(scans, ids)
	return c, nil
}

// Peers are the other recordings as recording i's peers, each with its
// clock against recording i's; those whose clocks could not be aligned
// are left out.
func (c *Cluster) Peers(i int) []*Peer {
	var peers []*Peer
	if !c.Aligned[i] {
		return nil
	}
	for j, r := range c.Recordings {
		if j == i || !c.Aligned[j] {
			continue
		}
		peers = append(peers, &Peer{NodeID: r.NodeID, Index: r.Index, Scan: r.Scan, Clock: c.Clocks[i].Reverse().Combine(c.Clocks[j])})
	}
	return peers
}

// Shift is recording i's clock against the first's, for the summary;
// nil for the first and for one not aligned.
func (c *Cluster) Shift(i int) *ClockShift {
	if i == 0 || !c.Aligned[i] {
		return nil
	}
	est := c.Clocks[i]
	return &ClockShift{Against: c.Recordings[0].NodeID, OffsetMs: ms(est.OffsetNs), ErrorMs: ms(est.ErrorNs), Exchanges: est.Exchanges, Agreeing: est.Agreeing}
}
