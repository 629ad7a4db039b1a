package fsbench

import (
	"strings"
	"testing"
	"time"
)

// TestVariantKnobs: mount options after a variant's name are added to its
// mount command and its name; unknown, malformed, out-of-range, repeated
// and dangerous options are refused with an error naming them.
func TestVariantKnobs(t *testing.T) {
	good := []struct {
		spec, name, mount string
	}{
		{"ext4-writeback:commit=30", "ext4-writeback:commit=30", "mount -t ext4 -o data=writeback,commit=30 D M"},
		{"ext4:commit=1:journal_async_commit", "ext4:commit=1:journal_async_commit", "mount -t ext4 -o commit=1,journal_async_commit D M"},
		{"ext4:data=journal", "ext4:data=journal", "mount -t ext4 -o data=journal D M"},
		{"xfs:logbsize=256k:logbufs=8", "xfs:logbsize=256k:logbufs=8", "mount -t xfs -o logbsize=256k,logbufs=8 D M"},
		{"xfs:allocsize=64m:noatime", "xfs:allocsize=64m:noatime", "mount -t xfs -o allocsize=64m,noatime D M"},
		{"ext4-fastcommit:barrier=0", "ext4-fastcommit:barrier=0", "mount -t ext4 -o barrier=0 D M"},
	}
	for _, c := range good {
		vs, err := ParseVariants(c.spec)
		if err != nil {
			t.Errorf("%q: %v", c.spec, err)
			continue
		}
		if vs[0].Name != c.name {
			t.Errorf("%q: name %q, want %q", c.spec, vs[0].Name, c.name)
		}
		if got := strings.Join(vs[0].MountCommand("D", "M"), " "); got != c.mount {
			t.Errorf("%q: mount %q, want %q", c.spec, got, c.mount)
		}
	}
	bad := []struct{ spec, says string }{
		{"ext4:commit=0", "from 1 to 300"},
		{"ext4:commit=301", "from 1 to 300"},
		{"ext4:commit=+5", "only a-z"},
		{"ext4:commit=99999999999999999999", "from 1 to 300"},
		{"ext4:commit", "from 1 to 300"},
		{"ext4:journal_path=/dev/sda", "only a-z"},
		{"ext4:journal_dev=2049", "not one lab fs takes"},
		{"ext4:usrjquota=x", "not one lab fs takes"},
		{"ext4:logbsize=256k", "not one lab fs takes for ext4"},
		{"xfs:commit=5", "not one lab fs takes for xfs"},
		{"xfs:logbsize=3k", "want one of"},
		{"xfs:allocsize=1g0", "want a size"},
		{"ext4:noatime=1", "takes no value"},
		{"ext4:", "empty mount option"},
		{"ext4::commit=5", "empty mount option"},
		{"ext4-writeback:data=ordered", "given twice"},
		{"ext4:commit=5:commit=6", "given twice"},
		{"ext4:ro,remount", "\"ro\" is not one lab fs takes"},
		{"ext4:commit=5\x00", "only a-z"},
		{"ext4:COMMIT=5", "only a-z"},
		{"ext4:commit=5,ext4:commit=5", "given twice"},
		{"ext4" + strings.Repeat(":noatime", 17), "at most 16"},
	}
	for _, c := range bad {
		_, err := ParseVariants(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: error %v, want one saying %q", c.spec, err, c.says)
		}
	}
}

// TestCommitInterval: --commit-interval gives commit= to the ext4
// variants that lack one, and refuses what is not whole seconds in range
// or has nothing to apply to.
func TestCommitInterval(t *testing.T) {
	vs, err := ParseVariants("ext4,ext4-writeback:commit=60,xfs")
	if err != nil {
		t.Fatal(err)
	}
	d, err := ParseCommitInterval("30s")
	if err != nil || d != 30*time.Second {
		t.Fatalf("30s: %v %v", d, err)
	}
	got, err := WithCommitInterval(vs, d)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"commit=30", "data=writeback,commit=60", ""}
	for i, v := range got {
		if v.MountOptions != want[i] {
			t.Errorf("%s: options %q, want %q", v.Name, v.MountOptions, want[i])
		}
	}
	if vs[0].MountOptions != "" {
		t.Error("WithCommitInterval changed its input")
	}
	for _, bad := range []string{"500ms", "1.5s", "301s", "-5s", "5", "x"} {
		if _, err := ParseCommitInterval(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if d, err := ParseCommitInterval(""); d != 0 || err != nil {
		t.Errorf("empty: %v %v", d, err)
	}
	xfsOnly, _ := ParseVariants("xfs")
	if _, err := WithCommitInterval(xfsOnly, d); err == nil {
		t.Error("xfs only: no error")
	}
}

// FuzzParseVariants: no --variants spec panics, and what is taken mounts
// only known options of characters mount cannot misread.
func FuzzParseVariants(f *testing.F) {
	for _, s := range []string{DefaultVariants, "ext4:commit=30", "xfs:logbsize=256k:noatime", "ext4:journal_path=/dev/sda", "ext4,,xfs", "ext4:allocsize=1g"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		vs, err := ParseVariants(spec)
		if err != nil {
			return
		}
		for _, v := range vs {
			for _, o := range strings.Split(v.MountOptions, ",") {
				if o == "" {
					continue
				}
				if strings.ContainsAny(o, "/ \x00\t\n") {
					t.Fatalf("%q: mount option %q", spec, o)
				}
			}
		}
	})
}
