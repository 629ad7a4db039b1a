package event

import (
	"encoding/json"
	"testing"
)

func TestSegmentJSON(t *testing.T) {
	v := "a\x1b"
	hex := BytesText([]byte{0xff, 0x00})
	r := SegmentRecord{Offset: 1, Timestamp: 2, KeySize: -1, ValueSize: 3,
		Headers: Headers{{Key: "k", Value: &v}, {Key: "k", Value: nil}, {Key: "h", Value: &hex}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"offset":1,"timestamp":2,"key_size":-1,"value_size":3,"headers":{"k":"a\u001b","k":null,"h":"ff00"}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	b, _ = json.Marshal(SegmentRecord{})
	if want := `{"offset":0,"timestamp":0,"key_size":0,"value_size":0,"headers":{}}`; string(b) != want {
		t.Fatalf("empty: %s", b)
	}
	for in, want := range map[string]string{"text": "text", "\xc3\xa9t\xc3\xa9": "été", "\xc3": "c3", "": ""} {
		if got := BytesText([]byte(in)); got != want {
			t.Errorf("BytesText(%q) = %q, want %q", in, got, want)
		}
	}
}
