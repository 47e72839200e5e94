package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/vmtest"
)

// TestVersionFromMakefile builds the command as `make cli` does and
// checks that --version names git describe's version and the commit
// (issue 48: not "sctp-rdma (devel)" without a commit).
func TestVersionFromMakefile(t *testing.T) {
	if testing.Short() {
		t.Skip("full tier only (make test): needs make, git and a build of the CLI")
	}
	root, err := vmtest.RepoRoot()
	require.NoError(t, err)
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", root}, args...)...).Output()
		require.NoError(t, err, "git %v", args)
		return strings.TrimSpace(string(out))
	}
	head := git("rev-parse", "HEAD")
	describe := git("describe", "--tags", "--always", "--dirty")
	bin := filepath.Join(t.TempDir(), "sctp-rdma")
	out, err := exec.Command("make", "-s", "-C", root, "cli", "BIN="+bin).CombinedOutput()
	require.NoError(t, err, "make cli: %s", out)
	v, err := exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	line := strings.TrimSpace(string(v))
	t.Log(line)
	assert.True(t, strings.HasPrefix(line, "sctp-rdma "+describe+" (commit "+head[:12]), line)
	assert.NotContains(t, line, "devel")
	assert.NotContains(t, line, "unknown")
}

// TestVersionString: the ldflags' version and commit win over the build
// information; without a commit, the line says why.
func TestVersionString(t *testing.T) {
	defer func(v, c string) { version, commit = v, c }(version, commit)
	version, commit = "v1.2.3", "0123456789abcdef0123"
	assert.Regexp(t, `^sctp-rdma v1\.2\.3 \(commit 0123456789ab(, modified)?\) go1\.`, versionString())
	version, commit = "", ""
	s := versionString()
	assert.True(t, strings.HasPrefix(s, "sctp-rdma "), s)
	assert.Contains(t, s, "commit ", s)
}

// TestProjectFiles: the license, the changelog and the contribution rules
// a user and a contributor look for are there and say what they must.
func TestProjectFiles(t *testing.T) {
	root, err := vmtest.RepoRoot()
	require.NoError(t, err)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err, name)
		return string(b)
	}
	lic := read("LICENSE")
	assert.True(t, strings.HasPrefix(lic, "MIT License\n"), "LICENSE is the MIT license")
	assert.Contains(t, lic, "Copyright (c) 2026 The sctp-rdma authors")
	assert.Contains(t, lic, "THE SOFTWARE IS PROVIDED \"AS IS\"")
	cl := read("CHANGELOG.md")
	for _, want := range []string{"Keep a Changelog", "## [Unreleased]", "## [0.1.0]", "### Added", "[0.1.0]: "} {
		assert.Contains(t, cl, want, "CHANGELOG.md")
	}
	co := read("CONTRIBUTING.md")
	for _, want := range []string{"make test", "-short", "72 characters", "TestRFC9260_6_2", "copying their code is not"} {
		assert.Contains(t, co, want, "CONTRIBUTING.md")
	}
	mk := read("Makefile")
	for _, want := range []string{"release:", "GOARCH=$$arch", "RELEASE_ARCHS ?= amd64 arm64", "sha256sum", "-X main.version=$(VERSION)"} {
		assert.Contains(t, mk, want, "Makefile")
	}
}
