// Command guest is the /init that TestBoot boots: it sets the VM up,
// reports what it sees as one JSON line ("GUEST-REPORT {...}") and exits
// with the code it was asked for.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/testkit/vm/guest"
)

type report struct {
	Args    []string          `json:"args"`
	Release string            `json:"release"`
	FSTypes map[string]string `json:"fstypes"` // mount point -> type, from /proc/mounts
	Files   map[string]string `json:"files"`   // mount point -> "ok" or the error
	BTF     int64             `json:"btf"`     // size of /sys/kernel/btf/vmlinux, -1 if missing
}

func main() {
	code := flag.Int("code", 0, "exit code to report")
	mounts := flag.String("mounts", "", "comma-separated mount points to write a file on")
	flag.Parse()
	if err := guest.Setup(); err != nil {
		fmt.Println("guest:", err)
		guest.Exit(125)
	}
	r := report{Args: os.Args[1:], FSTypes: map[string]string{}, Files: map[string]string{}, BTF: -1}
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		r.Release = unix.ByteSliceToString(u.Release[:])
	}
	if f, err := os.Open("/proc/mounts"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if fields := strings.Fields(sc.Text()); len(fields) >= 3 {
				r.FSTypes[fields[1]] = fields[2]
			}
		}
		f.Close()
	}
	for _, m := range strings.Split(*mounts, ",") {
		if m != "" {
			r.Files[m] = roundTrip(m)
		}
	}
	if st, err := os.Stat("/sys/kernel/btf/vmlinux"); err == nil {
		r.BTF = st.Size()
	}
	b, _ := json.Marshal(r)
	fmt.Printf("GUEST-REPORT %s\n", b)
	guest.Exit(*code)
}

// roundTrip writes a file in dir, syncs it and reads it back.
func roundTrip(dir string) string {
	want := []byte("kscope " + dir + "\n")
	p := filepath.Join(dir, "probe.txt")
	f, err := os.Create(p)
	if err != nil {
		return err.Error()
	}
	if _, err := f.Write(want); err != nil {
		return err.Error()
	}
	if err := f.Sync(); err != nil {
		return err.Error()
	}
	if err := f.Close(); err != nil {
		return err.Error()
	}
	got, err := os.ReadFile(p)
	if err != nil {
		return err.Error()
	}
	if !bytes.Equal(got, want) {
		return fmt.Sprintf("read back %q, wrote %q", got, want)
	}
	return "ok"
}
