package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxDocLines is the longest godoc comment allowed (CONTRIBUTING.md, Code):
// what a declaration is and why, briefly; the rest belongs in docs/.
const maxDocLines = 10

// goFile is one parsed Go file of the module, with its path relative to
// the module root.
type goFile struct {
	rel  string
	test bool
	src  []byte
	f    *ast.File
	fset *token.FileSet
}

// moduleFiles parses every Go file of the module (no testdata/ or hidden
// directory), comments included.
func moduleFiles(t *testing.T) []goFile {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var files []goFile
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files = append(files, goFile{rel: rel, test: strings.HasSuffix(path, "_test.go"), src: src, f: f, fset: fset})
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

// docComments calls fn with every godoc comment of f and what it
// documents: the package clause, top-level declarations, the specs of a
// group, exported fields of structs and methods of interfaces.
func docComments(f *ast.File, fn func(what string, doc *ast.CommentGroup)) {
	visit := func(what string, doc *ast.CommentGroup) {
		if doc != nil {
			fn(what, doc)
		}
	}
	visit("package "+f.Name.Name, f.Doc)
	members := func(owner string, e ast.Expr) {
		var list *ast.FieldList
		switch x := e.(type) {
		case *ast.StructType:
			list = x.Fields
		case *ast.InterfaceType:
			list = x.Methods
		default:
			return
		}
		for _, fl := range list.List {
			for _, n := range fl.Names {
				if n.IsExported() {
					visit(owner+"."+n.Name, fl.Doc)
					break
				}
			}
		}
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			visit(d.Name.Name, d.Doc)
		case *ast.GenDecl:
			what := d.Tok.String() + " group"
			if !d.Lparen.IsValid() && len(d.Specs) == 1 { // type T ..., var v ...: the doc is T's
				switch s := d.Specs[0].(type) {
				case *ast.TypeSpec:
					what = s.Name.Name
				case *ast.ValueSpec:
					what = s.Names[0].Name
				}
			}
			visit(what, d.Doc)
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					visit(s.Name.Name, s.Doc)
					members(s.Name.Name, s.Type)
				case *ast.ValueSpec:
					visit(s.Names[0].Name, s.Doc)
				}
			}
		}
	}
}

// TestGodocAtMostTenLines fails on a godoc comment of a non-test file
// longer than maxDocLines.
func TestGodocAtMostTenLines(t *testing.T) {
	var long []string
	for _, gf := range moduleFiles(t) {
		if gf.test {
			continue
		}
		docComments(gf.f, func(what string, doc *ast.CommentGroup) {
			start, end := gf.fset.Position(doc.Pos()), gf.fset.Position(doc.End())
			if n := end.Line - start.Line + 1; n > maxDocLines {
				long = append(long, fmt.Sprintf("%s:%d: %s: %d lines", gf.rel, start.Line, what, n))
			}
		})
	}
	assert.Empty(t, long, "godoc comments over %d lines (say it briefly; details go to docs/):\n%s",
		maxDocLines, strings.Join(long, "\n"))
}

func TestDocCommentsFindsEachKind(t *testing.T) {
	src := `// P is the package.
package p

// T is a type.
type T struct {
	// F is exported.
	F int
	// g is not.
	g int
}

// I is an interface.
type I interface {
	// M is a method.
	M()
}

// Group of constants.
const (
	// A is one.
	A = 1
)

// F is a func.
func F() {}
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.ParseComments)
	require.NoError(t, err)
	var got []string
	docComments(f, func(what string, _ *ast.CommentGroup) { got = append(got, what) })
	assert.Equal(t, []string{"package p", "T", "T.F", "I", "I.M", "const group", "A", "F"}, got)
}

// A lab note is a measurement written down as a fact of the code: a date
// (when it was seen), or a figure with a unit of rate or time next to the
// word that says it was measured. Configured values ("default 100 ms"),
// protocol constants ("within 200 ms", RFC 9260 §6.2), unit names in
// identifiers and format strings ("%.2f Gbit/s") are not.
var (
	labDate = regexp.MustCompile(`\b20\d\d-(?:0[1-9]|1[0-2])(?:-(?:0[1-9]|[12]\d|3[01]))?\b`)
	// goLayout is Go's reference time, a layout and not a date.
	goLayout = "2006-01-02"
	figure   = `\d+(?:[.,]\d+)?[kKM]?\s?(?:[kKMGT]i?(?:bit|B|b)/s|[kKMGT]bps|[kMG]?pps|(?:ops|msgs?)/s|ns|µs|us|ms|s)\b`
	marker   = `\b(?i:measured|measuring|median|mean|averaged?|p50|p90|p99|p99\.9|p999|unloaded|observed|benchmarked)\b`
	// A marker then the figure within three words (a colon may follow
	// the marker), or the figure then the marker at once.
	labFigure = regexp.MustCompile(marker + `[\s:,=]+(?:[\w.%/-]+\s+){0,3}` + figure +
		`|` + figure + `\s+` + marker)
)

// labNote returns the date or measured figure text carries, if any.
func labNote(text string) (string, bool) {
	for _, m := range labDate.FindAllString(text, -1) {
		if m != goLayout && !strings.HasPrefix(goLayout, m) {
			return m, true
		}
	}
	if m := labFigure.FindString(text); m != "" {
		return m, true
	}
	return "", false
}

func TestLabNote(t *testing.T) {
	for text, want := range map[string]string{
		// Lab notes.
		"2026-11-27: 2 of 199 runs failed":                   "2026-11-27",
		"once in a CI run of 2026-11-27, neither side":       "2026-11-27",
		"to the next, 2026-11":                               "2026-11",
		"Unloaded: 50.4 of 50 Mbit/s; the bounds leave room": "Unloaded: 50.4 of 50 Mbit/s",
		"measured 9.41 Gbit/s on the lab host":               "measured 9.41 Gbit/s",
		"RDMA Write reaches 2.1 GB/s measured":               "2.1 GB/s measured",
		"the median is 38 µs":                                "median is 38 µs",
		"p99 of 120 us over loopback":                        "p99 of 120 us",
		"a hand-off takes 3 µs measured on a shared VM":      "3 µs measured",
		"averaged 650k msgs/s":                               "averaged 650k msgs/s",
		"costs 3 µs, benchmarked elsewhere":                  "",
		// Not lab notes.
		"default 100 Mbit/s":                               "",
		"the bottleneck's rate (default 100 Mbit/s)":       "",
		"measured (default 10 ms; negative: none)":         "",
		"200 ms as stacks ship): a measured RTO is SRTT +": "",
		"RFC 9260 §6.2: within 200 ms of the arrival":      "",
		"%.2f Gbit/s":                                   "",
		"func (r *StreamResult) Gbps() float64":         "",
		`"rtt=50ms,loss=0.1%,rate=100M"`:                "",
		"2006-01-02 15:04 UTC":                          "",
		"0 means DefaultReaderIdle (100 ms)":            "",
		"RFC 5040 §5.3, RFC 2026-style text":            "",
		"linux-image-6.1.0-NN-cloud-amd64":              "",
		"1500 octets every 60 µs: 200 Mbit/s offered":   "",
		"the path on which a 1 s outage is measured":    "",
		"the mean of each run is what the table prints": "",
	} {
		got, ok := labNote(text)
		if want == "" {
			assert.False(t, ok, "%q: found %q", text, got)
			continue
		}
		assert.True(t, ok, text)
		assert.Equal(t, want, got, text)
	}
}

// TestNoLabNotesInGoSource fails on a dated or measured figure in a
// comment of any Go file, or in a string literal of a non-test file (a
// test's literals are its inputs and expected outputs): measurements
// belong in docs/benchmarks.md and the notes beside it, not in the code.
func TestNoLabNotesInGoSource(t *testing.T) {
	var found []string
	report := func(gf goFile, pos token.Pos, kind, text string) {
		if m, ok := labNote(text); ok {
			found = append(found, fmt.Sprintf("%s:%d: %s: %q", gf.rel, gf.fset.Position(pos).Line, kind, m))
		}
	}
	for _, gf := range moduleFiles(t) {
		for _, cg := range gf.f.Comments {
			report(gf, cg.Pos(), "comment", cg.Text())
		}
		if gf.test {
			continue
		}
		ast.Inspect(gf.f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				report(gf, lit.Pos(), "string", lit.Value)
			}
			return true
		})
	}
	assert.Empty(t, found, "lab notes in Go source (move them to docs/):\n%s", strings.Join(found, "\n"))
}
