package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestPeersTable runs peers.sh with rawbatch alone over the files of
// testdata/raw (no realistic 24 MP set, so it stays small) and checks the page
// it rewrites: the text outside the markers is kept, the lines before the
// table name the rounds and the input set (the real files alone), and rawbatch's row counts every
// input's JPEG with ratios of 1 to itself.
func TestPeersTable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rawbatch and converts testdata/raw three times")
	}
	real, err := filepath.Glob(filepath.Join("..", "testdata", "raw", "*"))
	if err != nil || len(real) == 0 {
		t.Fatalf("testdata/raw: %v (%d files)", err, len(real))
	}
	doc := filepath.Join(t.TempDir(), "performance.md")
	const before, after = "# Title\n\nintro\n\n<!-- peers:begin -->\n", "<!-- peers:end -->\n\n## Caveats\n"
	if err := os.WriteFile(doc, []byte(before+"old table\n"+after), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "peers.sh")
	cmd.Env = append(os.Environ(), "PEERS_ONLY=rawbatch", "PEERS_REALSET=0", "PEERS_ROUNDS=3", "PEERS_DOC="+doc)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("peers.sh: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "peers: round "); n != 3 {
		t.Errorf("peers.sh ran %d rounds, want 3:\n%s", n, out)
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if !strings.HasPrefix(page, before) || !strings.HasSuffix(page, after) || strings.Contains(page, "old table") {
		t.Errorf("the page outside the markers changed, or the old table stayed:\n%s", page)
	}
	if !strings.Contains(page, "3 interleaved rounds, each peer timed on each input set") {
		t.Errorf("no line naming the rounds:\n%s", page)
	}
	if want := "**The " + strconv.Itoa(len(real)) + " files of testdata/raw**"; !strings.Contains(page, want) || strings.Contains(page, "6000×4000 files**") {
		t.Errorf("want one table, headed %q (no realistic set with PEERS_REALSET=0):\n%s", want, page)
	}
	row := regexp.MustCompile(`(?m)^\| rawbatch \| (\d+) \| ([0-9.]+) \| ([0-9.]+) \| (\d+) \| (\d+) \| 1\.00 \| 1\.00 \| 1\.00 \| (1\.00|-) \|$`).FindStringSubmatch(page)
	if row == nil {
		t.Fatalf("no rawbatch row with ratios 1.00:\n%s", page)
	}
	if row[1] != strconv.Itoa(len(real)) {
		t.Errorf("rawbatch wrote %s JPEGs in its worst round, want %d (one per file of testdata/raw)", row[1], len(real))
	}
	if row[2] == "0.0" || row[4] == "0" {
		t.Errorf("wall time %s s or max RSS %s MiB is zero: not measured", row[2], row[4])
	}
}
