//go:build !linux

package cache

// mapPopulate is 0 where mmap has no MAP_POPULATE: pages are mapped as
// they are first read.
const mapPopulate = 0
