package cgroups

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"testing"
)

// helperEnv makes the test binary act as a memory-hungry child instead of
// running tests: it waits for one line on stdin (sent once the parent has
// moved it into a group), then allocates and touches N MiB.
const helperEnv = "AIRLOCK_CGROUPS_TEST_ALLOC_MIB"

func TestMain(m *testing.M) {
	if v := os.Getenv(helperEnv); v != "" {
		os.Exit(allocHelper(v))
	}
	if v := os.Getenv(spawnerEnv); v != "" {
		os.Exit(spawnerHelper(v))
	}
	os.Exit(m.Run())
}

var sink []byte

func allocHelper(mibStr string) int {
	mib, err := strconv.Atoi(mibStr)
	if err != nil || mib <= 0 {
		fmt.Fprintln(os.Stderr, "bad", helperEnv, mibStr)
		return 2
	}
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Fprintln(os.Stderr, "handshake:", err)
		return 3
	}
	b := make([]byte, mib<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1 // fault every page in; untouched pages cost nothing
	}
	sink = b
	fmt.Println("allocated", mib, "MiB")
	return 0
}
