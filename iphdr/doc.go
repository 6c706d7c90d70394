// Package iphdr reads the few facts a queue needs from raw IPv4 and IPv6
// packets, and writes the one it may change: it turns packet bytes into an
// [aqm.Meta] (size, keyed flow hash, ECN codepoint) and sets Congestion
// Experienced in place (RFC 3168, with the RFC 1624 checksum update).
//
// Every function takes a []byte that starts at the IP header (no link
// header) and reads it in place: nothing is copied, nothing allocates, no
// loop runs without a bound, and no input, however malformed, makes a
// function panic. Bad input gets a sentinel error ([ErrTruncated],
// [ErrNotIP]) and is never modified.
//
//	h := iphdr.NewHasher()      // once; share it between goroutines
//	m, err := h.Meta(pkt)       // on enqueue
//	...
//	if p.ECN == aqm.CE {        // on dequeue
//		iphdr.SetCE(p.Payload)
//	}
//
// [Hasher.Flow] returns, from one parse, the flow hash, the source-host and
// destination-host hashes, and the DSCP, ECN, protocol and transport
// header offset, for queues that isolate hosts as well as flows.
//
// # Hashing
//
// A fair queue gives each flow its own queue by hashing the flow's key. If
// an outsider can compute that hash, they can craft many flows that all
// land in one queue, or flows that land in a victim's queue, and so defeat
// the fairness (hash flooding). The hash is therefore SipHash-1-3, a keyed
// pseudo-random function, under a 128-bit key. [NewHasher] draws the key
// from crypto/rand; use it on real traffic. [NewHasherWithKey] takes the
// key from the caller, so that tests and simulations are reproducible; a
// fixed or guessable key gives no protection.
//
// SipHash-1-3 rather than the 2-4 of the SipHash paper: it is the variant
// hash tables use (Rust's standard library, for one), nobody has shown a
// practical attack on it, and it takes about 30% less time on the short
// keys here (five rounds for an IPv4 flow key instead of eight, eight for
// IPv6 instead of fourteen). The 64-bit result is folded to 32 bits by
// xoring its halves.
//
// The flow key is the addresses, the protocol, and the transport words:
// the source and destination ports of TCP, UDP, UDP-Lite, SCTP and DCCP;
// the identifier of ICMP and ICMPv6 echo messages (and ICMP timestamps);
// the SPI of ESP; the key of GRE (version 0), or its call ID (version 1,
// PPTP). Payload bytes are never part of it. [HashSrcHost] and
// [HashDstHost] key on one address alone. Keys of the two families, and
// of the four roles, never coincide.
//
// [HashFlowSymmetric] puts the flow key's two endpoints in order before
// hashing, so that a packet and its reply hash alike: when the destination
// address is lower than the source address (compared as big-endian
// numbers, that is byte by byte), or the addresses are equal and the
// destination port is lower than the source port, the addresses are
// exchanged, and for TCP, UDP, UDP-Lite, SCTP and DCCP the ports too.
// Other transport words (an ICMP echo identifier, a GRE key) are kept as
// they are, being the same in both directions; an ESP or AH SPI differs
// per direction, so such flows stay asymmetric. Link-layer padding after the IP
// packet's own length is ignored.
//
// # Fragments and extension headers
//
// Fragments carry no ports past the first, so every fragment (IPv4 with
// MF set or a non-zero offset, IPv6 with a Fragment header) is keyed on
// its addresses and protocol alone, and all fragments of a datagram share
// one key. So are packets of other protocols, and packets whose transport
// header is cut short by the IP length.
//
// IPv6 extension headers are walked: Hop-by-Hop Options, Routing,
// Destination Options (wherever they appear), and AH (RFC 4302, also in
// IPv4), which is skipped so that AH-protected TCP keys like plain TCP;
// when what follows AH gives no transport words, AH's SPI is used instead.
// At most eight headers are walked (RFC 8200's recommended order, with
// Destination Options twice). A Fragment header, a header cut short, a
// ninth extension header, and every other Next Header value (ESP, No Next
// Header, Mobility, and any unknown one) end the walk, and [Flow.Protocol]
// is the last Next Header value read. IPv6 options
// and extension headers, like IPv4 options, are never part of the key, so
// the same 5-tuple hashes alike with or without them.
//
// # ECN and checksum
//
// [SetCE] turns ECT(0) and ECT(1) into CE, leaves CE as it is, and refuses
// Not-ECT with [ErrNotECT]: such a packet must be dropped, not marked. It
// changes nothing but the two ECN bits and, in IPv4, the header checksum,
// which it updates incrementally by RFC 1624's HC' = ~(~HC + ~m + m').
// Setting CE raises the first header word by 1 or 2, so the update is a
// ones'-complement subtraction of that amount, and when the result is the
// negative zero 0xFFFF it is written as 0x0000, the value a full
// recomputation gives (RFC 1141's older formula gets this case wrong). An
// incremental update also preserves an error in a corrupted header instead
// of hiding it. Transport checksums do not cover the ECN bits, so they stay
// valid. IPv6 has no header checksum.
//
// [Hasher.Meta] gives [aqm.Meta.Size] as len(pkt): the IP packet's bytes
// (and any link padding the caller left on). Callers that shape to a link
// rate add the link or tunnel overhead themselves.
//
// # GSO super-packets
//
// A Linux TUN opened with IFF_VNET_HDR puts a virtio-net header
// ([VnetHdr], [VnetHdrLen] bytes, read by [ParseVnetHdr]) before each
// packet, and with its offloads on a packet may be a GSO super-packet: up
// to 64 KiB of TCP or UDP payload behind one set of headers, standing for
// the packets a segmentation offload will cut it into. [GSOSegments] says
// how many ([aqm.Meta.Segments]), [GSOWireSize] how many IP bytes those
// segments put on the wire, each with its own IP and transport headers
// (the size to charge a super-packet a queue keeps whole), and [SplitGSO]
// cuts it into its segments in the caller's buffers, with their headers
// and checksums complete. They take the IP packet behind the header and
// the parsed header, check one against the other ([ErrGSO]), and allocate
// nothing.
//
// # Differences from Linux's flow dissector
//
//   - ICMP echo identifiers are in the key, so two pings between the same
//     hosts get separate queues; Linux's default flow hash keys ICMP on
//     addresses and protocol.
//   - The IPv6 flow label is never used: a labelled packet is keyed on its
//     ports like any other, where Linux keys it on addresses, label and
//     next header. A sender may change its label mid-connection, which
//     would move the connection to another queue.
//   - AH is walked through (as gVisor does), where Linux stops at it and
//     keys on its SPI.
//   - Tunnels are not entered: GRE is keyed on its outer addresses and GRE
//     key, IP-in-IP and IPv6-in-IP on their outer addresses, where Linux
//     keys on the inner flow.
//   - Addresses are sorted only in [HashFlowSymmetric] mode (Linux's
//     symmetric hash always sorts them); by default the two directions of
//     a connection hash differently, as a queue sees one direction.
//   - The walk stops after 8 extension headers, not after 15 parsing steps
//     of any kind, and a hash of 0 has no special meaning.
package iphdr
