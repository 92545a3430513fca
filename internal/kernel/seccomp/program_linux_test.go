//go:build linux && amd64

package seccomp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompData mirrors struct seccomp_data.
type seccompData struct {
	Nr   uint32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

// native returns the 64-byte blob the kernel hands to the filter on a
// little-endian machine.
func (d seccompData) native() []byte {
	b := make([]byte, seccompDataSize)
	binary.LittleEndian.PutUint32(b[0:], d.Nr)
	binary.LittleEndian.PutUint32(b[4:], d.Arch)
	binary.LittleEndian.PutUint64(b[8:], d.IP)
	for i, a := range d.Args {
		binary.LittleEndian.PutUint64(b[seccompDataArgsOffset+8*i:], a)
	}
	return b
}

// forVM returns a blob for golang.org/x/net/bpf's VM, which reads 32-bit
// words big-endian: every word is stored so that it reads back as the
// value the kernel's native-endian load would produce.
func (d seccompData) forVM() []byte {
	b := make([]byte, seccompDataSize)
	put64 := func(off int, v uint64) {
		binary.BigEndian.PutUint32(b[off:], uint32(v))       // low word first (little-endian slot)
		binary.BigEndian.PutUint32(b[off+4:], uint32(v>>32)) // then high word
	}
	binary.BigEndian.PutUint32(b[0:], d.Nr)
	binary.BigEndian.PutUint32(b[4:], d.Arch)
	put64(8, d.IP)
	for i, a := range d.Args {
		put64(seccompDataArgsOffset+8*i, a)
	}
	return b
}

// interpret runs a classic-BPF seccomp program the way the kernel does, for
// the subset of instructions this package emits. Anything else is an error,
// so the test also pins the instruction set.
func interpret(prog []unix.SockFilter, data []byte) (uint32, error) {
	var a uint32
	pc := 0
	for {
		if pc < 0 || pc >= len(prog) {
			return 0, fmt.Errorf("pc %d outside program of %d", pc, len(prog))
		}
		in := prog[pc]
		pc++
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			if in.K%4 != 0 || int(in.K)+4 > len(data) {
				return 0, fmt.Errorf("bad load offset %d at %d", in.K, pc-1)
			}
			a = binary.LittleEndian.Uint32(data[in.K:])
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			a &= in.K
		case unix.BPF_JMP | unix.BPF_JA:
			pc += int(in.K)
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			pc += int(pick(a == in.K, in.Jt, in.Jf))
		case unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K:
			pc += int(pick(a > in.K, in.Jt, in.Jf))
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			pc += int(pick(a >= in.K, in.Jt, in.Jf))
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			pc += int(pick(a&in.K != 0, in.Jt, in.Jf))
		case unix.BPF_RET | unix.BPF_K:
			return in.K, nil
		default:
			return 0, fmt.Errorf("unexpected opcode %#x at %d", in.Code, pc-1)
		}
	}
}

func pick(c bool, t, f uint8) uint8 {
	if c {
		return t
	}
	return f
}

func mustProgram(tb testing.TB) []unix.SockFilter {
	tb.Helper()
	p, err := Program()
	if err != nil {
		tb.Fatalf("Program: %v", err)
	}
	return p
}

var (
	allowRet = uint32(unix.SECCOMP_RET_ALLOW)
	killRet  = uint32(unix.SECCOMP_RET_KILL_PROCESS)
	epermRet = uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	enosys   = uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	eafnosup = uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT))
)

func retName(r uint32) string {
	switch r & unix.SECCOMP_RET_ACTION_FULL {
	case unix.SECCOMP_RET_ALLOW:
		return "ALLOW"
	case unix.SECCOMP_RET_KILL_PROCESS:
		return "KILL_PROCESS"
	case unix.SECCOMP_RET_ERRNO:
		return "ERRNO(" + unix.ErrnoName(unix.Errno(r&unix.SECCOMP_RET_DATA)) + ")"
	}
	return fmt.Sprintf("%#x", r)
}

func nr(tb testing.TB, name string) uint32 {
	tb.Helper()
	n, ok := native.sysnums[name]
	if !ok {
		tb.Fatalf("no syscall %q", name)
	}
	return n
}

// sysnames is the reverse of native.sysnums.
var sysnames = func() map[uint32]string {
	m := make(map[uint32]string, len(native.sysnums))
	for n, v := range native.sysnums {
		m[v] = n
	}
	return m
}()

// model is an independent, straightforward statement of the policy; the
// BPF program must agree with it everywhere.
func model(d seccompData) uint32 {
	if d.Arch != unix.AUDIT_ARCH_X86_64 {
		return killRet
	}
	if d.Nr&0x40000000 != 0 {
		return epermRet
	}
	name := sysnames[d.Nr]
	switch name {
	case "clone":
		ns := uint32(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
			unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME)
		if uint32(d.Args[0])&ns != 0 {
			return epermRet
		}
		return allowRet
	case "clone3":
		return enosys
	case "ioctl":
		if req := uint32(d.Args[1]); req == unix.TIOCSTI || req == unix.TIOCLINUX {
			return epermRet
		}
		return allowRet
	case "socket":
		switch dom := uint32(d.Args[0]); dom {
		case unix.AF_UNIX, unix.AF_NETLINK:
			return allowRet
		case unix.AF_INET, unix.AF_INET6:
			if t := uint32(d.Args[1]) & 0xf; t == unix.SOCK_RAW || t == unix.SOCK_PACKET {
				return epermRet
			}
			return allowRet
		case unix.AF_PACKET:
			return epermRet
		default:
			return eafnosup
		}
	case "mknod", "mknodat":
		mode := uint32(d.Args[1])
		if name == "mknodat" {
			mode = uint32(d.Args[2])
		}
		if f := mode & unix.S_IFMT; f == unix.S_IFCHR || f == unix.S_IFBLK {
			return epermRet
		}
		return allowRet
	case "personality":
		switch uint32(d.Args[0]) {
		case 0, 0x8, 0x20000, 0x20008, 0xffffffff:
			return allowRet
		}
		return epermRet
	}
	if slices.Contains(deniedSyscalls, name) {
		return epermRet
	}
	if slices.Contains(allowedSyscalls, name) {
		return allowRet
	}
	return enosys
}

// decide evaluates the installed form with the test interpreter and the
// x/net/bpf form with its VM, and insists they agree.
func decide(tb testing.TB, prog []unix.SockFilter, vm *bpf.VM, d seccompData) uint32 {
	tb.Helper()
	got, err := interpret(prog, d.native())
	if err != nil {
		tb.Fatalf("interpret %+v: %v", d, err)
	}
	vmGot, err := vm.Run(d.forVM())
	if err != nil {
		tb.Fatalf("vm %+v: %v", d, err)
	}
	if uint32(vmGot) != got {
		tb.Fatalf("interpreter says %s, x/net/bpf VM says %s for %+v", retName(got), retName(uint32(vmGot)), d)
	}
	return got
}

func newVM(tb testing.TB) *bpf.VM {
	tb.Helper()
	insns, err := native.instructions()
	if err != nil {
		tb.Fatal(err)
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		tb.Fatal(err)
	}
	return vm
}

func TestProgramDecisions(t *testing.T) {
	prog := mustProgram(t)
	vm := newVM(t)
	x86 := uint32(unix.AUDIT_ARCH_X86_64)
	call := func(name string, args ...uint64) seccompData {
		d := seccompData{Nr: nr(t, name), Arch: x86, IP: 0x401000}
		copy(d.Args[:], args)
		return d
	}
	high := uint64(1) << 32
	const sigchld = uint64(unix.SIGCHLD)
	goThread := uint64(unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND |
		unix.CLONE_SYSVSEM | unix.CLONE_THREAD)
	glibcThread := goThread | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID
	goFork := uint64(unix.CLONE_VFORK|unix.CLONE_VM|unix.CLONE_PIDFD) | sigchld
	glibcFork := uint64(unix.CLONE_CHILD_SETTID|unix.CLONE_CHILD_CLEARTID) | sigchld
	spawn := uint64(unix.CLONE_VM|unix.CLONE_VFORK) | sigchld

	tests := []struct {
		name string
		d    seccompData
		want uint32
	}{
		{"read", call("read", 0, 0, 0), allowRet},
		{"execve", call("execve"), allowRet},
		{"exit_group", call("exit_group"), allowRet},
		{"getpid", call("getpid"), allowRet},
		{"openat", call("openat"), allowRet},
		{"seccomp", call("seccomp"), allowRet},
		{"landlock_restrict_self", call("landlock_restrict_self"), allowRet},
		{"wait4", call("wait4"), allowRet},
		{"setresuid", call("setresuid"), allowRet},

		// Architecture and ABI checks.
		{"i386 getpid via int 0x80", seccompData{Nr: 20, Arch: unix.AUDIT_ARCH_I386}, killRet},
		{"i386 nr 0", seccompData{Nr: 0, Arch: unix.AUDIT_ARCH_I386}, killRet},
		{"aarch64", seccompData{Nr: 63, Arch: unix.AUDIT_ARCH_AARCH64}, killRet},
		{"arch 0", seccompData{Nr: 0, Arch: 0}, killRet},
		{"x32 read", seccompData{Nr: 0x40000000, Arch: x86}, epermRet},
		{"x32 getpid", seccompData{Nr: 0x40000000 | 39, Arch: x86}, epermRet},
		{"x32 execve", seccompData{Nr: 0x40000000 | 520, Arch: x86}, epermRet},
		{"nr -1", seccompData{Nr: 0xffffffff, Arch: x86}, epermRet},
		{"nr 0x80000000", seccompData{Nr: 0x80000000, Arch: x86}, enosys},

		// Unknown and forced-ENOSYS syscalls.
		{"unknown 1000", seccompData{Nr: 1000, Arch: x86}, enosys},
		{"unknown 0x3fffffff", seccompData{Nr: 0x3fffffff, Arch: x86}, enosys},
		{"listns (not allowlisted)", call("listns"), enosys},
		{"lsm_get_self_attr (not allowlisted)", call("lsm_get_self_attr"), enosys},
		{"tuxcall", call("tuxcall"), enosys},
		{"clone3", call("clone3", 0, 88), enosys},
		{"io_setup", call("io_setup", 4096, 0), enosys},
		{"io_submit", call("io_submit", 0, 1, 0), enosys},

		// Explicit denials.
		{"ptrace", call("ptrace"), epermRet},
		{"unshare newuser", call("unshare", unix.CLONE_NEWUSER), epermRet},
		{"unshare 0", call("unshare", 0), epermRet},
		{"setns", call("setns"), epermRet},
		{"mount", call("mount"), epermRet},
		{"bpf", call("bpf"), epermRet},
		{"io_uring_setup", call("io_uring_setup"), epermRet},
		{"keyctl", call("keyctl"), epermRet},
		{"kexec_file_load", call("kexec_file_load"), epermRet},
		{"_sysctl", call("_sysctl"), epermRet},

		// clone flags.
		{"clone go thread", call("clone", goThread), allowRet},
		{"clone glibc thread", call("clone", glibcThread), allowRet},
		{"clone go fork", call("clone", goFork), allowRet},
		{"clone go pidfd check", call("clone", unix.CLONE_VFORK|unix.CLONE_VM|unix.CLONE_PIDFD), allowRet},
		{"clone glibc fork", call("clone", glibcFork), allowRet},
		{"clone posix_spawn", call("clone", spawn), allowRet},
		{"clone plain fork", call("clone", sigchld), allowRet},
		{"clone newuser", call("clone", unix.CLONE_NEWUSER|sigchld), epermRet},
		{"clone newns", call("clone", unix.CLONE_NEWNS|sigchld), epermRet},
		{"clone newpid", call("clone", unix.CLONE_NEWPID|sigchld), epermRet},
		{"clone newnet", call("clone", unix.CLONE_NEWNET|sigchld), epermRet},
		{"clone newipc", call("clone", unix.CLONE_NEWIPC|sigchld), epermRet},
		{"clone newuts", call("clone", unix.CLONE_NEWUTS|sigchld), epermRet},
		{"clone newcgroup", call("clone", unix.CLONE_NEWCGROUP|sigchld), epermRet},
		{"clone newtime bit", call("clone", unix.CLONE_NEWTIME), epermRet},
		{"clone all ns", call("clone", 0x7e020080), epermRet},
		{"clone vfork+newuser", call("clone", goFork|unix.CLONE_NEWUSER), epermRet},
		{"clone newuser with high garbage", call("clone", high|unix.CLONE_NEWUSER|sigchld), epermRet},
		// The kernel truncates legacy clone flags to 32 bits, so high bits
		// that look like namespace flags are harmless.
		{"clone ns bits only in high word", call("clone", uint64(unix.CLONE_NEWUSER)<<32|sigchld), allowRet},

		// ioctl requests.
		{"ioctl TIOCSTI", call("ioctl", 0, unix.TIOCSTI), epermRet},
		{"ioctl TIOCSTI high garbage", call("ioctl", 0, high|unix.TIOCSTI), epermRet},
		{"ioctl TIOCSTI all high bits", call("ioctl", 0, 0xffffffff00000000|unix.TIOCSTI), epermRet},
		{"ioctl TIOCLINUX", call("ioctl", 0, unix.TIOCLINUX), epermRet},
		{"ioctl TIOCLINUX high garbage", call("ioctl", 0, 7<<40|unix.TIOCLINUX), epermRet},
		{"ioctl TCGETS", call("ioctl", 0, unix.TCGETS), allowRet},
		{"ioctl TIOCGWINSZ", call("ioctl", 1, unix.TIOCGWINSZ), allowRet},
		{"ioctl FIONREAD", call("ioctl", 3, 0x541B), allowRet},
		{"ioctl TIOCSPGRP (Go fork child)", call("ioctl", 0, unix.TIOCSPGRP), allowRet},
		{"ioctl TIOCSCTTY", call("ioctl", 0, unix.TIOCSCTTY), allowRet},
		{"ioctl TIOCSTI in fd arg only", call("ioctl", unix.TIOCSTI, unix.TCGETS), allowRet},
		{"ioctl TIOCSTI in arg only", call("ioctl", 0, unix.TCGETS, unix.TIOCSTI), allowRet},

		// socket domains and types.
		{"socket inet stream", call("socket", unix.AF_INET, unix.SOCK_STREAM), allowRet},
		{"socket inet stream cloexec", call("socket", unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK), allowRet},
		{"socket inet dgram", call("socket", unix.AF_INET, unix.SOCK_DGRAM), allowRet},
		{"socket inet ping", call("socket", unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP), allowRet},
		{"socket inet6 stream", call("socket", unix.AF_INET6, unix.SOCK_STREAM), allowRet},
		{"socket inet6 seqpacket", call("socket", unix.AF_INET6, unix.SOCK_SEQPACKET, unix.IPPROTO_SCTP), allowRet},
		{"socket inet raw icmp", call("socket", unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP), epermRet},
		{"socket inet raw cloexec", call("socket", unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC), epermRet},
		{"socket inet raw high garbage", call("socket", unix.AF_INET|high, unix.SOCK_RAW|high), epermRet},
		{"socket inet6 raw", call("socket", unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_NONBLOCK, unix.IPPROTO_ICMPV6), epermRet},
		{"socket inet packet", call("socket", unix.AF_INET, unix.SOCK_PACKET), epermRet},
		{"socket packet raw", call("socket", unix.AF_PACKET, unix.SOCK_RAW, 0x300), epermRet},
		{"socket packet dgram", call("socket", unix.AF_PACKET, unix.SOCK_DGRAM), epermRet},
		{"socket packet high garbage", call("socket", high|unix.AF_PACKET, unix.SOCK_DGRAM), epermRet},
		{"socket unix stream", call("socket", unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC), allowRet},
		{"socket unix dgram", call("socket", unix.AF_UNIX, unix.SOCK_DGRAM), allowRet},
		{"socket netlink route raw", call("socket", unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE), allowRet},
		{"socket netlink dgram", call("socket", unix.AF_NETLINK, unix.SOCK_DGRAM, unix.NETLINK_ROUTE), allowRet},
		{"socket vsock", call("socket", unix.AF_VSOCK, unix.SOCK_STREAM), eafnosup},
		{"socket alg", call("socket", unix.AF_ALG, unix.SOCK_SEQPACKET), eafnosup},
		{"socket bluetooth", call("socket", unix.AF_BLUETOOTH, unix.SOCK_RAW), eafnosup},
		{"socket key", call("socket", unix.AF_KEY, unix.SOCK_RAW), eafnosup},
		{"socket xdp", call("socket", unix.AF_XDP, unix.SOCK_RAW), eafnosup},
		{"socketpair unix", call("socketpair", unix.AF_UNIX, unix.SOCK_STREAM), allowRet},

		// personality values.
		{"personality query", call("personality", 0xffffffff), allowRet},
		{"personality linux", call("personality", 0), allowRet},
		{"personality linux32", call("personality", 8), allowRet},
		{"personality uname26", call("personality", 0x20000), allowRet},
		{"personality uname26|linux32", call("personality", 0x20008), allowRet},
		{"personality query high garbage", call("personality", 0xffffffffffffffff), allowRet},
		{"personality addr_no_randomize", call("personality", 0x0040000), epermRet},
		{"personality read_implies_exec", call("personality", 0x0400000), epermRet},
		{"personality 1", call("personality", 1), epermRet},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decide(t, prog, vm, tt.d)
			if got != tt.want {
				t.Errorf("nr=%d arch=%#x args=%#x: got %s, want %s", tt.d.Nr, tt.d.Arch, tt.d.Args, retName(got), retName(tt.want))
			}
			if m := model(tt.d); m != tt.want {
				t.Errorf("reference model disagrees with the table: %s", retName(m))
			}
		})
	}
}

// TestProgramMatchesModel checks every syscall number of the table and its
// surroundings, plus random arguments for the argument-filtered calls.
func TestProgramMatchesModel(t *testing.T) {
	prog := mustProgram(t)
	vm := newVM(t)
	x86 := uint32(unix.AUDIT_ARCH_X86_64)
	check := func(d seccompData) {
		t.Helper()
		if got, want := decide(t, prog, vm, d), model(d); got != want {
			t.Fatalf("nr=%d arch=%#x args=%#x: program %s, model %s", d.Nr, d.Arch, d.Args, retName(got), retName(want))
		}
	}
	for n := uint32(0); n < 1100; n++ {
		check(seccompData{Nr: n, Arch: x86})
		check(seccompData{Nr: n | 0x40000000, Arch: x86})
		check(seccompData{Nr: n, Arch: unix.AUDIT_ARCH_I386})
	}
	for _, n := range []uint32{0x3fffffff, 0x7fffffff, 0x80000000, 0xbfffffff, 0xfffffffe, 0xffffffff} {
		check(seccompData{Nr: n, Arch: x86})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	interesting := []uint64{0, 1, 3, 8, 10, 16, 17, unix.AF_PACKET, unix.TIOCSTI, unix.TIOCLINUX,
		unix.CLONE_NEWUSER, unix.CLONE_NEWTIME, unix.S_IFCHR | 0o666, unix.S_IFBLK, unix.S_IFIFO | 0o644, unix.S_IFSOCK, 0x20000, 0x20008, 0xffffffff, 1 << 32, ^uint64(0)}
	arg := func() uint64 {
		v := interesting[rng.IntN(len(interesting))]
		switch rng.IntN(4) {
		case 0:
			return rng.Uint64()
		case 1:
			return v | rng.Uint64()<<32
		case 2:
			return v | uint64(rng.IntN(1<<20))<<8&^0xff // flags-like noise above the low byte
		}
		return v
	}
	for _, name := range append(Conditional(), "clone3", "read", "ptrace") {
		for range 5000 {
			d := seccompData{Nr: nr(t, name), Arch: x86, IP: rng.Uint64()}
			for i := range d.Args {
				d.Args[i] = arg()
			}
			check(d)
		}
	}
}

func FuzzProgram(f *testing.F) {
	f.Add(uint32(56), uint32(unix.AUDIT_ARCH_X86_64), uint64(unix.CLONE_NEWUSER), uint64(0))
	f.Add(uint32(16), uint32(unix.AUDIT_ARCH_X86_64), uint64(0), uint64(unix.TIOCSTI))
	f.Add(uint32(41), uint32(unix.AUDIT_ARCH_X86_64), uint64(unix.AF_INET), uint64(unix.SOCK_RAW))
	f.Add(uint32(135), uint32(unix.AUDIT_ARCH_X86_64), uint64(0xffffffff), uint64(0))
	f.Add(uint32(1000), uint32(unix.AUDIT_ARCH_I386), uint64(0), uint64(0))
	prog := mustProgram(f)
	vm := newVM(f)
	f.Fuzz(func(t *testing.T, n, arch uint32, a0, a1 uint64) {
		d := seccompData{Nr: n, Arch: arch, Args: [6]uint64{a0, a1, a0 ^ a1}}
		if got, want := decide(t, prog, vm, d), model(d); got != want {
			t.Fatalf("%+v: program %s, model %s", d, retName(got), retName(want))
		}
	})
}

func TestEveryListedSyscallDecided(t *testing.T) {
	prog := mustProgram(t)
	vm := newVM(t)
	x86 := uint32(unix.AUDIT_ARCH_X86_64)
	for _, name := range Denied() {
		if got := decide(t, prog, vm, seccompData{Nr: nr(t, name), Arch: x86}); got != epermRet {
			t.Errorf("denied %s: got %s", name, retName(got))
		}
	}
	for _, name := range Allowed() {
		if got := decide(t, prog, vm, seccompData{Nr: nr(t, name), Arch: x86}); got != allowRet {
			t.Errorf("allowed %s: got %s", name, retName(got))
		}
	}
	// Syscalls the brief requires to be denied must stay denied.
	mustDeny := strings.Fields(`ptrace process_vm_readv process_vm_writev bpf perf_event_open keyctl
		add_key request_key userfaultfd io_uring_setup io_uring_enter io_uring_register mount umount2
		pivot_root move_mount open_tree fsopen fsconfig fsmount fspick mount_setattr open_by_handle_at
		name_to_handle_at init_module finit_module delete_module kexec_load kexec_file_load unshare setns
		swapon swapoff reboot acct quotactl lookup_dcookie syslog vhangup chroot settimeofday
		clock_settime adjtimex clock_adjtime iopl ioperm create_module get_kernel_syms query_module
		nfsservctl uselib ustat sysfs _sysctl kcmp`)
	for _, name := range mustDeny {
		if !slices.Contains(Denied(), name) {
			t.Errorf("%s missing from Denied()", name)
		}
	}
	// Syscalls Go's runtime and its fork/exec path use must stay allowed
	// (clone, ioctl and prctl-like ones are checked with arguments above).
	mustAllow := strings.Fields(`futex mmap munmap madvise mprotect rt_sigprocmask rt_sigaction
		rt_sigreturn sigaltstack nanosleep sched_yield sched_getaffinity pipe2 read write close
		wait4 waitid pidfd_open pidfd_send_signal getpid gettid tgkill kill exit exit_group setsid
		setpgid setgroups setgid setuid setresuid setresgid chdir dup2 dup3 fcntl prctl prlimit64
		getppid execve execveat openat faccessat mincore arch_prctl clock_gettime timer_create
		timer_settime timer_delete setitimer brk getrandom capget capset`)
	for _, name := range mustAllow {
		if !slices.Contains(Allowed(), name) {
			t.Errorf("%s missing from Allowed()", name)
		}
	}
}

func TestListsAreConsistent(t *testing.T) {
	seen := map[string]string{}
	for list, names := range map[string][]string{
		"allowed": allowedSyscalls, "denied": deniedSyscalls,
		"conditional": conditionalSyscalls, "enosys": enosysSyscalls,
	} {
		for _, n := range names {
			if prev, ok := seen[n]; ok {
				t.Errorf("%s is in both %s and %s", n, prev, list)
			}
			seen[n] = list
			if _, ok := native.sysnums[n]; !ok {
				t.Errorf("%s (%s) has no amd64 number", n, list)
			}
		}
	}
	if !slices.IsSorted(Denied()) || len(Denied()) != len(deniedSyscalls) {
		t.Error("Denied() must return every denied name, sorted")
	}
	d := Denied()
	d[0] = "mutated"
	if Denied()[0] == "mutated" {
		t.Error("Denied() returned shared storage")
	}
	desc := Describe()
	for _, want := range []string{"TIOCSTI", "clone3", "ENOSYS", "ptrace", "AF_PACKET"} {
		if !strings.Contains(desc, want) {
			t.Errorf("Describe() lacks %q", want)
		}
	}
}

// TestProgramStructure checks what the kernel's seccomp verifier and
// BPF_MAXINSNS demand.
func TestProgramStructure(t *testing.T) {
	prog := mustProgram(t)
	if len(prog) == 0 || len(prog) > maxInstructions {
		t.Fatalf("program length %d", len(prog))
	}
	t.Logf("program: %d instructions", len(prog))
	last := prog[len(prog)-1]
	if last.Code != unix.BPF_RET|unix.BPF_K {
		t.Errorf("last instruction %#x is not a return", last.Code)
	}
	for i, in := range prog {
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			if in.K%4 != 0 || in.K >= seccompDataSize {
				t.Errorf("%d: load at %d", i, in.K)
			}
		case unix.BPF_JMP | unix.BPF_JA:
			if i+1+int(in.K) >= len(prog) {
				t.Errorf("%d: ja %d leaves the program", i, in.K)
			}
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K,
			unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			if i+1+int(max(in.Jt, in.Jf)) >= len(prog) {
				t.Errorf("%d: jump leaves the program", i)
			}
		case unix.BPF_RET | unix.BPF_K, unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
		default:
			t.Errorf("%d: opcode %#x not expected", i, in.Code)
		}
	}
	// Program returns a fresh copy each time.
	p2 := mustProgram(t)
	p2[0].K = 0
	if p3 := mustProgram(t); p3[0].K == 0 {
		t.Error("Program returned shared storage")
	}
}

func TestTreeBridgesLongJumps(t *testing.T) {
	// Many distinct intervals force subtrees longer than 255 instructions;
	// the emitter must bridge them with ja and stay correct.
	rules := map[uint32]rule{}
	for n := uint32(0); n < 2000; n += 2 {
		rules[n] = rule{ret: allowRet}
	}
	ivs := intervals(rules)
	insns := tree(ivs)
	hasJA := false
	for _, in := range insns {
		if _, ok := in.(bpf.Jump); ok {
			hasJA = true
		}
	}
	if !hasJA {
		t.Fatal("expected the tree to need ja bridges")
	}
	// Prepend the nr load so the tree can be run on its own.
	all := append([]bpf.Instruction{bpf.LoadAbsolute{Off: 0, Size: 4}}, insns...)
	raw, err := bpf.Assemble(all)
	if err != nil {
		t.Fatal(err)
	}
	prog := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		prog[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	for n := uint32(0); n < 2100; n++ {
		want := enosys
		if n < 2000 && n%2 == 0 {
			want = allowRet
		}
		got, err := interpret(prog, seccompData{Nr: n}.native())
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("nr %d: got %s want %s", n, retName(got), retName(want))
		}
	}
}

func TestAsmRejectsLongJumps(t *testing.T) {
	b := new(asm)
	b.jumpIf(bpf.JumpEqual, 1, "far")
	for range 256 {
		b.ret(allowRet)
	}
	b.label("far")
	b.ret(epermRet)
	if _, err := b.resolve(); err == nil {
		t.Fatal("a 256-instruction conditional jump must be rejected")
	}
	b = new(asm)
	b.jumpIf(bpf.JumpEqual, 1, "nowhere")
	if _, err := b.resolve(); err == nil {
		t.Fatal("an undefined label must be rejected")
	}
}

func TestUnknownNameIsAnError(t *testing.T) {
	spec := *native
	spec.sysnums = map[string]uint32{"read": 0}
	if _, err := spec.program(); err == nil || !strings.Contains(err.Error(), "no number") {
		t.Fatalf("want a missing-number error, got %v", err)
	}
}

func TestInstallThreadRejectsBadPrograms(t *testing.T) {
	if err := InstallThread(nil); err == nil {
		t.Error("empty program accepted")
	}
	if err := InstallThread(make([]unix.SockFilter, maxInstructions+1)); err == nil {
		t.Error("oversized program accepted")
	}
}

func TestErrUnsupportedIsWrapped(t *testing.T) {
	err := fmt.Errorf("x: %w", ErrUnsupported)
	if !errors.Is(err, ErrUnsupported) {
		t.Fatal("ErrUnsupported must be usable with errors.Is")
	}
}

func BenchmarkProgram(b *testing.B) {
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			if _, err := native.program(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Program", func(b *testing.B) {
		for b.Loop() {
			if _, err := Program(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("interpret", func(b *testing.B) {
		prog := mustProgram(b)
		data := seccompData{Nr: uint32(unix.SYS_FUTEX), Arch: unix.AUDIT_ARCH_X86_64}.native()
		for b.Loop() {
			if _, err := interpret(prog, data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
