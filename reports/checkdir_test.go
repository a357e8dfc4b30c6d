package reports

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// CheckDir refuses, without writing anything, what RenderFiles would
// refuse, each error naming the path in the way once; a directory that
// does not exist, or one holding an earlier run's files, is fine.
func TestCheckDirRefusesWhatRenderFilesWould(t *testing.T) {
	fresh := filepath.Join(t.TempDir(), "new")
	require.NoError(t, CheckDir(fresh))
	assert.NoDirExists(t, fresh, "CheckDir writes nothing")

	earlier := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(earlier, HDRDir, "v"), 0o755))
	for _, f := range []string{ResultsFile, ReportFile, filepath.Join(HDRDir, "v", "p.response_time.hgrm")} {
		require.NoError(t, os.WriteFile(filepath.Join(earlier, f), []byte("old"), 0o644))
	}
	require.NoError(t, CheckDir(earlier))

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	hdrFile := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(hdrFile, HDRDir), nil, 0o644))
	resultsDir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(resultsDir, ResultsFile), 0o755))
	reportDir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(reportDir, ReportFile), 0o755))
	mine := t.TempDir()
	notes := filepath.Join(mine, HDRDir, "v", "notes.txt")
	require.NoError(t, os.MkdirAll(filepath.Dir(notes), 0o755))
	require.NoError(t, os.WriteFile(notes, []byte("mine"), 0o644))
	for _, c := range []struct{ dir, path, want string }{
		{file, file, "is not a directory"},
		{hdrFile, filepath.Join(hdrFile, HDRDir), "is not a directory"},
		{resultsDir, filepath.Join(resultsDir, ResultsFile), "is a directory"},
		{reportDir, filepath.Join(reportDir, ReportFile), "is a directory"},
		{mine, notes, "was not written by sluice"},
	} {
		err := CheckDir(c.dir)
		require.Error(t, err, c.dir)
		assert.Contains(t, err.Error(), c.path+" "+c.want)
		assert.Equal(t, 1, strings.Count(err.Error(), c.path), "the path is named once: %v", err)
		assert.Contains(t, err.Error(), "write to another directory")
		r := New(Run{Scenario: "s", Driver: DriverSim, Duration: 1, Complete: true}, Environment{})
		_, err = r.AddVariant("v", nil)
		require.NoError(t, err)
		before := tree(t, c.dir)
		assert.Error(t, RenderFiles(c.dir, r), "RenderFiles refuses it too")
		assert.Equal(t, before, tree(t, c.dir), "and changes nothing there")
	}
	assert.FileExists(t, notes)
}

// tree lists every path under root (root itself included) with its size
// and mode, to compare a directory before and after a write.
func tree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %v %d", p, fi.Mode(), fi.Size()))
		return nil
	}))
	return out
}
