package client

import (
	"math"
	"testing"

	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
)

// An agent's statfs answer becomes bytes; one no filesystem could give
// (a lying or broken agent) is refused rather than passed on as a
// sandbox's disk.
func TestDiskUsageOf(t *testing.T) {
	got, err := DiskUsageOf(proto.DiskStat{FragSize: 4096, Blocks: 1000, BlocksFree: 600, BlocksAvail: 550, Files: 200, FilesFree: 150})
	want := runtime.DiskUsage{TotalBytes: 4096000, UsedBytes: 400 * 4096, AvailBytes: 550 * 4096, Inodes: 200, InodesFree: 150}
	if err != nil || got != want {
		t.Errorf("DiskUsageOf = %+v %v, want %+v", got, err, want)
	}
	for name, ds := range map[string]proto.DiskStat{
		"no block size":          {Blocks: 10},
		"more free than blocks":  {FragSize: 4096, Blocks: 10, BlocksFree: 11},
		"more avail than free":   {FragSize: 4096, Blocks: 10, BlocksFree: 5, BlocksAvail: 6},
		"a size past int64":      {FragSize: 1 << 20, Blocks: math.MaxInt64 / (1 << 19)},
		"more free inodes":       {FragSize: 4096, Blocks: 10, Files: 3, FilesFree: 4},
		"an inode count past it": {FragSize: 4096, Blocks: 10, Files: math.MaxUint64},
	} {
		if u, err := DiskUsageOf(ds); err == nil {
			t.Errorf("%s: %+v accepted as %+v", name, ds, u)
		}
	}
}
