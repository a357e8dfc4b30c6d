package atomicbucket

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPackageDocLeadsWithTheSimplePath holds the package documentation to
// its order: how to use a Bucket (New, TakeAt, Result) first, the model
// and the encoding after it, and the parts a keyed table builds on set
// apart under a heading of their own.
func TestPackageDocLeadsWithTheSimplePath(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var doc string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ParseComments|parser.PackageClauseOnly)
		require.NoError(t, err)
		if f.Doc != nil {
			doc += f.Doc.Text()
		}
	}
	use, model, blocks := strings.Index(doc, "# Use"), strings.Index(doc, "# Model"), strings.Index(doc, "# Building blocks for keyed tables")
	require.True(t, use > 0 && model > use && blocks > model, "headings in order: Use, Model, ..., Building blocks")
	first := doc[use:model]
	for _, name := range []string{"New", "TakeAt", "Result", "RetryAfter"} {
		assert.Contains(t, first, name)
	}
	assert.NotContains(t, first, "Limit.", "the building blocks are not in the simple path")
	for _, name := range []string{"NewLimit", "Limit.TakeAt", "Limit.FullWord", "Pass", "shardmap"} {
		assert.Contains(t, doc[blocks:], name)
	}
}
