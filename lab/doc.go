// Package lab runs real traffic through a userspace queue: network
// namespaces joined by veth pairs, a TUN router built on aqmkit between
// them, and the kernel's own TCP as the load.
package lab
