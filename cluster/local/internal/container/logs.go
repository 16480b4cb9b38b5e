package container

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// The CRI log format, one record per line:
//
//	<RFC3339Nano timestamp> <stdout|stderr> <F|P> <content>
//
// A line longer than maxLogLine is split into "P" (partial) records followed by an
// "F" record with its end. A last line without a newline (the stream ended) is
// written as an "F" record: readers show it as a complete line.
const (
	maxLogLine  = 16 * 1024
	tagFull     = 'F'
	tagPartial  = 'P'
	followPoll  = 50 * time.Millisecond
	tailChunk   = 64 * 1024
	headerBytes = 80 // enough for "<timestamp> stdout P "
)

// logFile appends CRI records to a container's log; both streams share it.
type logFile struct {
	mu  sync.Mutex
	f   *os.File // nil: output is discarded
	buf []byte
}

func openLog(path string) (*logFile, error) {
	if path == "" {
		return &logFile{}, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create the log folder: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open the log: %w", err)
	}
	return &logFile{f: f}, nil
}

// write appends one record. The timestamp is taken under the lock so that the
// file is in time order. Write errors (a full disk) drop the record: the program
// must never block on its log.
func (l *logFile) write(stream string, tag byte, content []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return
	}
	b := l.buf[:0]
	b = time.Now().UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, ' ')
	b = append(b, stream...)
	b = append(b, ' ', tag, ' ')
	b = append(b, content...)
	b = append(b, '\n')
	_, _ = l.f.Write(b)
	if cap(b) <= 2*maxLogLine {
		l.buf = b
	}
}

func (l *logFile) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}

// copying is the pair of goroutines that turn a program's stdout and stderr into
// log records.
type copying struct {
	readers []*os.File
	wg      sync.WaitGroup
	done    chan struct{}
}

func (l *logFile) copyStreams(stdout, stderr *os.File) *copying {
	c := &copying{readers: []*os.File{stdout, stderr}, done: make(chan struct{})}
	c.wg.Add(2)
	go l.copyStream(&c.wg, stdout, "stdout")
	go l.copyStream(&c.wg, stderr, "stderr")
	go func() {
		c.wg.Wait()
		close(c.done)
	}()
	return c
}

func (l *logFile) copyStream(wg *sync.WaitGroup, r io.Reader, stream string) {
	defer wg.Done()
	br := bufio.NewReaderSize(r, maxLogLine)
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			l.write(stream, tagFull, line[:len(line)-1])
		case errors.Is(err, bufio.ErrBufferFull):
			l.write(stream, tagPartial, line)
		default:
			if len(line) > 0 {
				l.write(stream, tagFull, line)
			}
			return
		}
	}
}

// finish waits for both streams to end (every writer closed its end); after
// timeout it closes the read ends so that the goroutines end anyway (a writer
// that escaped the container keeps its output to itself).
func (c *copying) finish(timeout time.Duration) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
	}
	for _, r := range c.readers {
		_ = r.Close()
	}
	<-c.done
}

// logRecord is one parsed CRI record; content excludes the newline.
type logRecord struct {
	ts      time.Time
	stream  string
	partial bool
	content []byte
}

// parseRecord parses one line of a CRI log (without its newline).
func parseRecord(line []byte) (logRecord, error) {
	var r logRecord
	i := bytes.IndexByte(line, ' ')
	if i < 0 {
		return r, fmt.Errorf("no timestamp in %q", truncate(line))
	}
	ts, err := time.Parse(time.RFC3339Nano, string(line[:i]))
	if err != nil {
		return r, fmt.Errorf("bad timestamp in %q: %w", truncate(line), err)
	}
	r.ts = ts
	rest := line[i+1:]
	j := bytes.IndexByte(rest, ' ')
	if j < 0 {
		return r, fmt.Errorf("no stream in %q", truncate(line))
	}
	r.stream = string(rest[:j])
	if r.stream != "stdout" && r.stream != "stderr" {
		return r, fmt.Errorf("unknown stream %q", r.stream)
	}
	rest = rest[j+1:]
	// The tag; a record with an empty content may end right after it.
	switch {
	case len(rest) >= 1 && (rest[0] == tagFull || rest[0] == tagPartial) && (len(rest) == 1 || rest[1] == ' '):
		r.partial = rest[0] == tagPartial
		if len(rest) > 1 {
			r.content = rest[2:]
		}
	default:
		return r, fmt.Errorf("no F/P tag in %q", truncate(line))
	}
	return r, nil
}

func truncate(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// readLogs implements ReadLogs.
func readLogs(ctx context.Context, path string, opts LogOptions, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("container logs: %w", err)
	}
	defer func() { _ = f.Close() }()

	var start int64
	if opts.Tail >= 0 {
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("container logs: %w", err)
		}
		start, err = tailStart(f, fi.Size(), opts.Tail)
		if err != nil {
			return fmt.Errorf("container logs %s: %w", path, err)
		}
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return fmt.Errorf("container logs: %w", err)
	}

	out := &logOutput{w: w, opts: opts, newLine: map[string]bool{"stdout": true, "stderr": true}}
	if opts.LimitBytes > 0 {
		out.left = opts.LimitBytes
	}
	rd := &logReader{f: f, path: path, pos: start}
	for {
		if err := ctx.Err(); err != nil {
			if opts.Follow {
				return nil
			}
			return fmt.Errorf("container logs: %w", err)
		}
		line, ok, err := rd.next()
		if err != nil {
			return fmt.Errorf("container logs %s: %w", path, err)
		}
		if !ok {
			if !opts.Follow {
				return nil
			}
			t := time.NewTimer(followPoll)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
			if err := rd.checkRotation(); err != nil {
				return fmt.Errorf("container logs %s: %w", path, err)
			}
			continue
		}
		rec, err := parseRecord(line)
		if err != nil {
			continue // as the kubelet does: skip what is not a CRI record
		}
		if !opts.SinceTime.IsZero() && rec.ts.Before(opts.SinceTime) {
			continue
		}
		if full, err := out.write(rec); err != nil {
			return fmt.Errorf("container logs: %w", err)
		} else if full {
			return nil
		}
	}
}

// logReader reads complete records (newline-terminated lines) from a log that may
// still grow.
type logReader struct {
	f    *os.File
	path string
	pos  int64  // file offset of data[0]
	data []byte // bytes read but not consumed (at most a partial record)
	buf  []byte
}

// next returns the next complete record, or ok == false at the current end. The
// line is valid until the next call.
func (r *logReader) next() ([]byte, bool, error) {
	for {
		if i := bytes.IndexByte(r.data, '\n'); i >= 0 {
			line := r.data[:i]
			r.data = r.data[i+1:]
			r.pos += int64(i + 1)
			return line, true, nil
		}
		if r.buf == nil {
			r.buf = make([]byte, 64*1024)
		}
		if len(r.data) == len(r.buf) {
			r.buf = make([]byte, 2*len(r.buf)) // a record longer than the buffer
		}
		n := copy(r.buf, r.data)
		m, err := r.f.Read(r.buf[n:])
		r.data = r.buf[:n+m]
		if m == 0 {
			if err == nil || errors.Is(err, io.EOF) {
				return nil, false, nil
			}
			return nil, false, err
		}
	}
}

// checkRotation restarts from the beginning when the log was truncated or
// replaced by a new file (a container restart that picked the same path).
func (r *logReader) checkRotation() error {
	cur, err := r.f.Stat()
	if err != nil {
		return err
	}
	if named, err := os.Stat(r.path); err == nil && !os.SameFile(cur, named) {
		nf, err := os.Open(r.path)
		if err != nil {
			return nil // try again later
		}
		_ = r.f.Close()
		r.f = nf
		r.pos, r.data = 0, nil
		return nil
	}
	if cur.Size() < r.pos+int64(len(r.data)) {
		if _, err := r.f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		r.pos, r.data = 0, nil
	}
	return nil
}

// logOutput renders records as kubectl shows them.
type logOutput struct {
	w       io.Writer
	opts    LogOptions
	left    int64           // bytes left under LimitBytes
	newLine map[string]bool // per stream: the next record starts a line
	buf     []byte
}

// write renders rec; full reports that LimitBytes is reached.
func (o *logOutput) write(rec logRecord) (full bool, err error) {
	b := o.buf[:0]
	if o.opts.Timestamps && o.newLine[rec.stream] {
		b = rec.ts.AppendFormat(b, time.RFC3339Nano)
		b = append(b, ' ')
	}
	b = append(b, rec.content...)
	if !rec.partial {
		b = append(b, '\n')
	}
	o.newLine[rec.stream] = !rec.partial
	o.buf = b
	if o.opts.LimitBytes > 0 {
		if int64(len(b)) >= o.left {
			_, err := o.w.Write(b[:o.left])
			o.left = 0
			return true, err
		}
		o.left -= int64(len(b))
	}
	_, err = o.w.Write(b)
	return false, err
}

// tailStart returns the offset where the last n lines of the log begin. A line
// ends with an "F" record; trailing "P" records (a line still being written)
// come on top of the n lines.
func tailStart(f *os.File, size int64, n int) (int64, error) {
	if n == 0 {
		return size, nil
	}
	buf := make([]byte, tailChunk)
	hdr := make([]byte, headerBytes)
	end := int64(-1) // end (exclusive, after its newline) of the record being delimited
	fulls := 0
	// isFull reads the header of the record starting at off.
	isFull := func(off, recEnd int64) (bool, error) {
		h := hdr
		if recEnd-off < int64(len(h)) {
			h = h[:recEnd-off]
		}
		k, err := f.ReadAt(h, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return false, err
		}
		rec, err := parseRecord(bytes.TrimSuffix(h[:k], []byte{'\n'}))
		if err != nil {
			return false, nil // not a record, so not a line end
		}
		return !rec.partial, nil
	}
	for hi := size; hi > 0; {
		lo := hi - tailChunk
		if lo < 0 {
			lo = 0
		}
		chunk := buf[:hi-lo]
		if _, err := f.ReadAt(chunk, lo); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] != '\n' {
				continue
			}
			nl := lo + int64(i)
			if end >= 0 {
				// The record [nl+1, end) is complete.
				full, err := isFull(nl+1, end)
				if err != nil {
					return 0, err
				}
				if full {
					fulls++
					if fulls == n+1 {
						return end, nil
					}
				}
			}
			end = nl + 1
		}
		hi = lo
	}
	if end > 0 {
		// The first record, [0, end).
		full, err := isFull(0, end)
		if err != nil {
			return 0, err
		}
		if full && fulls+1 == n+1 {
			return end, nil
		}
	}
	return 0, nil
}
