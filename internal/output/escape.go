package output

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape makes a string from the wire safe to print: control characters,
// invalid UTF-8 and other non-printable runes become \xNN or \u{NNNN}
// escapes, and a backslash becomes \\, so the output cannot move the
// cursor, change colours or forge lines.
func Escape(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '\\' || c >= 0x80 {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteByte(hexDigit(s[i] >> 4))
			b.WriteByte(hexDigit(s[i] & 0xf))
		case r == '\\':
			b.WriteString(`\\`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x`)
			b.WriteByte(hexDigit(byte(r) >> 4))
			b.WriteByte(hexDigit(byte(r) & 0xf))
		case !unicode.IsPrint(r):
			b.WriteString(`\u{` + strconv.FormatInt(int64(r), 16) + `}`)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func hexDigit(v byte) byte { return "0123456789abcdef"[v&0xf] }
