package main

import (
	"archive/zip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWrite: the package holds one file, bootstrap, executable, with the
// binary's bytes.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bootstrap")
	require.NoError(t, os.WriteFile(bin, []byte("\x7fELF binary"), 0o755))
	out := filepath.Join(dir, "bootstrap.zip")
	require.NoError(t, write(out, bin))

	zr, err := zip.OpenReader(out)
	require.NoError(t, err)
	defer zr.Close()
	require.Len(t, zr.File, 1)
	f := zr.File[0]
	require.Equal(t, "bootstrap", f.Name)
	require.Equal(t, os.FileMode(0o755), f.Mode().Perm())
	r, err := f.Open()
	require.NoError(t, err)
	defer r.Close()
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Equal(t, "\x7fELF binary", string(b))

	require.Error(t, write(out, filepath.Join(dir, "missing")), "a missing binary")
}
