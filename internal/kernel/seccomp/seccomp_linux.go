//go:build linux

package seccomp

import (
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// SockFilter is one classic-BPF instruction as the kernel expects it.
type SockFilter = unix.SockFilter

// Layout of struct seccomp_data (include/uapi/linux/seccomp.h).
const (
	seccompDataNrOffset   = 0  // int nr
	seccompDataArchOffset = 4  // __u32 arch
	seccompDataArgsOffset = 16 // __u64 args[6], after __u64 instruction_pointer
	seccompDataSize       = 64
)

// maxInstructions is BPF_MAXINSNS, the kernel's limit on a filter's length.
const maxInstructions = 4096

// Flags of clone(2) that create namespaces. CLONE_NEWTIME (0x80) overlaps
// the exit-signal byte of legacy clone, where any value above 64 is
// rejected with EINVAL by the kernel anyway, so including it costs nothing.
const cloneNamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWTIME

// personality(2) values Docker's default profile allows: PER_LINUX,
// PER_LINUX32 (0x8), UNAME26 (0x20000), UNAME26|PER_LINUX32 and the
// 0xffffffff query.
var allowedPersonalities = []uint32{0x0, 0x8, 0x20000, 0x20008, 0xffffffff}

// Seccomp return values.
const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
)

func retErrno(e unix.Errno) uint32 {
	return unix.SECCOMP_RET_ERRNO | (uint32(e) & unix.SECCOMP_RET_DATA)
}

// archSpec holds what the filter needs to know about one architecture.
type archSpec struct {
	name          string
	audit         uint32            // AUDIT_ARCH_* of native syscalls
	x32Bit        uint32            // syscall-number bit of a secondary ABI sharing audit, or 0
	argLowOffset  func(int) uint32  // offset of the low 32 bits of args[i] in seccomp_data
	cloneFlagsArg int               // index of clone's flags argument
	tiocsti       uint32            // TIOCSTI request number
	tioclinux     uint32            // TIOCLINUX request number
	sysnums       map[string]uint32 // syscall name -> number
}

var programOnce = sync.OnceValues(func() ([]unix.SockFilter, error) {
	if native == nil {
		return nil, fmt.Errorf("seccomp: no profile for linux/%s: %w", runtime.GOARCH, ErrUnsupported)
	}
	return native.program()
})

// Program returns the classic-BPF program of the default profile for the
// running architecture. Only amd64 is supported; on other architectures the
// error wraps ErrUnsupported. The caller owns the returned slice.
func Program() ([]unix.SockFilter, error) {
	p, err := programOnce()
	if err != nil {
		return nil, err
	}
	return slices.Clone(p), nil
}

// InstallThread installs prog as a seccomp filter on the calling OS thread
// only (seccomp(SECCOMP_SET_MODE_FILTER) without SECCOMP_FILTER_FLAG_TSYNC).
// Threads and processes later cloned from this thread inherit the filter;
// other threads of the process are not affected. A filter cannot be removed.
//
// The caller must have called runtime.LockOSThread and must never unlock
// the thread again: let the goroutine exit while locked so the runtime
// discards the thread. (The Go runtime creates new threads from a
// template thread, not from a locked one, so the filter does not leak into
// the scheduler's thread pool.) Unless the thread has CAP_SYS_ADMIN, it
// must also have set PR_SET_NO_NEW_PRIVS first.
func InstallThread(prog []unix.SockFilter) error {
	if len(prog) == 0 || len(prog) > maxInstructions {
		return fmt.Errorf("seccomp: filter has %d instructions, want 1 to %d", len(prog), maxInstructions)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	switch errno {
	case 0:
		return nil
	case unix.EACCES:
		return fmt.Errorf("seccomp: install filter: %w (PR_SET_NO_NEW_PRIVS is not set on this thread)", errno)
	default:
		return fmt.Errorf("seccomp: install filter: %w", errno)
	}
}

// rule is the decision for one syscall number: either a fixed return value
// or, if block is set, an argument-inspecting instruction block that ends
// in returns.
type rule struct {
	ret   uint32
	block []bpf.Instruction
}

func (r rule) mergeable(o rule) bool {
	return r.block == nil && o.block == nil && r.ret == o.ret
}

// interval applies r to the syscall numbers from lo up to the lo of the
// next interval.
type interval struct {
	lo uint32
	r  rule
}

// rules maps every syscall number the profile names to its decision.
func (a *archSpec) rules() (map[uint32]rule, error) {
	m := make(map[uint32]rule)
	owner := make(map[uint32]string)
	add := func(name string, r rule) error {
		nr, ok := a.sysnums[name]
		if !ok {
			return fmt.Errorf("seccomp: syscall %q has no number on %s", name, a.name)
		}
		if prev, dup := owner[nr]; dup {
			return fmt.Errorf("seccomp: syscall %q listed twice (also as %q)", name, prev)
		}
		if a.x32Bit != 0 && nr&a.x32Bit != 0 {
			return fmt.Errorf("seccomp: syscall %q has number %#x in the x32 range", name, nr)
		}
		m[nr], owner[nr] = r, name
		return nil
	}
	for _, name := range allowedSyscalls {
		if err := add(name, rule{ret: retAllow}); err != nil {
			return nil, err
		}
	}
	for _, name := range deniedSyscalls {
		if err := add(name, rule{ret: retErrno(unix.EPERM)}); err != nil {
			return nil, err
		}
	}
	for _, name := range enosysSyscalls {
		if err := add(name, rule{ret: retErrno(unix.ENOSYS)}); err != nil {
			return nil, err
		}
	}
	blocks := map[string]func() (*asm, error){
		"clone":       a.cloneBlock,
		"ioctl":       a.ioctlBlock,
		"socket":      a.socketBlock,
		"personality": a.personalityBlock,
		"mknod":       func() (*asm, error) { return a.mknodBlock(1) },
		"mknodat":     func() (*asm, error) { return a.mknodBlock(2) },
	}
	for _, name := range conditionalSyscalls {
		mk, ok := blocks[name]
		if !ok {
			return nil, fmt.Errorf("seccomp: no argument filter for %q", name)
		}
		b, err := mk()
		if err != nil {
			return nil, err
		}
		insns, err := b.resolve()
		if err != nil {
			return nil, fmt.Errorf("seccomp: %s filter: %w", name, err)
		}
		if err := add(name, rule{block: insns}); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// intervals turns the rules into a sorted partition of all syscall numbers.
// Numbers no rule names get ENOSYS; neighbours with the same fixed result
// are merged.
func intervals(rules map[uint32]rule) []interval {
	nrs := make([]uint32, 0, len(rules))
	for nr := range rules {
		nrs = append(nrs, nr)
	}
	sort.Slice(nrs, func(i, j int) bool { return nrs[i] < nrs[j] })

	unknown := rule{ret: retErrno(unix.ENOSYS)}
	var out []interval
	push := func(lo uint32, r rule) {
		if n := len(out); n > 0 && out[n-1].r.mergeable(r) {
			return
		}
		out = append(out, interval{lo: lo, r: r})
	}
	next := uint32(0)
	for _, nr := range nrs {
		if nr > next {
			push(next, unknown)
		}
		push(nr, rules[nr])
		next = nr + 1
	}
	if next != 0 { // no wrap-around past 0xffffffff
		push(next, unknown)
	}
	return out
}

// tree emits a binary search over ivs, with the syscall number in A. Every
// node is "jge lo" with the lower half inline after it; when the lower half
// is too long for an 8-bit conditional jump, an unconditional ja (32-bit
// offset) bridges to the upper half.
func tree(ivs []interval) []bpf.Instruction {
	if len(ivs) == 1 {
		if ivs[0].r.block != nil {
			return slices.Clone(ivs[0].r.block)
		}
		return []bpf.Instruction{bpf.RetConstant{Val: ivs[0].r.ret}}
	}
	mid := len(ivs) / 2
	lower, upper := tree(ivs[:mid]), tree(ivs[mid:])
	k := ivs[mid].lo
	var out []bpf.Instruction
	if len(lower) <= 255 {
		out = append(out, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: k, SkipTrue: uint8(len(lower))})
	} else {
		out = append(out,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: k, SkipTrue: 0, SkipFalse: 1},
			bpf.Jump{Skip: uint32(len(lower))})
	}
	out = append(out, lower...)
	return append(out, upper...)
}

// instructions returns the whole filter in x/net/bpf form.
func (a *archSpec) instructions() ([]bpf.Instruction, error) {
	rules, err := a.rules()
	if err != nil {
		return nil, err
	}
	h := new(asm)
	h.load(seccompDataArchOffset)
	h.jumpIf(bpf.JumpEqual, a.audit, "native")
	h.ret(retKill) // foreign architecture, e.g. i386 through int 0x80
	h.label("native")
	h.load(seccompDataNrOffset)
	if a.x32Bit != 0 {
		h.jumpIf(bpf.JumpBitsNotSet, a.x32Bit, "dispatch")
		// x32 ABI. Every number with this bit set (including -1) ends
		// here, so the tree below only ever sees native numbers.
		h.ret(retErrno(unix.EPERM))
	}
	h.label("dispatch")
	head, err := h.resolve()
	if err != nil {
		return nil, err
	}
	prog := append(head, tree(intervals(rules))...)
	if len(prog) > maxInstructions {
		return nil, fmt.Errorf("seccomp: program has %d instructions, limit is %d", len(prog), maxInstructions)
	}
	return prog, nil
}

// program assembles the filter into the kernel's format.
func (a *archSpec) program() ([]unix.SockFilter, error) {
	insns, err := a.instructions()
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(insns)
	if err != nil {
		return nil, fmt.Errorf("seccomp: assemble: %w", err)
	}
	out := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		out[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return out, nil
}

// cloneBlock: EPERM if the flags request any new namespace. The kernel
// only looks at the low 32 bits of legacy clone's flags.
func (a *archSpec) cloneBlock() (*asm, error) {
	b := new(asm)
	b.load(a.argLowOffset(a.cloneFlagsArg))
	b.jumpIf(bpf.JumpBitsSet, cloneNamespaceFlags, "deny")
	b.ret(retAllow)
	b.label("deny")
	b.ret(retErrno(unix.EPERM))
	return b, nil
}

// ioctlBlock: EPERM for TIOCSTI and TIOCLINUX. The request is an unsigned
// int for the kernel, which ignores the upper half of the register, so only
// the low 32 bits are compared; garbage in the high bits cannot bypass it.
func (a *archSpec) ioctlBlock() (*asm, error) {
	b := new(asm)
	b.load(a.argLowOffset(1))
	b.jumpIf(bpf.JumpEqual, a.tiocsti, "deny")
	b.jumpIf(bpf.JumpEqual, a.tioclinux, "deny")
	b.ret(retAllow)
	b.label("deny")
	b.ret(retErrno(unix.EPERM))
	return b, nil
}

// socketBlock filters socket(domain, type, protocol). Both are ints, so only
// their low 32 bits matter. The type carries SOCK_NONBLOCK/SOCK_CLOEXEC
// above the SOCK_TYPE_MASK (0xf) bits.
func (a *archSpec) socketBlock() (*asm, error) {
	b := new(asm)
	b.load(a.argLowOffset(0))
	b.jumpIf(bpf.JumpEqual, unix.AF_UNIX, "allow")
	// Netlink sockets are SOCK_RAW or SOCK_DGRAM by design; glibc's
	// getifaddrs and Go's net.Interfaces open NETLINK_ROUTE with SOCK_RAW.
	b.jumpIf(bpf.JumpEqual, unix.AF_NETLINK, "allow")
	b.jumpIf(bpf.JumpEqual, unix.AF_INET, "inet")
	b.jumpIf(bpf.JumpEqual, unix.AF_INET6, "inet")
	b.jumpIf(bpf.JumpEqual, unix.AF_PACKET, "deny")
	// Other families (AF_ALG, AF_VSOCK, AF_BLUETOOTH, ...) look as if the
	// kernel lacked them, so callers fall back gracefully.
	b.ret(retErrno(unix.EAFNOSUPPORT))
	b.label("inet")
	b.load(a.argLowOffset(1))
	b.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0xf})
	b.jumpIf(bpf.JumpEqual, unix.SOCK_RAW, "deny")
	b.jumpIf(bpf.JumpEqual, unix.SOCK_PACKET, "deny")
	b.label("allow")
	b.ret(retAllow)
	b.label("deny")
	b.ret(retErrno(unix.EPERM))
	return b, nil
}

// personalityBlock allows only the harmless personalities (unsigned int
// argument: low 32 bits).
func (a *archSpec) personalityBlock() (*asm, error) {
	b := new(asm)
	b.load(a.argLowOffset(0))
	for _, v := range allowedPersonalities {
		b.jumpIf(bpf.JumpEqual, v, "allow")
	}
	b.ret(retErrno(unix.EPERM))
	b.label("allow")
	b.ret(retAllow)
	return b, nil
}

// mknodBlock: EPERM for a device node (a character or block device in
// the mode, argument modeArg: an unsigned int, low 32 bits). Without
// CAP_MKNOD the host kernel refuses these anyway; gVisor before 2023
// does not, so the filter decides for both.
func (a *archSpec) mknodBlock(modeArg int) (*asm, error) {
	b := new(asm)
	b.load(a.argLowOffset(modeArg))
	b.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: unix.S_IFMT})
	b.jumpIf(bpf.JumpEqual, unix.S_IFCHR, "deny")
	b.jumpIf(bpf.JumpEqual, unix.S_IFBLK, "deny")
	b.ret(retAllow)
	b.label("deny")
	b.ret(retErrno(unix.EPERM))
	return b, nil
}

// asm is a tiny assembler for straight-line blocks with forward jumps to
// named labels (conditional jumps only, so every offset must fit 8 bits).
type asm struct {
	insns  []bpf.Instruction
	labels map[string]int
	refs   []labelRef
}

type labelRef struct {
	at    int
	label string
}

func (b *asm) emit(in bpf.Instruction) { b.insns = append(b.insns, in) }

func (b *asm) load(off uint32) { b.emit(bpf.LoadAbsolute{Off: off, Size: 4}) }

func (b *asm) ret(v uint32) { b.emit(bpf.RetConstant{Val: v}) }

// jumpIf jumps to label if "A cond val" holds and falls through otherwise.
func (b *asm) jumpIf(cond bpf.JumpTest, val uint32, label string) {
	b.refs = append(b.refs, labelRef{at: len(b.insns), label: label})
	b.emit(bpf.JumpIf{Cond: cond, Val: val})
}

func (b *asm) label(name string) {
	if b.labels == nil {
		b.labels = make(map[string]int)
	}
	b.labels[name] = len(b.insns)
}

// resolve fills in the jump offsets. A label may point just past the last
// instruction, where the caller appends more code.
func (b *asm) resolve() ([]bpf.Instruction, error) {
	out := slices.Clone(b.insns)
	for _, ref := range b.refs {
		target, ok := b.labels[ref.label]
		if !ok {
			return nil, fmt.Errorf("undefined label %q", ref.label)
		}
		skip := target - (ref.at + 1)
		if skip < 0 || skip > 255 {
			return nil, fmt.Errorf("jump to %q spans %d instructions", ref.label, skip)
		}
		j := out[ref.at].(bpf.JumpIf)
		j.SkipTrue = uint8(skip)
		out[ref.at] = j
	}
	return out, nil
}
