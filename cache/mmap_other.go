//go:build !linux

package cache

const mapPopulate = 0
