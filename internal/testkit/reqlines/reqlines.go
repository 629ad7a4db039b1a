// Package reqlines is the fuzz targets' form of a request stream: the
// JSON Lines a recording's requests.jsonl holds, built from requests for
// a seed corpus and read back, line by line, from what the fuzzer made of
// it (a line that is no request is left out, as a damaged line would be).
package reqlines

import (
	"bufio"
	"bytes"
	"encoding/json"

	"github.com/kscope-dev/kscope/internal/event"
)

// Of is rs as JSON Lines.
func Of(rs ...*event.Request) []byte {
	var b bytes.Buffer
	for _, r := range rs {
		line, _ := json.Marshal(r)
		b.Write(append(line, '\n'))
	}
	return b.Bytes()
}

// Each passes every line of data that decodes as a request to fn.
func Each(data []byte, fn func(*event.Request)) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var r event.Request
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		fn(&r)
	}
}
