// Package capture reads packets from capture files (pcap and pcapng, chosen
// by the file's magic number) and decodes each one down to its TCP segment:
// link layer (Ethernet, VLAN, Linux cooked v1/v2, loopback/null, raw IP),
// then IPv4 or IPv6, then TCP.
//
// It is the source stage of the request pipeline: what it yields is handed to
// TCP reassembly. Reading is streaming and reuses one packet buffer, so the
// memory it needs does not grow with the file.
package capture
