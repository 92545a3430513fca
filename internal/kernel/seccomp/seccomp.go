// Package seccomp builds and installs the default-deny seccomp filter that
// airlock applies to every sandboxed command. The allowlist follows the
// syscall set of Docker's default profile, minus calls that reach kernel
// attack surface a sandboxed developer workload does not need (ptrace, bpf,
// io_uring, mounts, namespaces, keyrings, modules, ...), which fail with
// EPERM. Syscalls the profile does not know fail with ENOSYS.
package seccomp

import (
	"errors"
	"slices"
	"strings"
)

// ErrUnsupported is returned (wrapped) when no profile exists for the
// running operating system or architecture.
var ErrUnsupported = errors.New("unsupported")

// allowedSyscalls are allowed unconditionally. The set follows Docker's
// default seccomp profile for amd64 (the calls it allows without extra
// capabilities), minus the calls in deniedSyscalls.
var allowedSyscalls = []string{
	// Process lifecycle, credentials and identity.
	"execve", "execveat", "exit", "exit_group", "fork", "vfork",
	"wait4", "waitid", "kill", "tkill", "tgkill",
	"pidfd_open", "pidfd_send_signal", "process_mrelease",
	"getpid", "getppid", "gettid", "getpgid", "getpgrp", "getsid",
	"setpgid", "setsid",
	"getuid", "geteuid", "getgid", "getegid", "getgroups",
	"getresuid", "getresgid", "setuid", "setgid", "setreuid", "setregid",
	"setresuid", "setresgid", "setfsuid", "setfsgid", "setgroups",
	"capget", "capset", "prctl", "arch_prctl",
	"set_tid_address", "set_robust_list", "get_robust_list",
	"get_thread_area", "set_thread_area", "rseq", "rseq_slice_yield",
	"restart_syscall", "uretprobe", "uprobe",
	"seccomp", "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",

	// Signals.
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending",
	"rt_sigtimedwait", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "rt_sigsuspend",
	"sigaltstack", "pause", "signalfd", "signalfd4",

	// Memory.
	"brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "mincore",
	"msync", "mlock", "mlock2", "munlock", "mlockall", "munlockall",
	"remap_file_pages", "membarrier", "memfd_create", "memfd_secret",
	"pkey_alloc", "pkey_free", "pkey_mprotect", "mseal", "map_shadow_stack",
	"get_mempolicy",

	// Synchronisation and scheduling.
	"futex", "futex_waitv", "futex_wake", "futex_wait", "futex_requeue",
	"sched_yield", "sched_getaffinity", "sched_setaffinity",
	"sched_getparam", "sched_setparam", "sched_getscheduler", "sched_setscheduler",
	"sched_get_priority_max", "sched_get_priority_min", "sched_rr_get_interval",
	"sched_getattr", "sched_setattr", "getcpu",
	"getpriority", "setpriority", "ioprio_get", "ioprio_set",

	// Time and timers.
	"nanosleep", "clock_nanosleep", "clock_gettime", "clock_getres",
	"gettimeofday", "time", "times", "alarm", "getitimer", "setitimer",
	"timer_create", "timer_settime", "timer_gettime", "timer_getoverrun", "timer_delete",
	"timerfd_create", "timerfd_settime", "timerfd_gettime",

	// Resources and system information.
	"getrlimit", "setrlimit", "prlimit64", "getrusage", "sysinfo", "uname",
	"umask", "getrandom",

	// File descriptors and I/O.
	"read", "write", "readv", "writev", "pread64", "pwrite64",
	"preadv", "pwritev", "preadv2", "pwritev2",
	"open", "openat", "openat2", "creat", "close", "close_range", "lseek",
	"dup", "dup2", "dup3", "pipe", "pipe2", "fcntl", "flock",
	"fsync", "fdatasync", "sync_file_range",
	"truncate", "ftruncate", "fallocate", "fadvise64", "readahead",
	"sendfile", "splice", "tee", "vmsplice", "copy_file_range", "cachestat",

	// Files and directories.
	"stat", "fstat", "lstat", "newfstatat", "statx", "statfs", "fstatfs",
	"access", "faccessat", "faccessat2", "getdents", "getdents64",
	"getcwd", "chdir", "fchdir", "rename", "renameat", "renameat2",
	"mkdir", "mkdirat", "rmdir", "link", "linkat", "unlink", "unlinkat",
	"symlink", "symlinkat", "readlink", "readlinkat",
	"chmod", "fchmod", "fchmodat", "fchmodat2",
	"chown", "fchown", "lchown", "fchownat",
	"utime", "utimes", "utimensat", "futimesat",
	"setxattr", "lsetxattr", "fsetxattr", "setxattrat",
	"getxattr", "lgetxattr", "fgetxattr", "getxattrat",
	"listxattr", "llistxattr", "flistxattr", "listxattrat",
	"removexattr", "lremovexattr", "fremovexattr", "removexattrat",
	"file_getattr", "file_setattr", "statmount", "listmount",

	// Event notification.
	"select", "pselect6", "poll", "ppoll",
	"epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait",
	"epoll_pwait2", "epoll_ctl_old", "epoll_wait_old", "eventfd", "eventfd2",
	"inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
	"fanotify_mark",

	// Sockets (socket itself is filtered by argument, see below).
	"socketpair", "bind", "listen", "accept", "accept4", "connect",
	"getsockname", "getpeername", "sendto", "recvfrom", "sendmsg", "recvmsg",
	"sendmmsg", "recvmmsg", "shutdown", "setsockopt", "getsockopt",

	// System V and POSIX IPC (namespaced by the sandbox's IPC namespace).
	"shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semctl",
	"semtimedop", "msgget", "msgsnd", "msgrcv", "msgctl",
	"mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
	"mq_getsetattr",
}

// deniedSyscalls fail with EPERM regardless of their arguments.
var deniedSyscalls = []string{
	// Debugging and cross-process memory access.
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	"process_madvise",
	// Kernel attack surface without a need in developer workloads.
	"bpf", "perf_event_open", "userfaultfd", "fanotify_init",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"keyctl", "add_key", "request_key",
	// Mounts and file handles.
	"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree",
	"open_tree_attr", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	"open_by_handle_at", "name_to_handle_at",
	// Namespaces.
	"unshare", "setns",
	// Modules, kexec, power, swap, accounting, quotas.
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd",
	// Host-wide state: clocks, names, kernel log, terminals, I/O ports.
	"settimeofday", "clock_settime", "adjtimex", "clock_adjtime",
	"sethostname", "setdomainname", "syslog", "vhangup",
	"iopl", "ioperm", "modify_ldt",
	// Writeback of every filesystem (sync) or of a whole one, the host's
	// too through a bound /usr (syncfs): a sandbox would make the host
	// write out everything dirty, at will. sync(2) returns nothing, so its
	// callers carry on; a file is made durable with fsync.
	"sync", "syncfs",
	// NUMA policy (Docker requires CAP_SYS_NICE for these).
	"mbind", "set_mempolicy", "set_mempolicy_home_node", "migrate_pages", "move_pages",
	// Obsolete interfaces.
	"create_module", "get_kernel_syms", "query_module", "nfsservctl",
	"uselib", "ustat", "sysfs", "_sysctl", "lookup_dcookie",
}

// conditionalSyscalls are decided by their arguments (see Describe).
var conditionalSyscalls = []string{"clone", "ioctl", "socket", "personality", "mknod", "mknodat"}

// enosysSyscalls fail with ENOSYS even though the kernel implements them, so
// callers fall back to an older interface: clone3 to clone (whose flags
// can be filtered), and Linux AIO to ordinary I/O (its contexts come from
// one host-wide pool, fs.aio-max-nr, that a sandbox could use up).
var enosysSyscalls = []string{"clone3",
	"io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents", "io_pgetevents"}

// Allowed returns the names of the syscalls the default profile allows
// regardless of their arguments, sorted.
func Allowed() []string { return sorted(allowedSyscalls) }

// Denied returns the names of the syscalls the default profile rejects with
// EPERM regardless of their arguments, sorted.
func Denied() []string { return sorted(deniedSyscalls) }

// Conditional returns the names of the syscalls whose outcome depends on
// their arguments (clone, ioctl, socket, personality, mknod, mknodat),
// sorted.
func Conditional() []string { return sorted(conditionalSyscalls) }

func sorted(names []string) []string {
	s := slices.Clone(names)
	slices.Sort(s)
	return s
}

// Describe returns a short human-readable summary of the default profile.
func Describe() string {
	var b strings.Builder
	b.WriteString(`airlock default seccomp profile (default deny):
- Only native x86-64 syscalls are accepted: any other audit architecture
  (e.g. i386 via int 0x80) kills the process; x32 syscalls fail with EPERM.
- Allowed: the syscalls of Docker's default profile needed by shells,
  compilers, interpreters and package managers (file I/O, processes,
  threads, signals, memory, timers, IPC, sockets).
- clone: allowed unless the flags request a new namespace (user, mount,
  pid, net, ipc, uts, cgroup, time), which fails with EPERM.
- `)
	b.WriteString(strings.Join(enosysSyscalls, ", "))
	b.WriteString(`: ENOSYS (its flags live in memory and cannot be inspected;
  libc and Go fall back to clone).
- ioctl: TIOCSTI and TIOCLINUX fail with EPERM; other requests are allowed.
- socket: AF_UNIX and AF_NETLINK are allowed; AF_INET and AF_INET6 are
  allowed except SOCK_RAW and SOCK_PACKET (EPERM); AF_PACKET fails with
  EPERM; every other family fails with EAFNOSUPPORT.
- personality: only 0x0, 0x8, 0x20000, 0x20008 and 0xffffffff (query).
- mknod, mknodat: device nodes (S_IFCHR, S_IFBLK) fail with EPERM; files,
  fifos and sockets are allowed.
- Any other syscall not in the allowlist fails with ENOSYS.
- Denied with EPERM: `)
	b.WriteString(strings.Join(Denied(), ", "))
	b.WriteString(".\n")
	return b.String()
}
