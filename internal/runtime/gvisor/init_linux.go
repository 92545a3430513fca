package gvisor

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/kernel/thawguard"
	"github.com/airlock-dev/airlock/internal/runtime/agent"
	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
)

// MaybeInit turns this process into a gVisor sandbox's agent (or a
// paused sandbox's thaw guard) when it was started as one (PID 1 at
// agentPath); otherwise it returns at once. Call it first thing in main
// (and in TestMain of packages that create gVisor sandboxes).
func MaybeInit() {
	thawguard.MaybeRun() // a paused sandbox's guard: does not return
	if len(os.Args) == 0 || os.Args[0] != agentPath || os.Getpid() != 1 {
		return
	}
	mainAt = time.Now()
	// fd 0 is the channel, the host socket runsc handed over as stdin;
	// 1 and 2 are the host's runsc log. The channel moves to a
	// close-on-exec descriptor and stdin becomes /dev/null.
	fd, err := unix.FcntlInt(0, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		fmt.Fprintf(os.Stderr, "airlock agent: channel: %v\n", err)
		os.Exit(1)
	}
	if null, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		_ = unix.Dup3(null, 0, 0)
		unix.Close(null)
	}
	conn := proto.NewConn(os.NewFile(uintptr(fd), "agent-channel"))
	// serve only returns on failure: serving ends with the process.
	err = serve(conn)
	_ = conn.Send(&proto.Message{Op: proto.OpError, Code: "internal", Error: err.Error()})
	fmt.Fprintf(os.Stderr, "airlock agent: %v\n", err)
	os.Exit(1)
}

// mainAt is when the agent's main began (for AIRLOCK_TRACE).
var mainAt time.Time

func serve(conn *proto.Conn) error {
	m, files, err := conn.Recv()
	if err != nil {
		return err
	}
	recvAt := time.Now()
	for _, f := range files {
		f.Close()
	}
	if m.Op != proto.OpInit || m.Init == nil {
		return fmt.Errorf("sandbox agent: expected init message, got %q", m.Op)
	}
	cfg := m.Init
	// Not dumpable: sandbox processes cannot open /proc/1/*.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	srv, err := agent.NewServer(conn, agent.Hardening{UID: cfg.UID, GID: cfg.GID, Writable: cfg.Writable, Scratch: cfg.Scratch,
		ScopeRoots: cfg.ScopeRoots, NoCgroupNS: true})
	if err != nil {
		return fmt.Errorf("sandbox agent: %w", err)
	}
	srv.DiskPaths = []string{"/"}
	if cfg.Network {
		// relayed: the channel carries no descriptor to the host
		if err := srv.StartNetwork(true, cfg.MaxProxyConns); err != nil {
			return fmt.Errorf("sandbox agent: %w", err)
		}
	}
	if !cfg.NoFileActivity {
		if err := srv.WatchFiles([]string{"/workspace", cfg.Home}, []string{"/workspace/.git"}); err != nil {
			fmt.Fprintf(os.Stderr, "sandbox agent: file activity: %v\n", err)
		}
	}
	timings := ""
	if cfg.Trace {
		// gVisor's clock is the host's: the host turns these into offsets
		timings = fmt.Sprintf("main@%d recv@%d send@%d", mainAt.UnixNano(), recvAt.UnixNano(), time.Now().UnixNano())
	}
	if err := conn.Send(&proto.Message{Op: proto.OpReady, Version: proto.ProtocolVersion, PID: srv.SpawnerTID(), LandlockABI: srv.LandlockABI(), Seccomp: "default-deny allowlist", Timings: timings}); err != nil {
		return err
	}
	srv.Serve()
	return errors.New("sandbox agent: stopped serving")
}
