// The sandbox's executor: runs the harness's commands on request, so a tool call costs no `docker
// exec`. The hands worker starts it as one long-running exec (as the journal store's writer, like the
// run wrapper) and holds the exec's stdin and stdout: that pipe is its only channel. It opens no
// socket and no file, so the agent (uid 1000, no capabilities) can neither reach it nor speak for it.
//
// Requests on stdin, one JSON object per line:
//
//	{"id": n, "argv": [...], "uid": u, "gid": g}   run argv (as uid:gid with no supplementary groups
//	                                                when given, else as the executor's own user)
//
// Replies on stdout, each a JSON header line, some followed by raw bytes:
//
//	{"t": "ready", "pid": p}            once, when it listens
//	{"id": n, "t": "o", "n": k}         the next k bytes are the command's stdout
//	{"id": n, "t": "e", "n": k}         the next k bytes are its stderr
//	{"id": n, "t": "x", "code": c}      it ended and its output is complete (c: exit status, 128 + signal)
//	{"id": n, "t": "f", "error": "..."} it could not be started (the pid limit, a missing program)
//	{"t": "bad-request", "error": "..."} a line that is not a request (the hands then drop the channel)
//
// A request to run this binary's own `checkpoint-probe` as the executor's own user is answered
// in-process (on a thread locked to it for the walk; see probe), with the same output and status:
// the probe runs on every turn, and a process of its own would cost more than its walk.
//
// Commands get /dev/null as stdin and the executor's environment and working directory: what a
// `docker exec` of the same container would give them. At the end of stdin (the worker is gone) it
// takes no more requests, lets the commands it runs finish, and exits.
//
// It must keep working when the sandbox's pid limit is reached (a fork bomb in a tool call), so it
// needs no thread per command: output is read through the runtime's poller and children are reaped
// on SIGCHLD with non-blocking wait4 calls, never by a blocking wait each.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"
)

// replies serialises everything written to stdout: a header and its payload are never interleaved
// with another reply. Once stdout fails (the worker is gone) it writes nothing more.
type replies struct {
	mu     sync.Mutex
	out    *os.File
	broken bool
}

func (r *replies) send(header string, payload []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.broken {
		return
	}
	buf := make([]byte, 0, len(header)+1+len(payload))
	buf = append(buf, header...)
	buf = append(buf, '\n')
	buf = append(buf, payload...)
	if _, err := r.out.Write(buf); err != nil {
		r.broken = true
	}
}

// command is one running request: it is complete once both pipes reached their end and the process
// was reaped, and only then is its end reported.
type command struct {
	id   string
	open int
	code int
	done bool
}

type executor struct {
	// self is the path this binary was started as (`checkpoint-probe` requests for it run in-process).
	self    string
	out     *replies
	devnull *os.File
	mu      sync.Mutex
	byPid   map[int]*command
	running sync.WaitGroup
}

func runExecutor() int {
	// A write to a closed stdout must fail (EPIPE) instead of killing the executor: the commands it
	// runs must still be drained and reaped after the worker is gone.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent-sandbox-tools executor:", err)
		return 1
	}
	e := &executor{self: selfPath(), out: &replies{out: os.Stdout}, devnull: devnull, byPid: map[int]*command{}}
	children := make(chan os.Signal, 1)
	signal.Notify(children, syscall.SIGCHLD)
	go func() {
		for range children {
			e.reap()
		}
	}()
	e.out.send(fmt.Sprintf(`{"t":"ready","pid":%d}`, os.Getpid()), nil)
	in := bufio.NewReaderSize(os.Stdin, 1<<16)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			break // the end of stdin; an unterminated last line is no request
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		e.handle(line)
	}
	e.running.Wait()
	return 0
}

type request struct {
	ID   json.RawMessage   `json:"id"`
	Argv []json.RawMessage `json:"argv"`
	UID  *int              `json:"uid"`
	GID  *int              `json:"gid"`
}

func (e *executor) handle(line []byte) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil || fields == nil {
		msg := "not a JSON object"
		if err != nil {
			msg = err.Error()
		}
		e.out.send(`{"t":"bad-request","error":`+quote(msg)+`}`, nil)
		return
	}
	var req request
	id := "null"
	if raw, ok := fields["id"]; ok {
		id = string(compact(raw))
	}
	if err := json.Unmarshal(line, &req); err != nil {
		e.failed(id, "bad request: "+err.Error())
		return
	}
	if req.Argv == nil {
		e.failed(id, `bad request: no "argv"`)
		return
	}
	argv := make([]string, len(req.Argv))
	for i, raw := range req.Argv {
		if err := json.Unmarshal(raw, &argv[i]); err != nil {
			argv[i] = string(compact(raw)) // a number or a literal, as its JSON text
		}
	}
	var cred *syscall.Credential
	if req.UID != nil {
		if req.GID == nil {
			e.failed(id, `bad request: "uid" without "gid"`)
			return
		}
		cred = &syscall.Credential{Uid: uint32(*req.UID), Gid: uint32(*req.GID), Groups: []uint32{}}
	}
	e.start(id, argv, cred)
}

func (e *executor) failed(id, why string) {
	e.out.send(`{"id":`+id+`,"t":"f","error":`+quote(why)+`}`, nil)
}

func (e *executor) start(id string, argv []string, cred *syscall.Credential) {
	if len(argv) == 0 {
		e.failed(id, "bad request: empty argv")
		return
	}
	program, err := exec.LookPath(argv[0])
	if err == nil && program == e.self && len(argv) > 1 && argv[1] == "checkpoint-probe" && ownIdentity(cred) {
		e.probe(id, argv[2:])
		return
	}
	if err != nil {
		why := describe(err)
		if errors.Is(err, exec.ErrNotFound) {
			why = "no such program in $PATH"
		}
		e.failed(id, fmt.Sprintf("%s: %s", argv[0], why))
		return
	}
	var stdout, stderr [2]int
	if err := pipe(&stdout); err != nil {
		e.failed(id, "a pipe: "+describe(err))
		return
	}
	if err := pipe(&stderr); err != nil {
		closeAll(stdout[0], stdout[1])
		e.failed(id, "a pipe: "+describe(err))
		return
	}
	cmd := &command{id: id, open: 2}
	// Started and registered under the lock the reaper takes, so it is known before it can be reaped.
	e.mu.Lock()
	pid, err := syscall.ForkExec(program, argv, &syscall.ProcAttr{
		Env:   syscall.Environ(),
		Files: []uintptr{e.devnull.Fd(), uintptr(stdout[1]), uintptr(stderr[1])},
		Sys:   &syscall.SysProcAttr{Credential: cred},
	})
	if err == nil {
		e.byPid[pid] = cmd
		e.running.Add(1)
	}
	e.mu.Unlock()
	closeAll(stdout[1], stderr[1])
	if err != nil {
		closeAll(stdout[0], stderr[0])
		e.failed(id, fmt.Sprintf("%s: %s", argv[0], describe(err)))
		return
	}
	go e.relay(cmd, os.NewFile(uintptr(stdout[0]), "stdout"), "o")
	go e.relay(cmd, os.NewFile(uintptr(stderr[0]), "stderr"), "e")
}

// probe answers a `checkpoint-probe` request in-process, on a goroutine locked to its thread: with
// no supplementary groups there (as a probe process started for the request would have), then the
// agent's file-system identity for the walk; the thread's own identity is put back before it serves
// other goroutines again. A thread whose identity cannot be put back ends with the goroutine (the
// runtime does not reuse a thread left locked). The thread is kept rather than ended each time so
// that the executor needs no new thread per probe when the sandbox's pid limit is reached.
func (e *executor) probe(id string, args []string) {
	e.running.Add(1)
	go func() {
		defer e.running.Done()
		runtime.LockOSThread()
		var out, errs bytes.Buffer
		code := 1
		groups, err := syscall.Getgroups()
		known := err == nil
		if known {
			err = threadFsIdentity(os.Geteuid(), os.Getegid(), nil)
		}
		if err != nil {
			fmt.Fprintln(&errs, "agent-sandbox-tools checkpoint-probe:", err)
		} else {
			code = probeAnswer(args, &out, &errs)
		}
		own := make([]uint32, len(groups))
		for i, group := range groups {
			own[i] = uint32(group)
		}
		if known && threadFsIdentity(os.Geteuid(), os.Getegid(), own) == nil {
			runtime.UnlockOSThread()
		}
		if out.Len() > 0 {
			e.out.send(`{"id":`+id+`,"t":"o","n":`+strconv.Itoa(out.Len())+"}", out.Bytes())
		}
		if errs.Len() > 0 {
			e.out.send(`{"id":`+id+`,"t":"e","n":`+strconv.Itoa(errs.Len())+"}", errs.Bytes())
		}
		e.out.send(`{"id":`+id+`,"t":"x","code":`+strconv.Itoa(code)+`}`, nil)
	}()
}

// ownIdentity: whether a request's credential is the executor's own user (none given, or the same ids).
func ownIdentity(cred *syscall.Credential) bool {
	return cred == nil || (int(cred.Uid) == os.Geteuid() && int(cred.Gid) == os.Getegid())
}

// selfPath is the path of this binary as a request's argv[0] resolves to it; "" when unknown.
func selfPath() string {
	path, err := exec.LookPath(os.Args[0])
	if err != nil {
		return ""
	}
	return path
}

// relay sends one of a command's outputs as it arrives, until its end.
func (e *executor) relay(cmd *command, from *os.File, kind string) {
	buf := make([]byte, 1<<16)
	head := `{"id":` + cmd.id + `,"t":"` + kind + `","n":`
	for {
		n, err := from.Read(buf)
		if n > 0 {
			e.out.send(head+strconv.Itoa(n)+"}", buf[:n])
		}
		if err != nil {
			break // its end (io.EOF), or a pipe that cannot be read: either way nothing more comes
		}
	}
	from.Close()
	e.mu.Lock()
	cmd.open--
	e.finishIfDone(cmd)
	e.mu.Unlock()
}

// reap collects every child that ended, without blocking.
func (e *executor) reap() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		code := status.ExitStatus()
		if status.Signaled() {
			code = 128 + int(status.Signal())
		}
		cmd := e.byPid[pid]
		if cmd == nil {
			continue
		}
		delete(e.byPid, pid)
		cmd.code, cmd.done = code, true
		e.finishIfDone(cmd)
	}
}

// finishIfDone reports the command's end once its output is complete and it was reaped (e.mu held).
func (e *executor) finishIfDone(cmd *command) {
	if cmd.open > 0 || !cmd.done {
		return
	}
	cmd.open = -1
	e.out.send(`{"id":`+cmd.id+`,"t":"x","code":`+strconv.Itoa(cmd.code)+`}`, nil)
	e.running.Done()
}

// pipe makes a pipe whose read end (fds[0]) the runtime's poller serves; the write end is the
// child's and blocks as usual.
func pipe(fds *[2]int) error {
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		return err
	}
	return syscall.SetNonblock(fds[0], true)
}

func closeAll(fds ...int) {
	for _, fd := range fds {
		syscall.Close(fd)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func compact(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return []byte("null")
	}
	return b.Bytes()
}
