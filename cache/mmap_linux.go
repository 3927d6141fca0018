package cache

import "golang.org/x/sys/unix"

// mapPopulate asks Linux to fault the whole mapping in at mmap time: Get
// reads every page for the checksum anyway, and populating in one call is
// much cheaper than one page fault per 4 KiB page.
const mapPopulate = unix.MAP_POPULATE
