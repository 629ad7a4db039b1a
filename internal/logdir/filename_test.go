package logdir

import "testing"

func TestParseFileName(t *testing.T) {
	tests := []struct {
		path   string
		kind   Kind
		base   int64
		suffix string
	}{
		{"/tmp/x/00000000000000000042.log", KindLog, 42, ""},
		{"00000000000000001000.index", KindIndex, 1000, ""},
		{"dir/00000000000000000000.timeindex.cleaned", KindTimeIndex, 0, ".cleaned"},
		{"00000000000000000007.txnindex", KindTxnIndex, 7, ""},
		{"0042.log", KindOther, -1, ""},
		{"leader-epoch-checkpoint", KindOther, -1, ""},
		{"00000000000000000000.json", KindOther, -1, ""},
		{"99999999999999999999.log", KindOther, -1, ""}, // beyond int64
	}
	for _, tt := range tests {
		kind, base, suffix := ParseFileName(tt.path)
		if kind != tt.kind || base != tt.base || suffix != tt.suffix {
			t.Errorf("ParseFileName(%q) = %v, %d, %q; want %v, %d, %q", tt.path, kind, base, suffix, tt.kind, tt.base, tt.suffix)
		}
	}
}
