// Package dropcap holds the bound on the packets one Dequeue call drops,
// which CoDel and COBALT share with the fair queues that embed their
// controllers.
package dropcap

// PerDequeue bounds the packets one Dequeue call drops, 256 as in Linux
// since 2026. When it is reached the call returns the next packet and
// reschedules the next drop from now, so a pathological configuration or a
// long stall cannot turn one call into a drain of the whole queue.
const PerDequeue = 256
