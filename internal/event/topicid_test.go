package event

import "testing"

func TestParseTopicID(t *testing.T) {
	id := [16]byte{0xfb, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xff}
	s := TopicIDString(id)
	for _, tt := range []struct {
		in   string
		want bool
	}{
		{s, true},
		{"AAAAAAAAAAAAAAAAAAAAAA", true},
		{s[:21], false},                   // too short
		{s + "A", false},                  // too long
		{s[:21] + "+", false},             // not the URL alphabet
		{"AAAAAAAAAAAAAAAAAAAAA=", false}, // padded
		{"", false},
	} {
		got, ok := ParseTopicID(tt.in)
		if ok != tt.want {
			t.Errorf("ParseTopicID(%q): ok %v, want %v", tt.in, ok, tt.want)
		}
		if ok && TopicIDString(got) != tt.in {
			t.Errorf("ParseTopicID(%q) = %x, which prints as %q", tt.in, got, TopicIDString(got))
		}
	}
	if got, _ := ParseTopicID(s); got != id {
		t.Errorf("round trip: %x, want %x", got, id)
	}
	if n := testing.AllocsPerRun(100, func() { ParseTopicID(s) }); n != 0 {
		t.Errorf("%v allocations per parse, want 0", n)
	}
}
