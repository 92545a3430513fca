package client

import (
	"context"
	"os"

	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
)

// hostWatch is one directory watch: the agent's OpWatchEvents for its id
// go to out, never blocking the read loop (a full channel loses them,
// and the next batch says so).
type hostWatch struct {
	out  chan runtime.WatchBatch
	lost bool
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// WatchDir implements runtime.DirWatcher through the agent's watcher of
// the file activity (OpWatch): directories beneath /workspace and the
// command user's home.
func (c *Client) WatchDir(ctx context.Context, dir string, recursive bool) (<-chan runtime.WatchBatch, error) {
	if c.stopped() {
		return nil, ErrStopped
	}
	id, ch := c.register()
	w := &hostWatch{out: make(chan runtime.WatchBatch, 64)}
	c.wmu.Lock()
	if c.watches == nil {
		c.watches = map[uint64]*hostWatch{}
	}
	c.watches[id] = w
	c.wmu.Unlock()
	stop := func() {
		c.wmu.Lock()
		_, ok := c.watches[id]
		delete(c.watches, id)
		c.wmu.Unlock()
		if ok {
			close(w.out)
			_ = c.conn.Send(&proto.Message{Op: proto.OpUnwatch, ID: id})
		}
	}
	err := c.conn.Send(&proto.Message{Op: proto.OpWatch, ID: id, File: &proto.FileOp{Kind: "watch", Path: dir, Recursive: recursive}})
	if err != nil {
		c.unregister(id)
		stop()
		return nil, ErrStopped
	}
	var answer *proto.Message
	select {
	case answer = <-ch:
	case <-ctx.Done():
	}
	c.unregister(id)
	switch {
	case answer == nil:
		stop()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, ErrStopped
	case answer.Op == proto.OpError:
		stop()
		return nil, AgentError("watch "+dir, answer)
	}
	go func() {
		select {
		case <-ctx.Done():
		case <-c.closed:
		}
		stop()
	}()
	return w.out, nil
}

// watchEvents hands an OpWatchEvents to its watch.
func (c *Client) watchEvents(m *proto.Message) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	w := c.watches[m.ID]
	if w == nil {
		return
	}
	b := runtime.WatchBatch{Lost: m.Lost || w.lost}
	for _, e := range m.Events {
		b.Events = append(b.Events, runtime.WatchEvent{Op: e.Op, Path: e.Path})
	}
	select {
	case w.out <- b:
		w.lost = false
	default:
		w.lost = true
	}
}

// endWatches closes every watch: the channel is gone.
func (c *Client) endWatches() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for id, w := range c.watches {
		close(w.out)
		delete(c.watches, id)
	}
}
