package main

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// freeport NAME: set $NAME to a TCP port free on 127.0.0.1 (for a broker
// the script starts; queue_basic.txtar).
func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: freeport NAME")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	port := l.Addr().(*net.TCPAddr).Port
	ts.Check(l.Close())
	ts.Setenv(args[0], strconv.Itoa(port))
}

// waitport ADDR: wait until something accepts TCP connections on ADDR (a
// broker started in the background), for up to 60 s.
func cmdWaitPort(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: waitport HOST:PORT")
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", args[0], time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("nothing listens on %s after 60 s: %v", args[0], err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// setfrom NAME REGEXP: set $NAME to the first group of REGEXP's first
// match in the last command's standard output (a job id that dead list
// printed, for dead show); fail when it does not match.
func cmdSetFrom(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: setfrom NAME REGEXP")
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	m := re.FindStringSubmatch(ts.ReadFile("stdout"))
	if len(m) < 2 {
		ts.Fatalf("setfrom: %q does not match the standard output", args[1])
	}
	ts.Setenv(args[0], m[1])
}

// httpget URL STATUS: GET URL until it answers with the HTTP status
// STATUS (an endpoint starting, or a readiness changing), for up to 60 s;
// its body is then the standard output (for stdout). Fails when it never
// does, naming the last answer.
func cmdHTTPGet(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: httpget URL STATUS")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	client := &http.Client{Timeout: 10 * time.Second}
	last := "no answer"
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := client.Get(args[0])
		if err != nil {
			last = err.Error()
			continue
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			last = err.Error()
			continue
		}
		if resp.StatusCode == want {
			_, err := ts.Stdout().Write(body)
			ts.Check(err)
			return
		}
		last = resp.Status + ": " + string(body)
	}
	ts.Fatalf("GET %s: no status %d within 60 s; last: %s", args[0], want, last)
}
