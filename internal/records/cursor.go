package records

import (
	"encoding/binary"
	"fmt"
)

// cursor reads fields off the front of b. The first failure is kept in err
// and every later read returns zero values, so a parse reads all its fields
// and checks err once.
type cursor struct {
	b   []byte
	err error
}

func (c *cursor) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf(format, args...)
	}
	c.b = nil
}

func (c *cursor) int8(what string) int8 {
	if len(c.b) < 1 {
		c.fail("%s: no bytes remain", what)
		return 0
	}
	v := int8(c.b[0])
	c.b = c.b[1:]
	return v
}

func (c *cursor) int32(what string) int32 {
	if len(c.b) < 4 {
		c.fail("%s: %d bytes remain, need 4", what, len(c.b))
		return 0
	}
	v := int32(be.Uint32(c.b))
	c.b = c.b[4:]
	return v
}

func (c *cursor) int64(what string) int64 {
	if len(c.b) < 8 {
		c.fail("%s: %d bytes remain, need 8", what, len(c.b))
		return 0
	}
	v := int64(be.Uint64(c.b))
	c.b = c.b[8:]
	return v
}

// varlong reads a zigzag varint. binary.Varint stops at 10 bytes, so a run
// of continuation bytes cannot make it read further.
func (c *cursor) varlong(what string) int64 {
	// Most varints in a record (deltas, small lengths) are one byte.
	if len(c.b) > 0 && c.b[0] < 0x80 {
		u := int64(c.b[0])
		c.b = c.b[1:]
		return u>>1 ^ -(u & 1)
	}
	return c.varlongSlow(what)
}

func (c *cursor) varlongSlow(what string) int64 {
	v, n := binary.Varint(c.b)
	if n <= 0 {
		if n == 0 {
			c.fail("%s: varint runs past the end", what)
		} else {
			c.fail("%s: varint overflows 64 bits", what)
		}
		return 0
	}
	c.b = c.b[n:]
	return v
}

// varint reads a zigzag varint that must fit in 32 bits, as Kafka's int32
// varints do.
func (c *cursor) varint(what string) int32 {
	v := c.varlong(what)
	if v != int64(int32(v)) {
		c.fail("%s: varint %d overflows 32 bits", what, v)
		return 0
	}
	return int32(v)
}

// bytesN returns the next n bytes, nil when n is -1 (Kafka's null). Any other
// negative n, or one larger than what remains, fails.
func (c *cursor) bytesN(n int64, what string) []byte {
	switch {
	case c.err != nil:
		return nil
	case n == -1:
		return nil
	case n < 0:
		c.fail("%s: invalid length %d", what, n)
		return nil
	case n > int64(len(c.b)):
		c.fail("%s: length %d exceeds remaining %d bytes", what, n, len(c.b))
		return nil
	}
	v := c.b[:n:n]
	c.b = c.b[n:]
	return v
}

// varintBytes reads a varint length and that many bytes.
func (c *cursor) varintBytes(what string) []byte {
	return c.bytesN(int64(c.varint(what)), what)
}

// int32Bytes reads a 4-byte length and that many bytes, as magic 0 and 1
// messages store keys and values.
func (c *cursor) int32Bytes(what string) []byte {
	return c.bytesN(int64(c.int32(what)), what)
}
