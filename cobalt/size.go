package cobalt

import "unsafe"

func sizeofPacket[P any](p P) uintptr { return unsafe.Sizeof(p) }
