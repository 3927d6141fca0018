// Command rawbatch converts folders of camera RAW files (DNG, CR3, ARW, NEF
// and every other format LibRaw reads) to finished images.
//
// Exit status: 0 every file converted; 3 one or more files failed; 1 the run
// could not start (bad flags, unreadable config, unwritable output
// directory); 130 interrupted by SIGINT or SIGTERM.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// run executes the command line args and returns the process exit status.
func run(args []string) int {
	// Signals first, before cobra parses anything: convert takes them
	// (watchInterrupts), the other commands give them back.
	early := installSignals()
	defer early.release()
	if startHook != nil {
		startHook(early)
	}
	root := newRootCmd()
	root.SetArgs(args)
	err := root.ExecuteContext(withEarlySignals(context.Background(), early))
	code := exitCode(err)
	if err != nil && code == ExitUsage {
		fmt.Fprintf(root.ErrOrStderr(), "rawbatch: %v\n", err)
	}
	return code
}
