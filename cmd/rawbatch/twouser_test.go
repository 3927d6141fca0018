package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rawbatch/rawbatch/batch"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// A second local user ("attacker") who may write into a group-shared
// OUTDIR, or into /dev/shm, plants symbolic links there; the victim's run
// must leave the link's target untouched and say what it refused. The
// users are real (useradd), so the ownership checks are the kernel's: the
// test needs root, and skips without it unless CI=true.

// testUser is a user made for one test (useradd), removed at its end.
type testUser struct {
	name     string
	uid, gid uint32
	groups   []uint32
}

// needRoot skips the test when not root, except under CI, where it fails.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("the two-user tests need root (useradd); under CI they must run")
	}
	t.Skip("needs root to create a second user (useradd)")
}

// addGroup creates a group for the test and removes it at its end.
func addGroup(t *testing.T, name string) uint32 {
	t.Helper()
	if out, err := exec.Command("groupadd", name).CombinedOutput(); err != nil {
		t.Fatalf("groupadd %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() { exec.Command("groupdel", name).Run() })
	g, err := user.LookupGroup(name)
	if err != nil {
		t.Fatal(err)
	}
	gid, _ := strconv.Atoi(g.Gid)
	return uint32(gid)
}

// addUser creates a user (no home, own primary group, also in groups) and
// removes it at the test's end.
func addUser(t *testing.T, name string, groups ...string) testUser {
	t.Helper()
	args := []string{"-M", "-U", "-s", "/bin/sh"}
	if len(groups) > 0 {
		args = append(args, "-G", strings.Join(groups, ","))
	}
	if out, err := exec.Command("useradd", append(args, name)...).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() { exec.Command("userdel", name).Run() })
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	tu := testUser{name: name, uid: uint32(uid), gid: uint32(gid)}
	// The user's default stage cache, made by its runs.
	t.Cleanup(func() { os.RemoveAll(fmt.Sprintf("/dev/shm/rawbatch-%d", uid)) })
	gids, _ := u.GroupIds()
	for _, g := range gids {
		n, _ := strconv.Atoi(g)
		tu.groups = append(tu.groups, uint32(n))
	}
	return tu
}

// as runs name args as u (umask 002, as in a group-shared folder),
// returning its exit status and combined output.
func (u testUser) as(t *testing.T, env []string, name string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", `umask 002 && exec "$@"`, "sh", name)
	cmd.Args = append(cmd.Args, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.uid, Gid: u.gid, Groups: u.groups}}
	cmd.Env = append([]string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/", "RAWBATCH_MIN_AGE=0s", "XDG_CONFIG_HOME=/nonexistent"}, env...)
	cmd.Dir = "/"
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	} else if err != nil {
		t.Fatalf("running %s as %s: %v", name, u.name, err)
	}
	return 0, out.String()
}

// twoUserSetup makes a victim and an attacker who share a group, a
// rawbatch binary and an input both may read, the victim's private file
// (mode 0600 in a 0700 directory of hers) and a group-shared OUTDIR
// (setgid, mode 2775, owned by the victim and the group).
type twoUser struct {
	victim, attacker testUser
	bin, in, out     string
	secretDir        string
	secret           string
}

const secretText = "the victim's private data\n"

func newTwoUser(t *testing.T) *twoUser {
	needRoot(t)
	bin, err := exec.LookPath("rawbatch") // the test binary as rawbatch (TestMain)
	if err != nil {
		t.Skipf("no rawbatch command: %v", err)
	}
	suffix := strconv.Itoa(os.Getpid() % 100000)
	share := "rbshare" + suffix
	shareGID := addGroup(t, share)
	tu := &twoUser{
		victim:   addUser(t, "rbvictim"+suffix, share),
		attacker: addUser(t, "rbattack"+suffix, share),
	}
	// t.TempDir is private to root: a directory both users may enter.
	root, err := os.MkdirTemp("", "rawbatch-twouser-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(root, 0o755))
	tu.bin = filepath.Join(root, "bin", "rawbatch")
	must(os.Mkdir(filepath.Dir(tu.bin), 0o755))
	data, err := os.ReadFile(bin)
	must(err)
	must(os.WriteFile(tu.bin, data, 0o755))
	tu.in = filepath.Join(root, "in")
	must(os.Mkdir(tu.in, 0o755))
	w, h, scene := synthdng.ChartScene(synthdng.Chart{W: 48, H: 32, Background: [3]float64{0.18, 0.18, 0.18}}, 1, synthdng.DefaultColorMatrix, 1)
	must(synthdng.WriteFile(filepath.Join(tu.in, "a.dng"), synthdng.Spec{Width: w, Height: h, BlackLevel: 256, WhiteLevel: 16383, Orientation: 1, Scene: scene}))
	must(os.Chmod(filepath.Join(tu.in, "a.dng"), 0o644))
	tu.secretDir = filepath.Join(root, "victim-home")
	must(os.Mkdir(tu.secretDir, 0o700))
	tu.secret = filepath.Join(tu.secretDir, "secret.txt")
	must(os.WriteFile(tu.secret, []byte(secretText), 0o600))
	must(os.Chown(tu.secret, int(tu.victim.uid), int(tu.victim.gid)))
	must(os.Chown(tu.secretDir, int(tu.victim.uid), int(tu.victim.gid)))
	tu.out = filepath.Join(root, "shared")
	must(os.Mkdir(tu.out, 0o775))
	must(os.Chown(tu.out, int(tu.victim.uid), int(shareGID)))
	must(os.Chmod(tu.out, 0o775|os.ModeSetgid))
	return tu
}

// secretIntact fails the test when the victim's private file changed.
func (tu *twoUser) secretIntact(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(tu.secret)
	if err != nil || string(b) != secretText {
		t.Errorf("the victim's private file now holds %q (%v), want it untouched", b, err)
	}
}

// The attacker, a member of the group that shares OUTDIR, makes
// .rawbatch/locks and plants a link at the lock file of the victim's
// output, pointing to her private file; her run must not write into it.
func TestTwoUserPlantedLockSymlink(t *testing.T) {
	tu := newTwoUser(t)
	locks := filepath.Join(batch.MetaDir(tu.out), "locks")
	lockFile := filepath.Join(locks, lockFileName("a.jpg"))
	if st, out := tu.attacker.as(t, nil, "mkdir", "-p", locks); st != 0 {
		t.Fatalf("attacker mkdir: %s", out)
	}
	if st, out := tu.attacker.as(t, nil, "ln", "-s", tu.secret, lockFile); st != 0 {
		t.Fatalf("attacker ln: %s", out)
	}
	st, out := tu.victim.as(t, nil, tu.bin, "convert", "-q", tu.in, "-o", tu.out)
	t.Logf("victim's run: exit %d:\n%s", st, out)
	tu.secretIntact(t)
	if st == 0 || !strings.Contains(out, "symbolic link") || !strings.Contains(out, lockFile) {
		t.Errorf("victim's run: exit %d, output:\n%s\nwant a failure naming the planted link %s", st, out, lockFile)
	}
}

// The attacker, who may write into the shared OUTDIR, makes .rawbatch a
// link to a directory of the victim's: her run must refuse it and write
// nothing there.
func TestTwoUserSymlinkedMetaDir(t *testing.T) {
	tu := newTwoUser(t)
	meta := batch.MetaDir(tu.out)
	if st, out := tu.attacker.as(t, nil, "ln", "-s", tu.secretDir, meta); st != 0 {
		t.Fatalf("attacker ln: %s", out)
	}
	st, out := tu.victim.as(t, nil, tu.bin, "convert", "-q", tu.in, "-o", tu.out)
	t.Logf("victim's run: exit %d:\n%s", st, out)
	tu.secretIntact(t)
	if ents, _ := os.ReadDir(tu.secretDir); len(ents) != 1 {
		t.Errorf("the victim's directory now holds %d entries, want only her file", len(ents))
	}
	if st == 0 || !strings.Contains(out, "symbolic link") || !strings.Contains(out, meta) {
		t.Errorf("victim's run: exit %d, output:\n%s\nwant a refusal naming %s", st, out, meta)
	}
}

// The attacker replaces the victim's default cache directory
// (/dev/shm/rawbatch-UID, in a directory anyone may write to) with a link
// to an empty directory the victim owns: her run must not use it (the
// owner check is on the link, not its target), and says so.
func TestTwoUserSymlinkedCacheDir(t *testing.T) {
	tu := newTwoUser(t)
	shm := fmt.Sprintf("/dev/shm/rawbatch-%d", tu.victim.uid)
	if fi, err := os.Stat("/dev/shm"); err != nil || !fi.IsDir() {
		t.Skip("no /dev/shm")
	}
	os.RemoveAll(shm)
	t.Cleanup(func() { os.RemoveAll(shm) })
	empty := filepath.Join(tu.secretDir, "empty")
	if st, out := tu.victim.as(t, nil, "mkdir", "-m", "700", empty); st != 0 {
		t.Fatalf("victim mkdir: %s", out)
	}
	if st, out := tu.attacker.as(t, nil, "ln", "-s", empty, shm); st != 0 {
		t.Fatalf("attacker ln: %s", out)
	}
	st, out := tu.victim.as(t, nil, tu.bin, "convert", tu.in, "-o", tu.out)
	t.Logf("victim's run: exit %d:\n%s", st, out)
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("the victim's empty directory now holds %v", ents)
	}
	if !strings.Contains(out, shm) || !strings.Contains(out, "symbolic link") {
		t.Errorf("victim's run: exit %d, output:\n%s\nwant a warning naming the link %s", st, out, shm)
	}
	tu.secretIntact(t)
}

// lockFileName is the name of the lock file of output rel, as package
// lock names it (which cmd does not import): the first 32 hex digits of
// the SHA-256 of the key, and ".lock".
func lockFileName(rel string) string {
	sum := sha256.Sum256([]byte(batch.OutputLockKey(rel)))
	return hex.EncodeToString(sum[:])[:32] + ".lock"
}

// Ordinary sharing keeps working: a colleague in the group that shares
// OUTDIR made its .rawbatch, state and locks (under umask 002) and left a
// stale lock file of her own (a killed run) at the lock path of the
// victim's output; the victim's run converts (it replaces the stale file
// with one of its own rather than rewriting the colleague's).
func TestTwoUserGroupSharedStillWorks(t *testing.T) {
	tu := newTwoUser(t)
	colleague := tu.attacker
	meta := batch.MetaDir(tu.out)
	locks := filepath.Join(meta, "locks")
	lockFile := filepath.Join(locks, lockFileName("a.jpg"))
	if st, out := colleague.as(t, nil, "mkdir", "-p", locks, filepath.Join(meta, "state")); st != 0 {
		t.Fatalf("colleague mkdir: %s", out)
	}
	if st, out := colleague.as(t, nil, "sh", "-c", `echo '{"pid":1}' > "$1"`, "sh", lockFile); st != 0 {
		t.Fatalf("colleague's stale lock: %s", out)
	}
	st, out := tu.victim.as(t, nil, tu.bin, "convert", "-q", tu.in, "-o", tu.out)
	t.Logf("victim's run: exit %d:\n%s", st, out)
	if st != 0 {
		t.Errorf("victim's run in a group-shared OUTDIR: exit %d, want 0", st)
	}
	if _, err := os.Stat(filepath.Join(tu.out, "a.jpg")); err != nil {
		t.Error(err)
	}
	// And the colleague's next run, in what the victim made, works too.
	if err := os.Remove(filepath.Join(tu.out, "a.jpg")); err != nil {
		t.Fatal(err)
	}
	if st, out := colleague.as(t, nil, tu.bin, "convert", "-q", "--overwrite", tu.in, "-o", tu.out); st != 0 {
		t.Errorf("colleague's run after the victim's: exit %d:\n%s", st, out)
	}
	tu.secretIntact(t)
}

// In a folder anyone may write to (mode 1777, like /tmp), the attacker
// creates OUTDIR/.rawbatch first, owned by him and his own group, which
// the victim is not in: her run must refuse it rather than keep its
// records and locks where he controls them.
func TestTwoUserForeignMetaDir(t *testing.T) {
	tu := newTwoUser(t)
	if err := os.Chmod(tu.out, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tu.out, 0, 0); err != nil {
		t.Fatal(err)
	}
	meta := batch.MetaDir(tu.out)
	if st, out := tu.attacker.as(t, nil, "sh", "-c", `umask 0 && mkdir -p "$1/locks" "$1/state"`, "sh", meta); st != 0 {
		t.Fatalf("attacker mkdir: %s", out)
	}
	st, out := tu.victim.as(t, nil, tu.bin, "convert", "-q", tu.in, "-o", tu.out)
	t.Logf("victim's run: exit %d:\n%s", st, out)
	if st == 0 || !strings.Contains(out, meta) || !strings.Contains(out, "owned by uid") {
		t.Errorf("victim's run: exit %d, want a refusal naming %s and its owner", st, meta)
	}
	if _, err := os.Stat(filepath.Join(tu.out, "a.jpg")); err == nil {
		t.Error("the victim's run converted into an OUTDIR whose .rawbatch another user owns")
	}
}
