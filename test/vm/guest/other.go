//go:build !linux

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "guest: the test VM's init is Linux-only")
	os.Exit(2)
}
