package cache

import "golang.org/x/sys/unix"

// mapPopulate asks mmap to map every page of the file at once (the
// entry's pages are in tmpfs's page cache: no fault per page later).
const mapPopulate = unix.MAP_POPULATE
