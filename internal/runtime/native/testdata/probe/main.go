// Command probe is the hostile program of the native backend's escape
// suite. Each case tries one action a sandboxed attacker would try, with
// raw system calls where possible, and prints one JSON line:
//
//	{"case":"bpf","ok":false,"errno":"EPERM","detail":"..."}
//
// ok reports whether the hostile action succeeded. The Go test that runs
// the probe inside a sandbox decides what is acceptable. Every case is
// written so that even its success is harmless to the host (invalid
// arguments after the permission check, no writes through opened files).
package main

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

type result struct {
	Case   string `json:"case"`
	OK     bool   `json:"ok"`
	Errno  string `json:"errno,omitempty"`
	Detail string `json:"detail,omitempty"`
	N      int64  `json:"n,omitempty"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe <case> [args]")
		os.Exit(2)
	}
	name, args := os.Args[1], os.Args[2:]
	fn, ok := cases[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "probe: unknown case %q\n", name)
		os.Exit(2)
	}
	goruntime.LockOSThread()
	r := fn(args)
	r.Case = name
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
	// Cases that take a kernel resource keep it while the test looks.
	time.Sleep(holdFor)
}

// errResult turns a syscall outcome into a result: err == nil is success.
func errResult(err error, detail string) result {
	if err == nil {
		return result{OK: true, Detail: detail}
	}
	r := result{Detail: detail}
	var en unix.Errno
	if errors.As(err, &en) {
		r.Errno = unix.ErrnoName(en)
		if r.Errno == "" {
			r.Errno = "errno" + strconv.Itoa(int(en))
		}
	} else {
		r.Errno = "other"
		if detail == "" {
			r.Detail = err.Error()
		} else {
			r.Detail = detail + ": " + err.Error()
		}
	}
	return r
}

func errnoOf(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func arg(args []string, i int, def string) string {
	if i < len(args) {
		return args[i]
	}
	return def
}

func cstr(s string) *byte {
	p, err := unix.BytePtrFromString(s)
	if err != nil {
		panic(err)
	}
	return p
}

var cases = map[string]func(args []string) result{
	// --- mounts and file handles -------------------------------------
	"mount": func([]string) result {
		return errResult(unix.Mount("airlock-probe", "/tmp", "tmpfs", 0, "size=1m"), "tmpfs on /tmp")
	},
	"mount-proc": func([]string) result {
		_ = os.Mkdir("/tmp/probe-proc", 0o755)
		return errResult(unix.Mount("proc", "/tmp/probe-proc", "proc", 0, ""), "proc on /tmp/probe-proc")
	},
	"mount-sysfs": func([]string) result {
		_ = os.Mkdir("/tmp/probe-sys", 0o755)
		return errResult(unix.Mount("sysfs", "/tmp/probe-sys", "sysfs", 0, ""), "sysfs on /tmp/probe-sys")
	},
	"umount2": func([]string) result {
		return errResult(unix.Unmount("/usr", unix.MNT_DETACH), "umount2 /usr")
	},
	"umount2-proc": func([]string) result {
		return errResult(unix.Unmount("/proc", unix.MNT_DETACH), "umount2 /proc")
	},
	"pivot_root": func([]string) result {
		_ = os.Mkdir("/tmp/old", 0o755)
		return errResult(unix.PivotRoot("/tmp", "/tmp/old"), "pivot_root /tmp /tmp/old")
	},
	"remount-rw": func([]string) result {
		err := unix.Mount("", "/usr", "", unix.MS_REMOUNT|unix.MS_BIND, "")
		detail := "remount /usr without MS_RDONLY"
		if err == nil {
			// did it really become writable?
			if f, err := os.Create("/usr/.airlock-probe"); err == nil {
				f.Close()
				os.Remove("/usr/.airlock-probe")
				detail += "; /usr is now writable"
			}
		}
		return errResult(err, detail)
	},
	"chroot": func([]string) result {
		return errResult(unix.Chroot("/tmp"), "chroot /tmp")
	},
	"fsopen": func([]string) result {
		fd, _, e := unix.RawSyscall(unix.SYS_FSOPEN, uintptr(unsafe.Pointer(cstr("tmpfs"))), 0, 0)
		if e == 0 {
			unix.Close(int(fd))
		}
		return errResult(errnoOf(e), "fsopen tmpfs")
	},
	"open_tree": func([]string) result {
		fd, _, e := unix.RawSyscall(unix.SYS_OPEN_TREE, atFdcwd(), uintptr(unsafe.Pointer(cstr("/usr"))), uintptr(unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC))
		if e == 0 {
			unix.Close(int(fd))
		}
		return errResult(errnoOf(e), "open_tree /usr clone")
	},
	"name_to_handle_at": func([]string) result {
		_, _, err := unix.NameToHandleAt(unix.AT_FDCWD, "/etc/passwd", 0)
		return errResult(err, "/etc/passwd")
	},
	"open_by_handle_at": func([]string) result {
		mfd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return errResult(err, "open /")
		}
		defer unix.Close(mfd)
		// An ext4-style FILEID_INO32_GEN handle for inode 2, the root of
		// the filesystem: the classic "shocker" escape.
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, 2)
		fd, err := unix.OpenByHandleAt(mfd, unix.NewFileHandle(1, b), unix.O_RDONLY)
		if err == nil {
			unix.Close(fd)
		}
		return errResult(err, "inode 2 via /")
	},

	// --- namespaces ----------------------------------------------------
	"unshare-user": func([]string) result {
		return errResult(unix.Unshare(unix.CLONE_NEWUSER), "unshare(CLONE_NEWUSER)")
	},
	"unshare-mount": func([]string) result {
		return errResult(unix.Unshare(unix.CLONE_NEWNS), "unshare(CLONE_NEWNS)")
	},
	"unshare-net": func([]string) result {
		return errResult(unix.Unshare(unix.CLONE_NEWNET), "unshare(CLONE_NEWNET)")
	},
	"clone-newuser": func([]string) result {
		return rawClone(unix.CLONE_NEWUSER)
	},
	"clone-newns": func([]string) result {
		return rawClone(unix.CLONE_NEWNS | unix.CLONE_NEWPID)
	},
	"clone3-newuser": func([]string) result {
		// struct clone_args: flags, pidfd, child_tid, parent_tid,
		// exit_signal, stack, stack_size, tls (8 x u64)
		var ca [8]uint64
		ca[0] = unix.CLONE_NEWUSER
		ca[4] = uint64(unix.SIGCHLD)
		pid, _, e := unix.RawSyscall(unix.SYS_CLONE3, uintptr(unsafe.Pointer(&ca[0])), unsafe.Sizeof(ca), 0)
		if e == 0 && pid == 0 {
			unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
		}
		if e == 0 {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(int(pid), &ws, 0, nil)
		}
		return errResult(errnoOf(e), "clone3(CLONE_NEWUSER)")
	},
	"setns": func([]string) result {
		fd, err := unix.Open("/proc/self/ns/net", unix.O_RDONLY, 0)
		if err != nil {
			return errResult(err, "open /proc/self/ns/net")
		}
		defer unix.Close(fd)
		return errResult(unix.Setns(fd, 0), "setns own net ns")
	},
	"setns-init": func([]string) result {
		fd, err := unix.Open("/proc/1/ns/mnt", unix.O_RDONLY, 0)
		if err != nil {
			return errResult(err, "open /proc/1/ns/mnt")
		}
		defer unix.Close(fd)
		return errResult(unix.Setns(fd, 0), "setns into pid 1's mount ns")
	},

	// --- tracing and cross-process memory ------------------------------
	"ptrace-attach": func(args []string) result {
		pid := pidArg(args, 1)
		err := unix.PtraceAttach(pid)
		if err == nil {
			_ = unix.PtraceDetach(pid)
		}
		return errResult(err, "PTRACE_ATTACH "+strconv.Itoa(pid))
	},
	"ptrace-seize-parent": func([]string) result {
		pid := unix.Getppid()
		_, _, e := unix.RawSyscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(pid), 0, 0, 0, 0)
		if e == 0 {
			_ = unix.PtraceDetach(pid)
		}
		return errResult(errnoOf(e), "PTRACE_SEIZE parent "+strconv.Itoa(pid))
	},
	"ptrace-traceme": func([]string) result {
		_, _, e := unix.RawSyscall(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0)
		return errResult(errnoOf(e), "PTRACE_TRACEME")
	},
	"process_vm_readv": func(args []string) result {
		pid := pidArg(args, 1)
		buf := make([]byte, 64)
		local := []unix.Iovec{{Base: &buf[0], Len: uint64(len(buf))}}
		remote := []unix.RemoteIovec{{Base: 0x400000, Len: len(buf)}}
		n, err := unix.ProcessVMReadv(pid, local, remote, 0)
		r := errResult(err, "read 64 bytes of pid "+strconv.Itoa(pid))
		r.N = int64(n)
		return r
	},
	"process_vm_writev": func(args []string) result {
		pid := pidArg(args, 1)
		// length 0: nothing would be written even if allowed
		buf := make([]byte, 1)
		local := []unix.Iovec{{Base: &buf[0], Len: 0}}
		remote := []unix.RemoteIovec{{Base: 0x400000, Len: 0}}
		_, err := unix.ProcessVMWritev(pid, local, remote, 0)
		return errResult(err, "zero-length write to pid "+strconv.Itoa(pid))
	},
	"kcmp": func([]string) result {
		_, _, e := unix.RawSyscall6(unix.SYS_KCMP, 1, uintptr(os.Getpid()), 0, 0, 0, 0)
		return errResult(errnoOf(e), "kcmp(1, self, KCMP_FILE)")
	},
	"pidfd_getfd": func([]string) result {
		pfd, err := unix.PidfdOpen(os.Getppid(), 0)
		if err != nil {
			return errResult(err, "pidfd_open parent")
		}
		defer unix.Close(pfd)
		fd, err := unix.PidfdGetfd(pfd, 0, 0)
		if err == nil {
			unix.Close(fd)
		}
		return errResult(err, "pidfd_getfd parent fd 0")
	},

	// --- kernel attack surface -------------------------------------------
	"bpf": func([]string) result {
		// union bpf_attr for BPF_MAP_CREATE: map_type, key_size,
		// value_size, max_entries
		var attr [64]byte
		binary.LittleEndian.PutUint32(attr[0:], 2) // BPF_MAP_TYPE_ARRAY
		binary.LittleEndian.PutUint32(attr[4:], 4)
		binary.LittleEndian.PutUint32(attr[8:], 4)
		binary.LittleEndian.PutUint32(attr[12:], 1)
		fd, _, e := unix.RawSyscall(unix.SYS_BPF, unix.BPF_MAP_CREATE, uintptr(unsafe.Pointer(&attr[0])), unsafe.Sizeof(attr))
		if e == 0 {
			unix.Close(int(fd))
		}
		return errResult(errnoOf(e), "BPF_MAP_CREATE array")
	},
	"perf_event_open": func([]string) result {
		attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CPU_CLOCK}
		attr.Size = uint32(unsafe.Sizeof(attr))
		fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err == nil {
			unix.Close(fd)
		}
		return errResult(err, "software cpu-clock on self")
	},
	"keyctl": func([]string) result {
		id, err := unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_SESSION_KEYRING, 0, 0, 0)
		r := errResult(err, "KEYCTL_GET_KEYRING_ID session")
		r.N = int64(id)
		return r
	},
	"add_key": func([]string) result {
		id, err := unix.AddKey("user", "airlock-probe", []byte("x"), unix.KEY_SPEC_PROCESS_KEYRING)
		r := errResult(err, "user key in process keyring")
		r.N = int64(id)
		return r
	},
	"request_key": func([]string) result {
		_, err := unix.RequestKey("user", "airlock-probe", "", unix.KEY_SPEC_PROCESS_KEYRING)
		return errResult(err, "request_key user")
	},
	"userfaultfd": func([]string) result {
		fd, _, e := unix.RawSyscall(unix.SYS_USERFAULTFD, unix.O_CLOEXEC, 0, 0)
		if e == 0 {
			unix.Close(int(fd))
		}
		return errResult(errnoOf(e), "userfaultfd(O_CLOEXEC)")
	},
	"io_uring_setup": func([]string) result {
		var params [120]byte
		fd, _, e := unix.RawSyscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
		if e == 0 {
			unix.Close(int(fd))
		}
		return errResult(errnoOf(e), "io_uring_setup(1)")
	},
	"init_module": func([]string) result {
		// a one-byte image: rejected as malformed even when permitted
		return errResult(unix.InitModule([]byte{0}, ""), "1-byte image")
	},
	"finit_module": func([]string) result {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY, 0)
		if err != nil {
			return errResult(err, "open /dev/null")
		}
		defer unix.Close(fd)
		return errResult(unix.FinitModule(fd, "", 0), "/dev/null as module")
	},
	"delete_module": func([]string) result {
		return errResult(unix.DeleteModule("airlock_probe_no_such_module", unix.O_NONBLOCK), "no such module")
	},
	"kexec_load": func([]string) result {
		// flag 0x100 is not a valid kexec flag: EINVAL if permitted, so
		// even success of the permission check cannot unload an image.
		_, _, e := unix.RawSyscall6(unix.SYS_KEXEC_LOAD, 0, 0, 0, 0x100, 0, 0)
		return errResult(errnoOf(e), "kexec_load(invalid flags)")
	},
	"kexec_file_load": func([]string) result {
		_, _, e := unix.RawSyscall6(unix.SYS_KEXEC_FILE_LOAD, ^uintptr(0), ^uintptr(0), 0, uintptr(unsafe.Pointer(cstr(""))), 0x100, 0)
		return errResult(errnoOf(e), "kexec_file_load(invalid flags)")
	},
	"reboot": func([]string) result {
		// bad magic: EINVAL if permitted
		_, _, e := unix.RawSyscall6(unix.SYS_REBOOT, 0x1234, 0x5678, unix.LINUX_REBOOT_CMD_CAD_OFF, 0, 0, 0)
		return errResult(errnoOf(e), "reboot(bad magic)")
	},
	"swapon": func([]string) result {
		_, _, e := unix.RawSyscall(unix.SYS_SWAPON, uintptr(unsafe.Pointer(cstr("/airlock-probe-no-such-file"))), 0, 0)
		return errResult(errnoOf(e), "swapon missing file")
	},
	"sethostname": func([]string) result {
		return errResult(unix.Sethostname([]byte("pwned")), "sethostname")
	},
	"clock_settime": func([]string) result {
		var ts unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_REALTIME, &ts)
		return errResult(unix.ClockSettime(unix.CLOCK_REALTIME, &ts), "set realtime clock to now")
	},
	"syslog": func([]string) result {
		buf := make([]byte, 64)
		_, err := unix.Klogctl(3, buf) // SYSLOG_ACTION_READ_ALL
		return errResult(err, "read kernel log")
	},
	"iopl": func([]string) result {
		_, _, e := unix.RawSyscall(unix.SYS_IOPL, 3, 0, 0)
		return errResult(errnoOf(e), "iopl(3)")
	},
	"ioperm": func([]string) result {
		_, _, e := unix.RawSyscall(unix.SYS_IOPERM, 0x80, 1, 1)
		return errResult(errnoOf(e), "ioperm(0x80)")
	},
	"personality": func([]string) result {
		// READ_IMPLIES_EXEC | ADDR_NO_RANDOMIZE
		_, _, e := unix.RawSyscall(unix.SYS_PERSONALITY, 0x0400000|0x0040000, 0, 0)
		return errResult(errnoOf(e), "personality(READ_IMPLIES_EXEC|ADDR_NO_RANDOMIZE)")
	},
	"fanotify_init": func([]string) result {
		fd, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF, unix.O_RDONLY)
		if err == nil {
			unix.Close(fd)
		}
		return errResult(err, "fanotify_init")
	},
	"x32": func([]string) result {
		// getpid through the x32 ABI (syscall number | __X32_SYSCALL_BIT)
		r1, _, e := unix.RawSyscall(unix.SYS_GETPID|0x40000000, 0, 0, 0)
		return errResult(errnoOf(e), "x32 getpid returned "+strconv.Itoa(int(r1)))
	},
	"int80": func([]string) result {
		// i386 getpid (20) through int 0x80: the filter must kill us
		// with SIGSYS before this returns.
		r := int80(20)
		if int64(r) < 0 && int64(r) > -4096 {
			return errResult(unix.Errno(-int64(r)), "int 0x80 returned")
		}
		return result{OK: true, Detail: "int 0x80 getpid returned " + strconv.FormatInt(int64(r), 10)}
	},

	// --- terminals ---------------------------------------------------------
	"tiocsti-stdin": func([]string) result {
		return tiocsti(0, "fd 0")
	},
	"tiocsti-tty": func([]string) result {
		fd, err := unix.Open("/dev/tty", unix.O_RDWR|unix.O_NOCTTY, 0)
		if err != nil {
			return errResult(err, "open /dev/tty")
		}
		defer unix.Close(fd)
		return tiocsti(fd, "/dev/tty")
	},
	"tiocsti-pty": func([]string) result {
		m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY, 0)
		if err != nil {
			return errResult(err, "open /dev/ptmx")
		}
		defer unix.Close(m)
		if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
			return errResult(err, "unlockpt")
		}
		n, err := unix.IoctlGetUint32(m, unix.TIOCGPTN)
		if err != nil {
			return errResult(err, "ptsname")
		}
		s, err := unix.Open("/dev/pts/"+strconv.Itoa(int(n)), unix.O_RDWR|unix.O_NOCTTY, 0)
		if err != nil {
			return errResult(err, "open pts")
		}
		defer unix.Close(s)
		return tiocsti(s, "a fresh pty")
	},
	"tiocsti-highbits": func([]string) result {
		// the same request with garbage in the upper half of the register:
		// the kernel takes an unsigned int, a filter comparing 64 bits
		// would miss it
		m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY, 0)
		if err != nil {
			return errResult(err, "open /dev/ptmx")
		}
		defer unix.Close(m)
		c := byte('x')
		req := uintptr(0xdead0000)<<32 | uintptr(unix.TIOCSTI)
		_, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(m), req, uintptr(unsafe.Pointer(&c)))
		return errResult(errnoOf(e), fmt.Sprintf("ioctl(ptmx, %#x)", req))
	},
	"socket-raw-highbits": func([]string) result {
		hi := uintptr(0xdead0000) << 32
		fd, _, e := unix.RawSyscall(unix.SYS_SOCKET, hi|unix.AF_INET, hi|unix.SOCK_RAW, unix.IPPROTO_ICMP)
		if e == 0 {
			unix.Close(int(fd))
		}
		return errResult(errnoOf(e), "socket(AF_INET, SOCK_RAW) with high bits set")
	},
	"clone-newuser-highbits": func([]string) result {
		return rawClone(uintptr(0xdead0000)<<32 | unix.CLONE_NEWUSER)
	},
	"pidfd-kill": func(args []string) result {
		pid := pidArg(args, 1)
		pfd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			return errResult(err, "pidfd_open "+strconv.Itoa(pid))
		}
		defer unix.Close(pfd)
		return errResult(unix.PidfdSendSignal(pfd, unix.SIGKILL, nil, 0), "pidfd_send_signal SIGKILL to "+strconv.Itoa(pid))
	},
	"tioclinux": func([]string) result {
		m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY, 0)
		if err != nil {
			return errResult(err, "open /dev/ptmx")
		}
		defer unix.Close(m)
		b := []byte{12} // TIOCL_GETSHIFTSTATE-ish subcode; any value
		_, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(m), unix.TIOCLINUX, uintptr(unsafe.Pointer(&b[0])))
		return errResult(errnoOf(e), "TIOCLINUX on ptmx")
	},
	"sid": func([]string) result {
		sid, _ := unix.Getsid(0)
		pgid, _ := unix.Getpgid(0)
		stat, _ := os.ReadFile("/proc/self/stat")
		tty := "?"
		// fields after the ")" : state ppid pgrp session tty_nr
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 {
			f := strings.Fields(string(stat[i+1:]))
			if len(f) > 4 {
				tty = f[4]
			}
		}
		return result{OK: true, N: int64(sid), Detail: fmt.Sprintf("pid=%d sid=%d pgid=%d tty_nr=%s", os.Getpid(), sid, pgid, tty)}
	},

	// --- devices and kernel files -------------------------------------------
	"mknod-char": func(args []string) result {
		p := arg(args, 0, "/tmp/probe-null")
		return errResult(unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))), "char 1:3 at "+p)
	},
	"mknod-block": func(args []string) result {
		p := arg(args, 0, "/tmp/probe-vda")
		return errResult(unix.Mknod(p, unix.S_IFBLK|0o666, int(unix.Mkdev(253, 0))), "block 253:0 at "+p)
	},
	"mknod-fifo": func(args []string) result {
		p := arg(args, 0, "/tmp/probe-fifo")
		return errResult(unix.Mknod(p, unix.S_IFIFO|0o666, 0), "fifo at "+p)
	},
	"open": func(args []string) result {
		p := arg(args, 0, "/dev/mem")
		fd, err := unix.Open(p, unix.O_RDWR|unix.O_CLOEXEC, 0)
		mode := "rw"
		if err != nil && !errors.Is(err, unix.ENOENT) {
			fd, err = unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			mode = "ro"
		}
		if err != nil {
			return errResult(err, p)
		}
		defer unix.Close(fd)
		return result{OK: true, Detail: p + " opened " + mode + " " + describeFd(fd)}
	},
	"read": func(args []string) result {
		p := arg(args, 0, "/etc/shadow")
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return errResult(err, "open "+p)
		}
		defer unix.Close(fd)
		buf := make([]byte, 1<<16)
		n, err := unix.Read(fd, buf)
		if err != nil {
			return errResult(err, "read "+p)
		}
		r := result{OK: true, N: int64(n), Detail: string(buf[:n])}
		return r
	},
	"readdir": func(args []string) result {
		p := arg(args, 0, "/proc/1/root")
		names, err := readDirRaw(p)
		if err != nil {
			return errResult(err, "open "+p)
		}
		return result{OK: true, N: int64(len(names)), Detail: strings.Join(names, "\n")}
	},
	"write": func(args []string) result {
		p := arg(args, 0, "/proc/sys/kernel/hostname")
		data := arg(args, 1, "pwned")
		fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return errResult(err, "open "+p)
		}
		defer unix.Close(fd)
		desc := describeFd(fd)
		_, err = unix.Write(fd, []byte(data))
		return errResult(err, "write "+p+" "+desc)
	},
	"create": func(args []string) result {
		p := arg(args, 0, "/etc/pwned")
		fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return errResult(err, "create "+p)
		}
		unix.Close(fd)
		return result{OK: true, Detail: "created " + p}
	},
	"open-write": func(args []string) result {
		// Open for writing only: nothing is ever written, so even success
		// leaves the file intact (the success is the finding).
		p := arg(args, 0, "/proc/1/exe")
		fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return errResult(err, "open "+p+" for writing")
		}
		desc := describeFd(fd)
		unix.Close(fd)
		return result{OK: true, Detail: p + " opened for writing " + desc}
	},
	"chmod": func(args []string) result {
		p := arg(args, 0, "/etc/passwd")
		return errResult(unix.Chmod(p, 0o777), "chmod 0777 "+p)
	},
	"chown": func(args []string) result {
		p := arg(args, 0, "/etc/passwd")
		return errResult(unix.Lchown(p, 1000, 1000), "chown 1000:1000 "+p)
	},
	"link": func(args []string) result {
		src, dst := arg(args, 0, "/etc/passwd"), arg(args, 1, "/workspace/passwd-link")
		return errResult(unix.Link(src, dst), "link "+src+" "+dst)
	},
	"fds": func([]string) result {
		dir, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return errResult(err, "open /proc/self/fd")
		}
		defer unix.Close(dir)
		names, err := getdents(dir)
		if err != nil {
			return errResult(err, "getdents /proc/self/fd")
		}
		var lines []string
		for _, n := range names {
			buf := make([]byte, 4096)
			k, err := unix.Readlinkat(dir, n, buf)
			t := string(buf[:max(k, 0)])
			if err != nil {
				t = "!" + err.Error()
			}
			if n == strconv.Itoa(dir) {
				t = "(the directory being listed) " + t
			}
			lines = append(lines, n+" -> "+t)
		}
		return result{OK: true, N: int64(len(names)), Detail: strings.Join(lines, "\n")}
	},
	"fd-write": func(args []string) result {
		// Write to a descriptor the command should not have (an fd
		// leaked from the host).
		fd := pidArg(args, -1)
		data := arg(args, 1, "airlock-probe")
		n, err := unix.Write(fd, []byte(data))
		r := errResult(err, "write fd "+strconv.Itoa(fd))
		r.N = int64(max(n, 0))
		return r
	},
	"fd-read": func(args []string) result {
		fd := pidArg(args, -1)
		buf := make([]byte, 4096)
		n, err := unix.Pread(fd, buf, 0)
		if err != nil {
			n, err = unix.Read(fd, buf)
		}
		if err != nil {
			return errResult(err, "read fd "+strconv.Itoa(fd))
		}
		return result{OK: true, N: int64(n), Detail: string(buf[:n])}
	},
	"fd-openat": func(args []string) result {
		// Open a name relative to a (leaked) directory descriptor.
		fd := pidArg(args, -1)
		name := arg(args, 1, "")
		f, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return errResult(err, "openat fd "+strconv.Itoa(fd)+" "+name)
		}
		defer unix.Close(f)
		buf := make([]byte, 4096)
		n, _ := unix.Read(f, buf)
		return result{OK: true, N: int64(max(n, 0)), Detail: string(buf[:max(n, 0)])}
	},
	"environ-scan": func(args []string) result {
		// the needle comes hex-encoded, so that this process's own
		// command line does not contain it
		nb, err := hex.DecodeString(arg(args, 0, ""))
		needle := string(nb)
		if err != nil || needle == "" {
			return result{Errno: "other", Detail: "no needle"}
		}
		pids, _ := readDirRaw("/proc")
		readable, found := 0, []string{}
		for _, p := range append(pids, "self", "thread-self") {
			if _, err := strconv.Atoi(p); err != nil && p != "self" && p != "thread-self" {
				continue
			}
			for _, f := range []string{"environ", "cmdline"} {
				b, err := os.ReadFile("/proc/" + p + "/" + f)
				if err != nil {
					continue
				}
				if f == "environ" {
					readable++
				}
				if strings.Contains(string(b), needle) {
					found = append(found, "/proc/"+p+"/"+f)
				}
			}
		}
		return result{OK: len(found) > 0, N: int64(readable), Detail: strings.Join(found, " ")}
	},
	// ptmx-hold: opens a pty, prints its number, waits for a line on
	// stdin, then types ^C and ^Z into it and hangs it up: whatever has
	// the pty as its terminal gets SIGINT, SIGTSTP and SIGHUP.
	"ptmx-hold": func([]string) result {
		m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			return errResult(err, "open ptmx")
		}
		if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
			return errResult(err, "unlockpt")
		}
		n, err := unix.IoctlGetInt(m, unix.TIOCGPTN)
		if err != nil {
			return errResult(err, "ptsname")
		}
		fmt.Println(n)
		buf := make([]byte, 1)
		_, _ = os.Stdin.Read(buf)
		_, err = unix.Write(m, []byte{3, 26})
		unix.Close(m)
		return errResult(err, "typed ^C ^Z and hung up")
	},
	"pids": func([]string) result {
		ents, _ := readDirRaw("/proc")
		var pids []string
		for _, e := range ents {
			if _, err := strconv.Atoi(e); err == nil {
				pids = append(pids, e)
			}
		}
		return result{OK: true, N: int64(len(pids)), Detail: strings.Join(pids, " ")}
	},

	// --- credentials and signals -----------------------------------------------
	"setuid": func([]string) result {
		_, _, e := unix.RawSyscall(unix.SYS_SETUID, 0, 0, 0)
		return errResult(errnoOf(e), "setuid(0)")
	},
	"setresuid": func([]string) result {
		_, _, e := unix.RawSyscall(unix.SYS_SETRESUID, 0, 0, 0)
		return errResult(errnoOf(e), "setresuid(0,0,0)")
	},
	"setgid": func([]string) result {
		_, _, e := unix.RawSyscall(unix.SYS_SETGID, 0, 0, 0)
		return errResult(errnoOf(e), "setgid(0)")
	},
	"setgroups": func([]string) result {
		g := []uint32{0}
		_, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 1, uintptr(unsafe.Pointer(&g[0])), 0)
		return errResult(errnoOf(e), "setgroups([0])")
	},
	"capset": func([]string) result {
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		for i := range data {
			data[i] = unix.CapUserData{Effective: 0xffffffff, Permitted: 0xffffffff, Inheritable: 0xffffffff}
		}
		return errResult(unix.Capset(&hdr, &data[0]), "raise all capabilities")
	},
	"cap-ambient": func([]string) result {
		return errResult(unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, unix.CAP_SYS_ADMIN, 0, 0), "raise ambient CAP_SYS_ADMIN")
	},
	"ids": func([]string) result {
		var r, e, s int
		r, e, s = unix.Getresuid()
		gr, ge, gs := unix.Getresgid()
		groups, _ := unix.Getgroups()
		return result{OK: true, N: int64(e), Detail: fmt.Sprintf("uid=%d,%d,%d gid=%d,%d,%d groups=%v", r, e, s, gr, ge, gs, groups)}
	},
	"kill": func(args []string) result {
		pid := pidArg(args, 0)
		sig := unix.SIGKILL
		if s := arg(args, 1, ""); s != "" {
			n, _ := strconv.Atoi(s)
			sig = unix.Signal(n)
		}
		return errResult(unix.Kill(pid, sig), fmt.Sprintf("kill(%d, %d)", pid, sig))
	},
	"nofile": func([]string) result {
		var lim unix.Rlimit
		_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &lim)
		n := 0
		var last error
		for n < 1<<20 {
			_, err := unix.Open("/dev/null", unix.O_RDONLY, 0)
			if err != nil {
				last = err
				break
			}
			n++
		}
		r := errResult(last, fmt.Sprintf("rlimit cur=%d max=%d", lim.Cur, lim.Max))
		r.OK = last == nil
		r.N = int64(n)
		return r
	},
	"rlimit-raise": func([]string) result {
		var lim unix.Rlimit
		_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &lim)
		want := unix.Rlimit{Cur: lim.Max + 1, Max: lim.Max + 1}
		_, _, e := unix.RawSyscall(unix.SYS_SETRLIMIT, unix.RLIMIT_NOFILE, uintptr(unsafe.Pointer(&want)), 0)
		return errResult(errnoOf(e), fmt.Sprintf("raise nofile hard limit %d -> %d", lim.Max, want.Max))
	},

	// --- network -----------------------------------------------------------------
	"socket-raw": func([]string) result {
		return socketCase(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP, "AF_INET SOCK_RAW ICMP")
	},
	"socket-raw6": func([]string) result {
		return socketCase(unix.AF_INET6, unix.SOCK_RAW, unix.IPPROTO_ICMPV6, "AF_INET6 SOCK_RAW ICMPv6")
	},
	"socket-raw-tcp": func([]string) result {
		return socketCase(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP, "AF_INET SOCK_RAW|SOCK_CLOEXEC TCP")
	},
	"socket-packet": func([]string) result {
		return socketCase(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ALL)), "AF_PACKET SOCK_RAW")
	},
	"socket-inet-packet": func([]string) result {
		return socketCase(unix.AF_INET, unix.SOCK_PACKET, int(htons(unix.ETH_P_ALL)), "AF_INET SOCK_PACKET")
	},
	"socket-vsock": func([]string) result {
		return socketCase(unix.AF_VSOCK, unix.SOCK_STREAM, 0, "AF_VSOCK")
	},
	"socket-alg": func([]string) result {
		return socketCase(unix.AF_ALG, unix.SOCK_SEQPACKET, 0, "AF_ALG")
	},
	"udp-send": func(args []string) result {
		sa, err := sockaddr(arg(args, 0, ""))
		if err != nil {
			return result{Errno: "other", Detail: err.Error()}
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return errResult(err, "socket udp")
		}
		defer unix.Close(fd)
		return errResult(unix.Sendto(fd, []byte("airlock-probe"), 0, sa), "sendto "+arg(args, 0, ""))
	},
	// dns-flood NAME N: N A queries for NAME to the sandbox's own DNS
	// filter (127.0.0.1:53), one after another as fast as answers come
	// (the audit-flood attack); N is what was sent, Detail the answers
	// by rcode and the ones that never came.
	"dns-flood": func(args []string) result {
		n, _ := strconv.Atoi(arg(args, 1, "1000"))
		return dnsFlood(arg(args, 0, "flood.example.test"), n)
	},
	"ping": func(args []string) result {
		sa, err := sockaddr(arg(args, 0, "") + ":0")
		if err != nil {
			return result{Errno: "other", Detail: err.Error()}
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
		if err != nil {
			return errResult(err, "socket ICMP datagram (ping)")
		}
		defer unix.Close(fd)
		echo := []byte{8, 0, 0, 0, 0, 1, 0, 1} // type 8 echo request
		return errResult(unix.Sendto(fd, echo, 0, sa), "ping "+arg(args, 0, ""))
	},
	// proxy-flood N HOLD CAP opens N idle connections to the sandbox's
	// proxy as fast as it can and watches them for HOLD (or until at
	// most CAP are still open): how many the proxy refused (an HTTP 503),
	// closed, or still holds. ok: every one was opened.
	"proxy-flood": func(args []string) result {
		n, _ := strconv.Atoi(arg(args, 0, "2000"))
		hold, _ := time.ParseDuration(arg(args, 1, "10s"))
		limit, _ := strconv.Atoi(arg(args, 2, "0"))
		sa := &unix.SockaddrInet4{Port: 3128, Addr: [4]byte{127, 0, 0, 1}}
		var fds []int
		var failed int
		var firstErr error
		for i := 0; i < n; i++ {
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
			if err == nil {
				if err = unix.Connect(fd, sa); err == unix.EINPROGRESS {
					err = nil
				}
				if err != nil {
					unix.Close(fd)
				}
			}
			if err != nil {
				failed++
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			fds = append(fds, fd)
		}
		done := make([]bool, len(fds))
		var refused, closed int
		reason := ""
		buf := make([]byte, 512)
		for end := time.Now().Add(hold); ; time.Sleep(100 * time.Millisecond) {
			for i, fd := range fds {
				if done[i] {
					continue
				}
				m, err := unix.Read(fd, buf)
				switch {
				case m > 0 && strings.HasPrefix(string(buf[:m]), "HTTP/1.1 503"):
					refused++
					if reason == "" {
						reason = string(buf[:m])
					}
				case m == 0 && err == nil, err == unix.ECONNRESET, err == unix.EPIPE:
					closed++
				default:
					continue // open (EAGAIN), or still connecting
				}
				done[i] = true
			}
			open := len(fds) - refused - closed
			if time.Now().After(end) || (limit > 0 && open <= limit && refused+closed > 0) {
				break
			}
		}
		open := len(fds) - refused - closed
		if i := strings.Index(reason, "airlock:"); i >= 0 {
			reason = reason[i:]
		}
		r := result{OK: failed == 0, N: int64(open), Detail: fmt.Sprintf("opened=%d failed=%d refused=%d closed=%d open=%d reason=%q", len(fds), failed, refused, closed, open, strings.TrimSpace(reason))}
		if en, ok := firstErr.(unix.Errno); ok {
			r.Errno = unix.ErrnoName(en)
		}
		return r
	},
	// proxy-hold N HOLD opens N idle proxy connections, 50 at a time,
	// and holds them for HOLD. ok: every one was opened.
	"proxy-hold": func(args []string) result {
		n, _ := strconv.Atoi(arg(args, 0, "2000"))
		hold, _ := time.ParseDuration(arg(args, 1, "60s"))
		sa := &unix.SockaddrInet4{Port: 3128, Addr: [4]byte{127, 0, 0, 1}}
		opened := 0
		for i := 0; i < n; i++ {
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return errResult(err, fmt.Sprintf("socket after %d", opened))
			}
			if err := unix.Connect(fd, sa); err != nil {
				return errResult(err, fmt.Sprintf("connect after %d", opened))
			}
			if opened++; opened%50 == 0 {
				time.Sleep(20 * time.Millisecond)
			}
		}
		time.Sleep(hold)
		return result{OK: true, N: int64(opened)}
	},
	// proxy-rate DURATION makes proxy requests one after another for
	// DURATION, each on a new connection read to its end: N is how many
	// were answered per second.
	"proxy-rate": func(args []string) result {
		d, _ := time.ParseDuration(arg(args, 0, "5s"))
		sa := &unix.SockaddrInet4{Port: 3128, Addr: [4]byte{127, 0, 0, 1}}
		req := []byte("GET http://rate.example.test/ HTTP/1.1\r\nHost: rate.example.test\r\n\r\n")
		buf := make([]byte, 4096)
		count := 0
		start := time.Now()
		for time.Since(start) < d {
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return errResult(err, "socket")
			}
			if err := unix.Connect(fd, sa); err != nil {
				unix.Close(fd)
				return errResult(err, "connect")
			}
			if _, err := unix.Write(fd, req); err != nil {
				unix.Close(fd)
				return errResult(err, "write")
			}
			got := ""
			for {
				m, err := unix.Read(fd, buf)
				if m <= 0 || err != nil {
					break
				}
				got += string(buf[:m])
			}
			unix.Close(fd)
			if !strings.HasPrefix(got, "HTTP/1.1 200") {
				return result{Detail: fmt.Sprintf("after %d: answer %q", count, got)}
			}
			count++
		}
		el := time.Since(start)
		return result{OK: true, N: int64(float64(count) / el.Seconds()), Detail: fmt.Sprintf("%d in %s", count, el.Round(time.Millisecond))}
	},
	"tcp-connect": func(args []string) result {
		addr := arg(args, 0, "")
		sa, err := sockaddr(addr)
		if err != nil {
			return result{Errno: "other", Detail: err.Error()}
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return errResult(err, "socket tcp")
		}
		defer unix.Close(fd)
		tv := unix.Timeval{Sec: 2}
		_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
		_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		if err := unix.Connect(fd, sa); err != nil {
			return errResult(err, "connect "+addr)
		}
		buf := make([]byte, 256)
		n, _ := unix.Read(fd, buf)
		return result{OK: true, Detail: "connected to " + addr + "; read: " + string(buf[:max(n, 0)])}
	},
	"unix-connect": func(args []string) result {
		p := arg(args, 0, "")
		var sa unix.SockaddrUnix
		sa.Name = p // a leading '@' is an abstract address
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return errResult(err, "socket unix")
		}
		defer unix.Close(fd)
		if err := unix.Connect(fd, &sa); err != nil {
			return errResult(err, "connect "+p)
		}
		tv := unix.Timeval{Sec: 2}
		_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		buf := make([]byte, 256)
		n, _ := unix.Read(fd, buf)
		return result{OK: true, Detail: "connected to " + p + "; read: " + string(buf[:max(n, 0)])}
	},

	// --- resources -------------------------------------------------------------------
	"alloc": func(args []string) result {
		mib, _ := strconv.Atoi(arg(args, 0, "400"))
		prefix := ""
		if arg(args, 1, "") == "protect" {
			// make this process exempt from the OOM killer first, if the
			// kernel lets us (it must not)
			fd, err := unix.Open("/proc/self/oom_score_adj", unix.O_WRONLY|unix.O_CLOEXEC, 0)
			if err == nil {
				_, err = unix.Write(fd, []byte("-1000"))
				unix.Close(fd)
			}
			if err == nil {
				prefix = "oom_score_adj set to -1000; "
			} else {
				prefix = "oom_score_adj -1000 refused (" + err.Error() + "); "
			}
			fmt.Println(prefix) // in case the allocation below never returns
		}
		var chunks [][]byte
		total := 0
		for total < mib {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			chunks = append(chunks, b)
			total++
		}
		r := result{OK: true, N: int64(total), Detail: prefix + fmt.Sprintf("allocated and touched %d MiB", total)}
		goruntime.KeepAlive(chunks)
		return r
	},
	"spin": func(args []string) result {
		secs, _ := strconv.ParseFloat(arg(args, 0, "2"), 64)
		threads, _ := strconv.Atoi(arg(args, 1, "2"))
		deadline := time.Now().Add(time.Duration(secs * float64(time.Second)))
		var wg sync.WaitGroup
		var iters atomic.Int64
		for i := 0; i < threads; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				goruntime.LockOSThread()
				n := int64(0)
				for time.Now().Before(deadline) {
					for j := 0; j < 1000; j++ {
						n++
					}
				}
				iters.Add(n)
			}()
		}
		wg.Wait()
		var ru unix.Rusage
		_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		return result{OK: true, N: cpu.Microseconds(), Detail: fmt.Sprintf("spun %d threads for %.1fs: cpu %s", threads, secs, cpu)}
	},
}

// rawClone forks with clone(2) and the given namespace flags. A child, if
// one is created, exits at once.
func rawClone(flags uintptr) result {
	pid, _, e := unix.RawSyscall6(unix.SYS_CLONE, flags|uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
	if e == 0 && pid == 0 {
		unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
	}
	if e == 0 {
		var ws unix.WaitStatus
		_, _ = unix.Wait4(int(pid), &ws, 0, nil)
	}
	return errResult(errnoOf(e), fmt.Sprintf("clone(%#x)", flags))
}

func tiocsti(fd int, what string) result {
	c := byte('x')
	_, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	return errResult(errnoOf(e), "TIOCSTI on "+what)
}

func socketCase(domain, typ, proto int, what string) result {
	fd, err := unix.Socket(domain, typ, proto)
	if err == nil {
		unix.Close(fd)
	}
	return errResult(err, what)
}

func atFdcwd() uintptr {
	fd := unix.AT_FDCWD
	return uintptr(fd)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func sockaddr(s string) (*unix.SockaddrInet4, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil || !ap.Addr().Is4() {
		return nil, fmt.Errorf("bad IPv4 address:port %q", s)
	}
	return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}, nil
}

func pidArg(args []string, def int) int {
	if len(args) > 0 {
		if n, err := strconv.Atoi(args[0]); err == nil {
			return n
		}
	}
	return def
}

// describeFd says what an open descriptor is (type and device numbers).
func describeFd(fd int) string {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "fstat: " + err.Error()
	}
	kind := "other"
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		kind = "file"
	case unix.S_IFCHR:
		kind = "char"
	case unix.S_IFBLK:
		kind = "block"
	case unix.S_IFDIR:
		kind = "dir"
	}
	return fmt.Sprintf("type=%s rdev=%d:%d", kind, unix.Major(st.Rdev), unix.Minor(st.Rdev))
}

func readDirRaw(p string) ([]string, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return getdents(fd)
}

func getdents(fd int) ([]string, error) {
	var names []string
	buf := make([]byte, 1<<16)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return names, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

func dnsQuery(id uint16, name string) []byte {
	q := []byte{byte(id >> 8), byte(id), 1, 0, 0, 1, 0, 0, 0, 0, 0, 0} // RD, one question
	for _, l := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		q = append(q, byte(len(l)))
		q = append(q, l...)
	}
	return append(q, 0, 0, 1, 0, 1) // root, type A, class IN
}

func dnsFlood(name string, n int) result {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return errResult(err, "socket udp")
	}
	defer unix.Close(fd)
	// Long enough for the first answer, which waits until the daemon has
	// noted the command it came from.
	tv := unix.Timeval{Sec: 10}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	if err := unix.Connect(fd, &unix.SockaddrInet4{Port: 53, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return errResult(err, "connect 127.0.0.1:53")
	}
	rcodes := map[string]int{}
	buf := make([]byte, 1500)
	start := time.Now()
	for i := range n {
		id := uint16(i)
		if _, err := unix.Write(fd, dnsQuery(id, name)); err != nil {
			return errResult(err, fmt.Sprintf("send query %d", i))
		}
		for {
			k, err := unix.Read(fd, buf)
			if err == unix.EINTR {
				continue // a read with a timeout is not restarted after the runtime's signals
			}
			if err != nil {
				rcodes["none"]++
				break
			}
			if k >= 12 && uint16(buf[0])<<8|uint16(buf[1]) == id {
				rcodes[strconv.Itoa(int(buf[3]&0xf))]++
				break
			}
		}
	}
	b, _ := json.Marshal(map[string]any{"rcodes": rcodes, "seconds": time.Since(start).Seconds()})
	return result{OK: true, N: int64(n), Detail: string(b)}
}
