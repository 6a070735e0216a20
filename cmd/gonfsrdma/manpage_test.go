package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"
)

// TestManPage checks that gonfsrdma(8) names every visible command and
// every flag of each, and that groff formats it without a warning.
func TestManPage(t *testing.T) {
	page := mustRun(t, "man")
	var walk func(path string, c *cli.Command)
	walk = func(path string, c *cli.Command) {
		for _, sub := range c.VisibleCommands() {
			if sub.Name == "help" {
				continue
			}
			p := path + " " + sub.Name
			if !strings.Contains(page, `.SS "`+roff(p)) {
				t.Errorf("no section for %s", p)
			}
			for _, f := range sub.VisibleFlags() {
				if n := f.Names()[0]; n != "help" && !strings.Contains(page, `\fB`+roff(dashed(n))+`\fR`) {
					t.Errorf("%s: flag %s missing", p, dashed(n))
				}
			}
			walk(p, sub)
		}
	}
	walk("gonfsrdma", newApp())
	if !strings.Contains(page, `(default: ":2049")`) {
		t.Error("serve --listen's default is not in the page")
	}
	groff, err := exec.LookPath("groff")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("groff is needed to check the man page (Debian: groff-base)")
		}
		t.Skip("no groff")
	}
	cmd := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z")
	cmd.Stdin = strings.NewReader(page)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("groff: %v\n%s", err, stderr.String())
	}
}
