package use

import (
	"encoding/binary"
	"testing"
)

// FuzzParsers feeds the same bytes to every parser of kernel files and
// to the rtnetlink qdisc parser: none may panic, and what they accept
// must be sane (no negative counts where the kernel has none).
func FuzzParsers(f *testing.F) {
	for _, s := range []string{
		base()["proc/stat"], second()["proc/diskstats"], base()["proc/pressure/io"], meminfo,
		base()["proc/42/net/snmp"], base()["proc/42/limits"], "1000\t0\t100000\n", "3.50 2.00 1.00 5/300 1234\n",
		"version 15\ncpu0 0 0 0 0 0 0 1 2 3\n", "pswpin 1\noom_kill 18446744073709551615\n",
		"cpu  1 2 3 4\nprocs_running 1\n", "some avg10=0.00 total=0\n", "Tcp: A\nTcp: 1\n",
	} {
		f.Add([]byte(s))
	}
	f.Add(qdiscMsg(2, tcHRoot, "tbf", 7))
	f.Fuzz(func(t *testing.T, b []byte) {
		if st, err := parseProcStat(b); err == nil && (st.procsRunning < 0 || st.procsBlocked < 0) {
			t.Fatal("negative procs")
		}
		_, _ = parseLoadAvg(b)
		if p, err := parsePSI(b); err == nil && (p.some.avg10 < 0 || p.some.avg10 > 100) {
			t.Fatal("avg10 out of range")
		}
		_, _ = parseKeyValues(b, ":")
		_, _ = parseKeyValues(b, " ")
		_, _ = parseDiskstats(b)
		_, _ = parseSNMP(b)
		if o, m, err := parseFileNr(b); err == nil && m < 0 {
			t.Fatalf("file-nr %d %d", o, m)
		}
		_, _ = parseOpenFilesLimit(b)
		_, _ = parseSchedstat(b)
		_, _ = parseUint(b)
		_, _, _, _ = parseQdiscMsg(b)
	})
}

// qdiscMsg builds an RTM_NEWQDISC body: tcmsg, TCA_KIND and TCA_STATS2
// with a TCA_STATS_QUEUE.
func qdiscMsg(ifindex int, parent uint32, kind string, drops uint32) []byte {
	b := make([]byte, tcmsgLen)
	binary.NativeEndian.PutUint32(b[4:], uint32(ifindex))
	binary.NativeEndian.PutUint32(b[12:], parent)
	attr := func(typ uint16, val []byte) []byte {
		a := make([]byte, 4, 4+len(val)+3)
		binary.NativeEndian.PutUint16(a, uint16(4+len(val)))
		binary.NativeEndian.PutUint16(a[2:], typ)
		a = append(a, val...)
		for len(a)%4 != 0 {
			a = append(a, 0)
		}
		return a
	}
	b = append(b, attr(1, append([]byte(kind), 0))...)
	q := make([]byte, 20)
	binary.NativeEndian.PutUint32(q[4:], 1500) // backlog
	binary.NativeEndian.PutUint32(q[8:], drops)
	binary.NativeEndian.PutUint32(q[16:], 9) // overlimits
	b = append(b, attr(7|0x8000, attr(tcaStatsQueue, q))...)
	return b
}

func TestParseQdiscMsg(t *testing.T) {
	ix, st, root, err := parseQdiscMsg(qdiscMsg(5, tcHRoot, "netem", 42))
	if err != nil || ix != 5 || !root || st != (QdiscStats{Kind: "netem", Drops: 42, Overlimits: 9, Backlog: 1500}) {
		t.Fatalf("%d %+v %v %v", ix, st, root, err)
	}
	if _, _, root, _ := parseQdiscMsg(qdiscMsg(5, 0x10001, "pfifo", 1)); root {
		t.Fatal("a child qdisc taken for the root")
	}
	bad := qdiscMsg(5, tcHRoot, "tbf", 1)
	binary.NativeEndian.PutUint16(bad[tcmsgLen:], 200) // attribute longer than the message
	if _, _, _, err := parseQdiscMsg(bad); err == nil {
		t.Fatal("bad attribute length accepted")
	}
	if _, _, _, err := parseQdiscMsg([]byte{1, 2}); err == nil {
		t.Fatal("short tcmsg accepted")
	}
}
