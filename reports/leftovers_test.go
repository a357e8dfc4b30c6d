package reports

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAWriteCutShortIsNotForeign holds CheckDir and RenderFiles to
// knowing sluice's own temporary files: what a killed write left in the
// results directory and under hdr is not "not written by sluice", and the
// next write removes it, and nothing else.
func TestAWriteCutShortIsNotForeign(t *testing.T) {
	dir := t.TempDir()
	r := synthResults(t, 1)
	require.NoError(t, RenderFiles(dir, r))
	vdirs, err := os.ReadDir(filepath.Join(dir, HDRDir))
	require.NoError(t, err)
	require.NotEmpty(t, vdirs)
	vdir := filepath.Join(dir, HDRDir, vdirs[0].Name())
	left := []string{
		filepath.Join(dir, ".report.html.tmp-3078943179"),
		filepath.Join(dir, ".results.json.tmp-12"),
		filepath.Join(vdir, ".honest.hello.response_time.hgrm.tmp-1251823189"),
		filepath.Join(vdir, ".honest.response_time.hlog.tmp-7"),
		filepath.Join(dir, ".hdr.tmp-99", "v", ".x.hgrm.tmp-5"),
		filepath.Join(dir, ".hdr.tmp-99", "v", "x.hgrm"),
	}
	for _, p := range left {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("half"), 0o644))
	}
	// Not sluice's: kept, and (under hdr) still refused.
	mine := filepath.Join(dir, ".report.html.tmp-notdigits")
	require.NoError(t, os.WriteFile(mine, nil, 0o644))
	require.NoError(t, CheckDir(dir))
	require.NoError(t, RenderFiles(dir, r))
	for _, p := range left {
		assert.NoFileExists(t, p)
	}
	assert.NoDirExists(t, filepath.Join(dir, ".hdr.tmp-99"))
	assert.FileExists(t, mine, "a file sluice did not write is kept")
	fi, err := os.Stat(filepath.Join(dir, HDRDir))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm(), "hdr is as readable as before")

	foreign := filepath.Join(vdir, "notes.txt")
	require.NoError(t, os.WriteFile(foreign, nil, 0o644))
	assert.ErrorContains(t, CheckDir(dir), "notes.txt was not written by sluice")
}
