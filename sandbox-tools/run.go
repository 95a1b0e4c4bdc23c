// The run wrapper: runs one tool command so that its identity, output and exit status survive the
// caller. activities/hands/scripts.ts documents the files it keeps under the run base and the lines it
// prints; activities/hands/run-wrapper.ts sends its arguments:
//
//	run <runBase> <outLink> <timeout seconds> <capture cap> <command> <journal path> <journal head>
//	    <started event> <fresh|fresh:<legacy dir>|append> [args of the command...]
//
// Per call it is this process and the command's shell, nothing else: the attempt is claimed with one
// mkdir, every record is written by rename, the output is captured here, the watchdog is a timer,
// the sandbox's resource counters and free space are read directly, and the command's shell holds
// before the command until its identity is on record (startCommand).
//
// It runs as the journal store's writer (root with only the capabilities to switch to the agent and
// signal its processes) and keeps the records where the agent cannot write; the command runs as the
// agent (uid 1000, no supplementary groups, no capabilities), and the copy of the output into the
// workspace is made with the agent's identity.
//
// It must finish its work when the sandbox's pid limit is reached (a fork bomb in the command), and
// the Go runtime cannot survive failing to start a thread it needs (it wants one when a goroutine sits
// in a system call while another could run). So it runs on one P, learns of its child's end through
// SIGCHLD (never a blocking wait), and starts its spare threads before the command starts: the
// runtime keeps idle threads and takes one of those before it makes a new one.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

const (
	// agentID is the uid and gid of the agent, whom the command runs as.
	agentID = 1000
	// setupFailed is the exit status when no attempt could be set up (the caller sees no result).
	setupFailed = 90
	// maxAttempts bounds the attempt directories of one run base.
	maxAttempts = 1000
	// killGrace is how long a timed-out group has between TERM and KILL.
	killGrace  = 2 * time.Second
	chunkBytes = 1 << 16
	// notStarted is the exit status when the command could not be started (no process).
	notStarted = 126
	workspace  = "/workspace"
)

type runRequest struct {
	base, link string
	timeout    time.Duration
	capBytes   int64
	command    string
	journal    string
	head       string
	started    string
	fresh      bool
	legacy     string
	args       []string
}

func parseRunRequest(argv []string) (runRequest, error) {
	if len(argv) < 9 {
		return runRequest{}, errors.New("expected 9 arguments before the command's own")
	}
	r := runRequest{base: argv[0], link: argv[1], command: argv[4], journal: argv[5], head: argv[6], started: argv[7], args: argv[9:]}
	if r.base == "" {
		return r, errors.New("runBase: empty")
	}
	seconds, err := strconv.ParseFloat(argv[2], 64)
	if err != nil || seconds <= 0 {
		return r, fmt.Errorf("timeout: %q is not a positive number of seconds", argv[2])
	}
	r.timeout = time.Duration(seconds * float64(time.Second))
	if r.capBytes, err = strconv.ParseInt(argv[3], 10, 64); err != nil || r.capBytes < 0 {
		return r, fmt.Errorf("capture cap: %q is not a byte count", argv[3])
	}
	switch mode := argv[8]; {
	case mode == "fresh":
		r.fresh = true
	case strings.HasPrefix(mode, "fresh:"):
		r.fresh, r.legacy = true, strings.TrimPrefix(mode, "fresh:")
	case mode != "append":
		return r, fmt.Errorf("mode: %q is not fresh, fresh:<dir> or append", mode)
	}
	return r, nil
}

func runWrapper(argv []string) int {
	r, err := parseRunRequest(argv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent-sandbox-tools run:", err)
		return 2
	}
	runtime.GOMAXPROCS(1)
	// It allocates little and nothing per chunk of output: the collector runs only near the limit.
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(64 << 20)
	warmThreads(spareThreads)
	syscall.Umask(0o022)
	if err := os.MkdirAll(r.base, 0o777); err != nil {
		return setupFailed
	}
	// Claim an attempt directory atomically. `fresh` may only take attempt 1: when it is taken, an
	// earlier attempt of this call exists and the caller must consult the journal instead of running.
	n := 1
	if r.fresh {
		if (r.legacy != "" && isDir(r.legacy+"/1")) || os.Mkdir(r.base+"/1", 0o777) != nil {
			os.Stdout.WriteString("@@agent-journal\n")
			if f, err := os.Open(r.journal); r.journal != "" && err == nil {
				io.Copy(os.Stdout, f)
				f.Close()
			}
			return 0
		}
	} else {
		for os.Mkdir(attemptDir(r.base, n), 0o777) != nil {
			if n++; n > maxAttempts {
				return setupFailed
			}
		}
	}
	d := attemptDir(r.base, n)
	me := os.Getpid()
	os.WriteFile(d+"/wrapper", []byte(strconv.Itoa(me)+"\n"), 0o644)

	// The journal's events so far, without the closing `]}`.
	events := ""
	if r.journal != "" {
		if dir := filepath.Dir(r.journal); !isDir(dir) && os.MkdirAll(dir, 0o777) != nil {
			return setupFailed
		}
		if !r.fresh {
			if content, err := os.ReadFile(r.journal); err == nil && len(content) > 0 {
				events = strings.TrimSuffix(string(content), "]}") + ","
			}
		}
		if events == "" {
			events = r.head
		}
		host, _ := os.Hostname()
		events += strings.TrimSuffix(r.started, "}") +
			fmt.Sprintf(`,"attempt":%d,"runDir":%s,"wrapperPid":%d,"container":%s,"at":"%s"}`, n, quote(d), me, quote(host), stamp())
		writeJournal(r.journal, events)
	}
	pidsBefore, oomBefore := resourceCounters()

	out, err := os.OpenFile(d+"/out", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return setupFailed
	}
	output, leader, err := startCommand(r, d, n)
	if err != nil {
		fmt.Fprintf(out, "agent-sandbox-tools: could not start the command: %s\n", describe(err))
	}
	if leader != nil {
		// The command waits for this go-ahead (startupScript): from here on it may run, and its
		// identity is already on record.
		startTime, err := processStartTime(leader.pid)
		if err == nil {
			err = writeAtomic(d+"/pid", fmt.Sprintf("%d %d\n", leader.pid, startTime), me)
		}
		if err != nil {
			// Without its pid file the command must not run: the go-ahead's pipe closes unwritten.
			fmt.Fprintf(out, "agent-sandbox-tools: could not record the command's identity: %s\n", describe(err))
			leader.goAhead.Close()
		} else {
			if r.journal != "" {
				writeJournal(r.journal, events+fmt.Sprintf(`,{"type":"process","pid":%d,"pgid":%d,"startTime":%d,"at":"%s"}`,
					leader.pid, leader.pid, startTime, stamp()))
			}
			os.Stdout.WriteString(fmt.Sprintf("@@agent-pid %d %d\n", leader.pid, n))
			leader.goAhead.WriteString("go\n")
			leader.goAhead.Close()
		}
	}
	captured := make(chan capture, 1)
	draining := output != nil
	if draining {
		go func() { captured <- captureOutput(output, out, r.capBytes) }()
	}
	var exited chan syscall.WaitStatus
	if leader != nil {
		exited = leader.exited
	}
	code, counts := notStarted, capture{}
	waiting := leader != nil
	timeout := time.NewTimer(r.timeout)
	var grace <-chan time.Time
	for waiting || draining {
		select {
		case status := <-exited:
			code, waiting = exitCode(status), false
		case counts = <-captured:
			draining = false
		case <-timeout.C:
			if leader != nil {
				os.WriteFile(d+"/timedout", nil, 0o644)
				syscall.Kill(-leader.pid, syscall.SIGTERM)
				grace = time.After(killGrace)
			}
		case <-grace:
			syscall.Kill(-leader.pid, syscall.SIGKILL)
			grace = nil
		}
	}
	timeout.Stop()
	out.Close()

	pid, startTime := readPidFile(d + "/pid")
	timedOut := exists(d + "/timedout")
	cancelled := exists(d + "/cancelled")
	pidsAfter, oomAfter := resourceCounters()
	// The pid limit refused forks: what the command left running holds the sandbox's pids, so end it
	// (otherwise nothing, not even the next call, could start).
	if pidsAfter > pidsBefore && pid != 0 {
		syscall.Kill(-pid, syscall.SIGKILL)
	}
	os.WriteFile(d+"/dropped", []byte(fmt.Sprintf("%d %d", counts.kept, counts.dropped)), 0o644)
	free, size := int64(-1), int64(-1)
	var fs syscall.Statfs_t
	if syscall.Statfs(workspace, &fs) == nil {
		block := fs.Frsize
		if block == 0 {
			block = fs.Bsize
		}
		free, size = int64(fs.Bavail)*block, int64(fs.Blocks)*block
	}
	// The model reads long output back from the workspace: the copy is made as the agent (no output, no
	// copy: nothing would point the model at it).
	outputPath := d + "/out"
	if r.link != "" && counts.kept > 0 && copyAsAgent(outputPath, r.link) == nil {
		outputPath = r.link
	}
	result := fmt.Sprintf(`{"exitCode":%d,"outputBytes":%d,"droppedBytes":%d,"timedOut":%t,"cancelled":%t,"pid":%d,"startTime":%d,`+
		`"finishedAt":"%s","pidLimitHits":%d,"oomKills":%d,"workspaceFreeBytes":%d,"workspaceBytes":%d,"outputPath":%s}`,
		code, counts.kept, counts.dropped, timedOut, cancelled, pid, startTime, stamp(),
		pidsAfter-pidsBefore, oomAfter-oomBefore, free, size, quote(outputPath))
	writeAtomic(d+"/exit", result, me)
	if r.journal != "" {
		if pid != 0 {
			events += fmt.Sprintf(`,{"type":"process","pid":%d,"pgid":%d,"startTime":%d}`, pid, pid, startTime)
		}
		events += fmt.Sprintf(`,{"type":"finished","attempt":%d,"outputPath":%s,"result":%s}`, n, quote(outputPath), result)
		writeJournal(r.journal, events)
	}
	os.Stdout.WriteString("@@agent-exit " + result + "\n")
	if counts.kept > 0 {
		if f, err := os.Open(d + "/out"); err == nil {
			io.Copy(os.Stdout, f)
			f.Close()
		}
	}
	return 0
}

// spareThreads is more than the wrapper's goroutines that can be in a system call at once (the main
// one, the capture, the signal watcher, a thread with the agent's identity) plus the runtime's own.
const spareThreads = 8

// warmThreads makes the runtime start n threads now and keep them idle: each goroutine holds a thread
// of its own (locked) until all have one, and then lets it go.
func warmThreads(n int) {
	var started sync.WaitGroup
	release := make(chan struct{})
	var done sync.WaitGroup
	for i := 0; i < n; i++ {
		started.Add(1)
		done.Add(1)
		go func() {
			runtime.LockOSThread()
			started.Done()
			<-release
			runtime.UnlockOSThread()
			done.Done()
		}()
	}
	started.Wait()
	close(release)
	done.Wait()
}

// session is the command's process, the leader of a session (and process group) of its own.
type session struct {
	pid     int
	exited  chan syscall.WaitStatus
	goAhead *os.File
}

// startCommand starts `bash -c <command> agent-tool <args...>` as the agent in a session of its own,
// with /dev/null as stdin and stdout and stderr on the returned pipe. The shell holds before the
// command until it reads the go-ahead: its startup file (BASH_ENV, on a pipe) waits for a line on
// another pipe whose writing end the wrapper keeps, and exits without running anything at the pipe's
// end. So the command never runs before its identity is recorded, nor if the wrapper dies first —
// and no other process is forked for it. The pipes are the agent's (made with its file-system
// identity), since the shell opens the startup file's by its /dev/fd path.
func startCommand(r runRequest, d string, attempt int) (*os.File, *session, error) {
	var output, script, goAhead [2]int
	err := asAgent(func() error {
		for _, p := range []*[2]int{&output, &script, &goAhead} {
			if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("a pipe: %w", err)
	}
	syscall.SetNonblock(output[0], true)
	captureEnd := os.NewFile(uintptr(output[0]), "output")
	writeAll(script[1], []byte(startupScript(os.Getenv("BASH_ENV"))))
	syscall.Close(script[1])
	closeChildEnds := func() { closeAll(output[1], script[0], goAhead[0]) }
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		closeChildEnds()
		syscall.Close(goAhead[1])
		return captureEnd, nil, err
	}
	defer devnull.Close()
	bash, err := exec.LookPath("bash")
	if err != nil {
		closeChildEnds()
		syscall.Close(goAhead[1])
		return captureEnd, nil, err
	}
	env := make([]string, 0, len(os.Environ())+2)
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != "BASH_ENV" && name != "AGENT_ATTEMPT" {
			env = append(env, kv)
		}
	}
	env = append(env, "BASH_ENV=/dev/fd/3", "AGENT_ATTEMPT="+strconv.Itoa(attempt))
	children := make(chan os.Signal, 1)
	signal.Notify(children, syscall.SIGCHLD)
	pid, err := syscall.ForkExec(bash, append([]string{"bash", "-c", r.command, "agent-tool"}, r.args...), &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{devnull.Fd(), uintptr(output[1]), uintptr(output[1]), uintptr(script[0]), uintptr(goAhead[0])},
		Sys: &syscall.SysProcAttr{
			Setsid:     true,
			Credential: &syscall.Credential{Uid: agentID, Gid: agentID, Groups: []uint32{}},
		},
	})
	closeChildEnds()
	if err != nil {
		syscall.Close(goAhead[1])
		signal.Stop(children)
		return captureEnd, nil, err
	}
	s := &session{pid: pid, exited: make(chan syscall.WaitStatus, 1), goAhead: os.NewFile(uintptr(goAhead[1]), "go-ahead")}
	go reapLeader(pid, children, s.exited)
	return captureEnd, s, nil
}

// startupScript is the shell's startup file: it waits for the go-ahead, closes both pipes, and then
// restores what the environment's own BASH_ENV would have done.
func startupScript(bashEnv string) string {
	script := "read -r -u 4 agent_go; exec 3<&- 4<&-; [ \"$agent_go\" = go ] || exit 125; unset agent_go\n"
	if bashEnv == "" {
		return script + "unset BASH_ENV\n"
	}
	return script + "export BASH_ENV=" + shellQuote(bashEnv) + "\n[ -r \"$BASH_ENV\" ] && . \"$BASH_ENV\"\n"
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// asAgent runs fn on a thread of its own with the agent's file-system identity (uid, gid, no
// supplementary groups): what it creates is the agent's, and it may open only what the agent may.
// The identity is switched for that thread only and switched back; a thread that cannot switch back
// ends with its goroutine.
func asAgent(fn func() error) error {
	groups, err := syscall.Getgroups()
	if err != nil {
		return err
	}
	restored := make([]uint32, len(groups))
	for i, g := range groups {
		restored[i] = uint32(g)
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := threadFsIdentity(agentID, agentID, nil); err != nil {
			done <- err
			return
		}
		err := fn()
		if threadFsIdentity(0, 0, restored) == nil {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}

type capture struct{ kept, dropped int64 }

// captureOutput copies the command's output to the file as it arrives (so a kill loses nothing
// already written), keeps the first capBytes, counts and drops the rest (still reading, so the
// command never blocks on a full pipe), until every writer has closed it.
func captureOutput(from *os.File, to *os.File, capBytes int64) capture {
	var c capture
	buf := make([]byte, chunkBytes)
	broken := false
	for {
		n, err := from.Read(buf)
		if n > 0 {
			take := min(int64(n), max(capBytes-c.kept, 0))
			if broken {
				take = 0
			}
			if take > 0 {
				written, werr := to.Write(buf[:take])
				take, broken = int64(written), werr != nil
			}
			c.kept += take
			c.dropped += int64(n) - take
		}
		if err != nil {
			from.Close()
			return c
		}
	}
}

// reapLeader waits for the command's end on SIGCHLD, without a blocking wait.
func reapLeader(pid int, children <-chan os.Signal, exited chan<- syscall.WaitStatus) {
	for range children {
		for {
			var status syscall.WaitStatus
			got, err := syscall.Wait4(pid, &status, syscall.WNOHANG, nil)
			if err == syscall.EINTR {
				continue
			}
			if got == pid {
				exited <- status
				return
			}
			break
		}
	}
}

func exitCode(status syscall.WaitStatus) int {
	if status.Signaled() {
		return 128 + int(status.Signal())
	}
	return status.ExitStatus()
}

// copyAsAgent copies the output file into the workspace as the agent would (a link it planted there
// leads nowhere the agent could not write).
func copyAsAgent(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	return asAgent(func() error { return copyFile(src, to) })
}

// threadFsIdentity sets the calling thread's supplementary groups, fsgid and fsuid (raw system
// calls: Go's own wrappers change every thread of the process).
func threadFsIdentity(uid, gid int, groups []uint32) error {
	count := len(groups)
	if count == 0 {
		groups = []uint32{0} // any valid address: the kernel reads no entry
	}
	_, _, errno := syscall.RawSyscall(syscall.SYS_SETGROUPS, uintptr(count), uintptr(unsafe.Pointer(&groups[0])), 0)
	runtime.KeepAlive(groups)
	if errno != 0 {
		return errno
	}
	syscall.RawSyscall(syscall.SYS_SETFSGID, uintptr(gid), 0, 0)
	syscall.RawSyscall(syscall.SYS_SETFSUID, uintptr(uid), 0, 0)
	// setfsuid and setfsgid report no error: -1 (no change) returns the identity now in force.
	nowGid, _, _ := syscall.RawSyscall(syscall.SYS_SETFSGID, ^uintptr(0), 0, 0)
	nowUid, _, _ := syscall.RawSyscall(syscall.SYS_SETFSUID, ^uintptr(0), 0, 0)
	if int(nowGid) != gid || int(nowUid) != uid {
		return fmt.Errorf("file-system identity is %d:%d, not %d:%d", nowUid, nowGid, uid, gid)
	}
	return nil
}

func copyFile(src *os.File, to string) error {
	if dir := filepath.Dir(to); !isDir(dir) {
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return err
		}
	}
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	return err
}

// resourceCounters reads the sandbox's cgroup counters (v1 or v2): forks the pid limit refused, and
// processes killed for memory.
func resourceCounters() (pidLimitHits, oomKills int64) {
	return counter("max", "/sys/fs/cgroup/pids/pids.events", "/sys/fs/cgroup/pids.events"),
		counter("oom_kill", "/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events")
}

// counter is the value of `key` in the first of the files that can be read (0 when none has it).
func counter(key string, files ...string) int64 {
	for _, file := range files {
		content, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(content), "\n") {
			if k, v, ok := strings.Cut(line, " "); ok && k == key {
				value, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				return value
			}
		}
		return 0
	}
	return 0
}

// processStartTime is field 22 of /proc/<pid>/stat: with the pid, it names one process for good.
func processStartTime(pid int) (int64, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// Fields 3 on follow the command name's closing parenthesis.
	end := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat[end+1:]))
	if end < 0 || len(fields) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return strconv.ParseInt(fields[19], 10, 64)
}

// readPidFile reads "<pid> <start time>" (zeros when it was never written).
func readPidFile(path string) (pid int, startTime int64) {
	content, err := os.ReadFile(path)
	if err != nil {
		return 0, 0
	}
	fields := strings.Fields(string(content))
	if len(fields) != 2 {
		return 0, 0
	}
	pid, _ = strconv.Atoi(fields[0])
	startTime, _ = strconv.ParseInt(fields[1], 10, 64)
	return pid, startTime
}

// writeJournal replaces the journal with the events and the closing `]}`, by rename.
func writeJournal(path, events string) {
	writeAtomic(path, events+"]}", os.Getpid())
}

// writeAtomic writes a file through a temporary one renamed into place.
func writeAtomic(path, content string, pid int) error {
	tmp := path + "." + strconv.Itoa(pid) + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func writeAll(fd int, b []byte) {
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return
		}
		b = b[n:]
	}
}

// stamp is the time in UTC with milliseconds, as the journal's events carry it.
func stamp() string {
	return time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
}

func attemptDir(base string, n int) string { return base + "/" + strconv.Itoa(n) }
