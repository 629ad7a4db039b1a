// Package slowdisk brings a slow, jittery block device into the lab: a
// file system of kscope's own (FUSE, served in-process with go-fuse)
// exposes one file backed by a real image, and holds every read, write
// and flush (fsync) of it for a latency drawn from a Profile; a loop
// device attached to that file is then a block device whose requests take
// as long as the profile says, and a node's ext4 or XFS sits on it.
//
// The issue it serves (37): the Allegro investigation ends with a file
// system experiment (ext4 data=ordered vs writeback vs XFS) on a broker
// whose journal commits took 100 ms to 1.3 s; on the lab's fast loop
// devices no variant differs. Loop devices, FUSE and cgroup v1 blkio are
// all this kernel offers (no device-mapper delay, nbd, ublk or
// null_blk); docs/slowdisk.md says why FUSE+loop was chosen and what it
// measured.
//
// Profiles are named (Named: a cloud volume at its baseline, one with its
// burst credits spent, a busy spinning disk, a fast control) or read
// from a file (ReadProfile): JSON of this package's design, or the JSON
// Lines device summary of `kscope iotrace --summary --format json`, so a
// production broker's block latencies can be replayed in the lab.
package slowdisk
