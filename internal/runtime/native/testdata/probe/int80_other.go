//go:build !amd64

package main

// int80 has no meaning off amd64: report ENOSYS as a negative errno.
func int80(uintptr) uintptr { return ^uintptr(38 - 1) }
