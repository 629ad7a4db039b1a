package capture

import (
	"fmt"

	"github.com/gopacket/gopacket/layers"

	"github.com/kscope-dev/kscope/internal/output"
)

// linkSupported says whether the decoder reads packets of a link type.
func linkSupported(link layers.LinkType) bool {
	switch link {
	case layers.LinkTypeEthernet, layers.LinkTypeLinuxSLL, layers.LinkTypeLinuxSLL2,
		layers.LinkTypeNull, layers.LinkTypeLoop, layers.LinkTypeIPv4, layers.LinkTypeIPv6,
		layers.LinkTypeRaw, 12: // 12: LINKTYPE_RAW's old DLT value on some systems
		return true
	}
	return false
}

// supportedLinks names the link types the decoder reads, for messages.
const supportedLinks = "Ethernet, Linux cooked capture (SLL and SLL2), BSD loopback and raw IP"

// maxLinkTypes bounds the link types counted apart: a pcapng file may
// describe thousands of interfaces.
const maxLinkTypes = 8

// linkCounts counts packets by link type.
type linkCounts struct {
	types  []layers.LinkType
	counts []int64
	other  int64 // packets of link types past the first maxLinkTypes
}

func (c *linkCounts) add(link layers.LinkType) {
	for i, t := range c.types {
		if t == link {
			c.counts[i]++
			return
		}
	}
	if len(c.types) == maxLinkTypes {
		c.other++
		return
	}
	c.types = append(c.types, link)
	c.counts = append(c.counts, 1)
}

// linkName is a link type's number and, when gopacket knows it, name.
func linkName(link layers.LinkType) string {
	switch name := link.String(); {
	case link >= 147 && link <= 162:
		return fmt.Sprintf("link type %d (USER%d, private to whoever wrote the file)", link, link-147)
	case name == "" || name == "UnknownLinkType":
		return fmt.Sprintf("link type %d", link)
	default:
		return fmt.Sprintf("link type %d (%s)", link, name)
	}
}

// Warnings are what did not stop the file from being read but leaves
// something out: packets of a link type kscope does not decode, secrets
// blocks skipped over the budget. One line each, the file name escaped.
func (cf *File) Warnings() []error {
	var out []error
	name := output.Escape(cf.Path)
	for i, t := range cf.unsupported.types {
		out = append(out, fmt.Errorf("%s: %d packets of %s not decoded: kscope reads %s",
			name, cf.unsupported.counts[i], linkName(t), supportedLinks))
	}
	if n := cf.unsupported.other; n > 0 {
		out = append(out, fmt.Errorf("%s: %d packets of other link types not decoded: kscope reads %s", name, n, supportedLinks))
	}
	if s := cf.SecretsStats(); s.Skipped > 0 {
		out = append(out, fmt.Errorf("%s: %d decryption secrets blocks (%d bytes) skipped, the first at byte offset %d: over the %d MiB budget for a capture's TLS key logs",
			name, s.Skipped, s.SkippedBytes, s.FirstSkipped, MaxSecretsBytes>>20))
	}
	return out
}
