package iotrace

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

func TestKallsyms(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kallsyms")
	os.WriteFile(path, []byte(`ffffffff81000000 T _stext
ffffffff81000100 t helper
0000000000000000 T hidden
ffffffff81000200 D some_data
ffffffff81000300 T ext4_page_mkwrite	[ext4]
ffffffff81000050 W early_but_listed_last
`), 0o644)
	k, err := loadKallsyms(path)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ip   uint64
		want string
	}{
		{0xffffffff81000000, "_stext"}, {0xffffffff8100004f, "_stext"}, {0xffffffff810000ff, "early_but_listed_last"}, {0xffffffff81000150, "helper"},
		{0xffffffff81000250, "helper"}, {0xffffffff81000301, "ext4_page_mkwrite"}, {0x10, "0x10"},
	}
	for _, tt := range tests {
		if got := k.name(tt.ip); got != tt.want {
			t.Errorf("%#x: %q, want %q", tt.ip, got, tt.want)
		}
	}
	var none *kallsyms
	if got := none.name(0xabc); got != "0xabc" {
		t.Errorf("without symbols: %q", got)
	}
	os.WriteFile(path, []byte("0000000000000000 T a\n"), 0o644)
	if _, err := loadKallsyms(path); err == nil {
		t.Error("all-zero addresses (kptr_restrict): want an error")
	}
}

func TestDecodeWaitEvent(t *testing.T) {
	b := make([]byte, waitEventSize)
	binary.LittleEndian.PutUint64(b[0:], 100)
	binary.LittleEndian.PutUint64(b[8:], 250)
	binary.LittleEndian.PutUint32(b[16:], 4242)
	binary.LittleEndian.PutUint32(b[20:], uint32(0xffffffff)) // -1
	ev, ok := decodeWaitEvent(b)
	if !ok || ev.StartNs != 100 || ev.EndNs != 250 || ev.Tid != 4242 || ev.StackId != -1 {
		t.Errorf("%+v %v", ev, ok)
	}
	if _, ok := decodeWaitEvent(b[:10]); ok {
		t.Error("short sample accepted")
	}
}
