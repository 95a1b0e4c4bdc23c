// agent-sandbox-tools: the harness's own programs inside a sandbox, as one static binary that the
// hands worker mounts read-only into every container (/opt/agent/bin/agent-sandbox-tools). It needs
// nothing from the image: no python3, no node, not even a libc.
//
//	executor                 runs the harness's commands on request over stdin/stdout (executor.go)
//	run <runBase> ...        the run wrapper: one tool command, its identity, output and exit status
//	                         kept where a later attempt finds them (run.go)
//	checkpoint-probe <margin> whether the workspace changed since the last full checkpoint (probe.go)
//	forward <port> <socket>  the sandbox's end of the egress proxy: 127.0.0.1:<port> -> <socket> (forward.go)
//	read-file <request>      the file tools (readfile.go, writefile.go, editfile.go): <request> is
//	write-file <request>     a JSON object, or @<file> holding one; they print the result for the
//	edit-file <request>      model and exit 0 (a result) or 1 (a tool error, its message printed)
//
// Standard library only, so `go build` works offline.
package main

import (
	"fmt"
	"os"
)

const usage = `usage: agent-sandbox-tools executor
       agent-sandbox-tools run <runBase> <outLink> <timeout s> <cap> <command> <journal> <head> <started> <mode> [args...]
       agent-sandbox-tools checkpoint-probe <margin µs> [pattern...]
       agent-sandbox-tools forward <port> <unix socket>
       agent-sandbox-tools read-file|write-file|edit-file <JSON request | @file>`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "executor":
		os.Exit(runExecutor())
	case "checkpoint-probe":
		os.Exit(checkpointProbe(args))
	case "forward":
		if len(args) != 2 {
			break
		}
		os.Exit(forward(args[0], args[1]))
	case "read-file":
		if len(args) == 1 {
			os.Exit(readFile(args[0]))
		}
	case "write-file":
		if len(args) == 1 {
			os.Exit(writeFile(args[0]))
		}
	case "run":
		os.Exit(runWrapper(args))
	case "edit-file":
		if len(args) == 1 {
			os.Exit(editFile(args[0]))
		}
	}
	fmt.Fprintln(os.Stderr, usage)
	os.Exit(2)
}
