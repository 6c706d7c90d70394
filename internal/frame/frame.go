// Package frame holds the size of a full-size packet that the presets and
// the limit checks of the queues share.
package frame

// FullBytes is the packet size the presets use to turn bytes into packets
// and the limit checks to judge a byte limit: an Ethernet MTU of 1500 plus
// its 14-byte header.
const FullBytes = 1514
