package main

// int80 issues the i386 system call nr through int 0x80 (int80_amd64.s).
func int80(nr uintptr) uintptr
