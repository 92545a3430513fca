package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Comm is the name the agent's threads show in /proc (comm): the same in
// every sandbox, where the executable's own name would tell the sandbox
// which copy of which airlock binary the host runs.
const Comm = "airlock-agent"

// SetComm names every thread of this process Comm; threads made later
// inherit the name from the thread that makes them, so passes repeat
// until one finds every thread named. /proc must be the sandbox's own.
func SetComm() error {
	for range 10 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("name the agent: %w", err)
		}
		renamed := false
		for _, t := range tasks {
			f := filepath.Join("/proc/self/task", t.Name(), "comm")
			if b, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(b)) == Comm {
				continue
			}
			err := os.WriteFile(f, []byte(Comm), 0)
			if err != nil && !os.IsNotExist(err) { // not: a thread that just ended
				return fmt.Errorf("name the agent: %w", err)
			}
			renamed = true
		}
		if !renamed {
			return nil
		}
	}
	return errors.New("name the agent: its threads keep changing")
}
