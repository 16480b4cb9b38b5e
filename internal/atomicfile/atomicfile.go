// Package atomicfile replaces files so that a reader sees the old contents or the
// new, never a part: the data goes to a temporary file in the same folder, which
// is synced and renamed over the target.
package atomicfile

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
)

// Write replaces path with data, mode perm. The folder must exist. The rename
// is made durable on a best-effort basis (the folder is synced).
func Write(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// WriteWith replaces path, mode perm, with what fn writes (buffered in memory,
// then written as Write does).
func WriteWith(path string, perm os.FileMode, fn func(io.Writer) error) error {
	var b bytes.Buffer
	if err := fn(&b); err != nil {
		return err
	}
	return Write(path, b.Bytes(), perm)
}
