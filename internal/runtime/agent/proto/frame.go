package proto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A file write's content crosses the pipe to the agent in frames (a
// 4-byte big-endian length, then that many bytes) ended by an empty one:
// a pipe closed before the empty frame is an upload that did not finish
// (the client went away, the body broke off), which the agent must tell
// from a complete one so that it never puts a truncated file in place.

// maxFrame bounds one frame (and the agent's buffer for it).
const maxFrame = 1 << 20

// ErrUploadAborted: the content ended before its end mark.
var ErrUploadAborted = errors.New("the upload was aborted before its end")

// WriteFrames copies r to w as frames and, if r ends without error, the
// end mark. A failing r ends the stream without the mark, and its error
// is returned.
func WriteFrames(w io.Writer, r io.Reader) (int64, error) {
	buf := make([]byte, 4+64<<10)
	var n int64
	for {
		k, err := r.Read(buf[4:])
		if k > 0 {
			binary.BigEndian.PutUint32(buf, uint32(k))
			if _, werr := w.Write(buf[:4+k]); werr != nil {
				return n, werr
			}
			n += int64(k)
		}
		if err == io.EOF {
			binary.BigEndian.PutUint32(buf, 0)
			_, werr := w.Write(buf[:4])
			return n, werr
		}
		if err != nil {
			return n, err
		}
	}
}

// FrameReader reads what WriteFrames wrote: io.EOF after the end mark,
// ErrUploadAborted when the stream ends before it.
type FrameReader struct {
	R    io.Reader
	left uint32
	done bool
}

func (f *FrameReader) Read(p []byte) (int, error) {
	for f.left == 0 {
		if f.done {
			return 0, io.EOF
		}
		var h [4]byte
		if _, err := io.ReadFull(f.R, h[:]); err != nil {
			return 0, aborted(err)
		}
		f.left = binary.BigEndian.Uint32(h[:])
		if f.left == 0 {
			f.done = true
			return 0, io.EOF
		}
		if f.left > maxFrame {
			return 0, fmt.Errorf("a frame of %d bytes: %w", f.left, ErrUploadAborted)
		}
	}
	if uint32(len(p)) > f.left {
		p = p[:f.left]
	}
	n, err := f.R.Read(p)
	f.left -= uint32(n)
	if err == io.EOF && f.left > 0 {
		return n, aborted(err)
	}
	if err == io.EOF {
		err = nil
	}
	return n, err
}

func aborted(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return ErrUploadAborted
	}
	return err
}
