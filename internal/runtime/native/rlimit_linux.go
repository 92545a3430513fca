package native

import "syscall"

func setrlimit(res int, v uint64) error {
	return syscall.Setrlimit(res, &syscall.Rlimit{Cur: v, Max: v})
}
