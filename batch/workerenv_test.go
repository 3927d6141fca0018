package batch

import (
	"os"
	"strings"
	"testing"
)

// TestWorkerMallocTunables: a worker process starts with glibc's malloc
// tuned for files one after another (workerMalloc in GLIBC_TUNABLES), a
// user's own tunables after it (so theirs win), and no other variable
// lost.
func TestWorkerMallocTunables(t *testing.T) {
	t.Setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2")
	t.Setenv("RAWBATCH_TEST_ENV_KEPT", "yes")
	cmd, stdin, stdout, err := startChild(os.Args[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close() // the worker exits at the end of its input
		stdout.Close()
		cmd.Wait()
	}()
	// The environment it was started with (glibc's start-up rewrites
	// GLIBC_TUNABLES in the process's own copy once it has read it).
	env := map[string]string{}
	for _, kv := range cmd.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	if want := workerMalloc + ":glibc.malloc.arena_max=2"; env["GLIBC_TUNABLES"] != want {
		t.Errorf("worker's GLIBC_TUNABLES %q, want %q", env["GLIBC_TUNABLES"], want)
	}
	if env["RAWBATCH_TEST_ENV_KEPT"] != "yes" || env["GOTRACEBACK"] != "none" {
		t.Errorf("worker's environment lost a variable: %q %q", env["RAWBATCH_TEST_ENV_KEPT"], env["GOTRACEBACK"])
	}
	if got := workerEnv([]string{"A=1"}); strings.Join(got, " ") != "A=1 GLIBC_TUNABLES="+workerMalloc+" GOTRACEBACK=none" {
		t.Errorf("workerEnv without tunables of the user's: %q", got)
	}
}
