package client

import (
	"context"
	"fmt"
	"math"

	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
)

// DiskPath is where DiskUsage asks: /workspace, on the disk that holds
// the home too.
const DiskPath = "/workspace"

// DiskUsage implements runtime.DiskMeter: statfs(2) of DiskPath, made by
// the agent inside the sandbox as the command user (what a command's
// df would say).
func (c *Client) DiskUsage(ctx context.Context) (runtime.DiskUsage, error) {
	m, err := c.fileCall(ctx, proto.FileOp{Kind: "statfs", Path: DiskPath}, nil)
	if err != nil {
		return runtime.DiskUsage{}, err
	}
	if m.Disk == nil {
		return runtime.DiskUsage{}, fmt.Errorf("statfs %s: the agent's answer has no figures", DiskPath)
	}
	return DiskUsageOf(*m.Disk)
}

// DiskUsageOf is ds in bytes; figures no filesystem has (more free than
// there is, a size past int64) are an error, never passed on.
func DiskUsageOf(ds proto.DiskStat) (runtime.DiskUsage, error) {
	if ds.FragSize == 0 || ds.Blocks > math.MaxInt64/ds.FragSize || ds.BlocksFree > ds.Blocks || ds.BlocksAvail > ds.BlocksFree ||
		ds.Files > math.MaxInt64 || ds.FilesFree > ds.Files {
		return runtime.DiskUsage{}, fmt.Errorf("statfs: figures no filesystem has: %+v", ds)
	}
	b := func(n uint64) int64 { return int64(n * ds.FragSize) }
	return runtime.DiskUsage{
		TotalBytes: b(ds.Blocks), UsedBytes: b(ds.Blocks - ds.BlocksFree), AvailBytes: b(ds.BlocksAvail),
		Inodes: int64(ds.Files), InodesFree: int64(ds.FilesFree),
	}, nil
}
