package protodef

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// message is the part of a message definition the table needs; the field
// list ("fields") is not decoded.
type message struct {
	APIKey                *int     `json:"apiKey"`
	Type                  string   `json:"type"`
	Name                  string   `json:"name"`
	Listeners             []string `json:"listeners"`
	ValidVersions         *string  `json:"validVersions"`
	LatestVersionUnstable bool     `json:"latestVersionUnstable"`
}

// ParseMessage reads one message definition. isRequest is false (and api
// empty) for the other kinds of definition the directory holds (responses,
// headers, data); a request definition without an apiKey or validVersions,
// or with values out of range, is an error that gives the line of the
// offending value.
func ParseMessage(data []byte) (api API, isRequest bool, err error) {
	clean, err := StripComments(data)
	if err != nil {
		return API{}, false, err
	}
	var m message
	if err := json.Unmarshal(clean, &m); err != nil {
		return API{}, false, describeJSONError(clean, err)
	}
	if m.Type != "request" {
		return API{}, false, nil
	}
	api, err = m.api()
	var bad *fieldError
	if errors.As(err, &bad) {
		if end := valueEnd(clean, bad.field); end > 0 {
			err = fmt.Errorf("%s: %w", position(clean, end-1), err)
		}
	}
	return api, err == nil, err
}

// fieldError is a value of a definition that is not what the table can
// take, with the field it was read from so its position can be given.
type fieldError struct {
	field string
	err   error
}

func (e *fieldError) Error() string { return e.field + " " + e.err.Error() }

func (m message) api() (API, error) {
	if m.APIKey == nil {
		return API{}, errors.New("a request definition without apiKey")
	}
	if *m.APIKey < 0 || *m.APIKey > 1<<15-1 {
		return API{}, &fieldError{"apiKey", fmt.Errorf("%d is out of range 0-32767", *m.APIKey)}
	}
	api := API{Key: int16(*m.APIKey), Name: m.Name, LatestUnstable: m.LatestVersionUnstable}
	if m.ValidVersions == nil {
		return API{}, fmt.Errorf("apiKey %d: a request definition without validVersions", api.Key)
	}
	var err error
	if api.Min, api.Max, api.Removed, err = ParseVersions(*m.ValidVersions); err != nil {
		return API{}, &fieldError{"validVersions", err}
	}
	for _, l := range m.Listeners {
		api.Broker = api.Broker || l == "broker"
	}
	return api, nil
}

// valueEnd returns the offset just past the value of the top-level key
// field in a JSON object, the last such key if there are several (as
// encoding/json keeps the last), or -1.
func valueEnd(clean []byte, field string) int {
	dec := json.NewDecoder(bytes.NewReader(clean))
	end, depth := -1, 0
	wantKey, matched := false, false
	for {
		tok, err := dec.Token()
		if err != nil {
			return end
		}
		if d, isDelim := tok.(json.Delim); isDelim {
			if d == '{' || d == '[' {
				depth++
				wantKey = depth == 1
				continue
			}
			if depth--; depth != 1 {
				continue
			}
		} else if depth != 1 {
			continue
		} else if wantKey {
			wantKey, matched = false, tok == field
			continue
		}
		// A value of the top-level object just ended.
		if matched {
			end = int(dec.InputOffset())
		}
		wantKey, matched = true, false
	}
}

// ParseVersions reads a validVersions value: "none", "N" or "N-M", with
// 0 <= N <= M <= 32767. Kafka's own parser also takes "N+" (N and every
// later version), which means nothing for validVersions and is refused here,
// so that a definition the table cannot represent stops the generator
// instead of becoming a range up to 32767.
func ParseVersions(s string) (lo, hi int16, removed bool, err error) {
	if s == "none" {
		return 0, 0, true, nil
	}
	first, last, isRange := strings.Cut(s, "-")
	if lo, err = parseVersion(first); err != nil {
		return 0, 0, false, fmt.Errorf("%q: %w", s, err)
	}
	hi = lo
	if isRange {
		if hi, err = parseVersion(last); err != nil {
			return 0, 0, false, fmt.Errorf("%q: %w", s, err)
		}
	}
	if hi < lo {
		return 0, 0, false, fmt.Errorf("%q: the range is empty", s)
	}
	return lo, hi, false, nil
}

// parseVersion takes digits only: strconv.ParseInt would also take a sign.
func parseVersion(s string) (int16, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a version number", s)
	}
	v, err := strconv.ParseInt(s, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("%q is not a version number from 0 to 32767", s)
	}
	return int16(v), nil
}

// StripComments blanks out the // and /* */ comments Kafka's message
// definitions carry (Kafka reads them with Jackson's ALLOW_COMMENTS), so
// that encoding/json can read them. Comment bytes become spaces and
// newlines stay, so a JSON error's offset is still the true position in the
// file. An unterminated string or block comment is an error.
func StripComments(data []byte) ([]byte, error) {
	out := bytes.Clone(data)
	for i := 0; i < len(out); {
		switch {
		case out[i] == '"':
			end, err := stringEnd(out, i)
			if err != nil {
				return nil, err
			}
			i = end
		case bytes.HasPrefix(out[i:], []byte("//")):
			i = blank(out, i, lineCommentEnd(out, i))
		case bytes.HasPrefix(out[i:], []byte("/*")):
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				return nil, fmt.Errorf("%s: unterminated /* comment", position(data, i))
			}
			i = blank(out, i, i+2+end+2)
		default:
			i++
		}
	}
	return out, nil
}

// stringEnd returns the offset just past the string literal starting at
// start (a '"').
func stringEnd(b []byte, start int) (int, error) {
	for i := start + 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, nil
		case '\n':
			return 0, fmt.Errorf("%s: newline in a string", position(b, i))
		}
	}
	return 0, fmt.Errorf("%s: unterminated string", position(b, start))
}

func lineCommentEnd(b []byte, start int) int {
	if nl := bytes.IndexByte(b[start:], '\n'); nl >= 0 {
		return start + nl
	}
	return len(b)
}

// blank overwrites b[from:to] with spaces, keeping newlines, and returns to.
func blank(b []byte, from, to int) int {
	for j := from; j < to; j++ {
		if b[j] != '\n' {
			b[j] = ' '
		}
	}
	return to
}

// describeJSONError puts the position of the offending byte before
// encoding/json's error. Its offsets count the bytes read, the offending
// one (the last byte of a value of the wrong type) included, so that byte
// is at offset-1.
func describeJSONError(data []byte, err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("%s: %w", position(data, int(syntax.Offset)-1), err)
	case errors.As(err, &typ):
		return fmt.Errorf("%s: %w", position(data, int(typ.Offset)-1), err)
	}
	return err
}

// position names byte offset off of data as "line L, column C (byte B)",
// lines and columns counted from 1 as editors do.
func position(data []byte, off int) string {
	off = min(max(off, 0), len(data))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - (bytes.LastIndexByte(data[:off], '\n') + 1) + 1
	return fmt.Sprintf("line %d, column %d (byte %d)", line, col, off)
}
