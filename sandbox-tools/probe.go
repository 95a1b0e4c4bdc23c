// The checkpoint probe: answers whether the workspace is as the session's last full checkpoint left
// it, so that a turn in which nothing changed costs one process and no git (activities/hands/
// checkpoints/sandbox-checkpoints.ts; checkpoint.sh makes the full checkpoints and leaves the
// record this reads):
//
//	checkpoint-probe <margin µs> [pattern...]
//
// It prints "@@checkpoint <commit> <commit> 0 <unreadable>" when nothing the checkpoint would hold
// (as the agent sees it) had its status changed since <margin> µs before that checkpoint started —
// file times come from a clock that may lag by a tick — and "@@checkpoint-changed <why>" otherwise,
// exit 0 both. The harness's copies of tool outputs (.agent/out/) do not count. The answer is trusted
// only while the wall clock kept pace with the boot clock since then, so a clock stepped back cannot
// hide a change; anything it cannot read counts as a change.
//
// It runs as the journal store's writer, reads the record as such, and walks the workspace with the
// agent's file-system identity (no supplementary groups): what the agent cannot read, it cannot.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	checkpointRepo = "/var/lib/agent-journal/checkpoints.git"
	// maxClockDrift is how far apart sampling the wall and boot clocks may put them, in µs.
	maxClockDrift = 50_000
	// harnessOutputs is the folder of the harness's copies of tool outputs.
	harnessOutputs = workspace + "/.agent/out"
)

// lastFull is the record checkpoint.sh leaves after a full checkpoint: the clocks as it started
// reading the workspace (µs), its commit, the files it could not read and its patterns (joined by
// the unit separator).
type lastFull struct {
	wall, boot int64
	commit     string
	unreadable string
	patterns   string
}

func checkpointProbe(argv []string) int {
	runtime.GOMAXPROCS(1)
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(64 << 20)
	runtime.LockOSThread() // the walk changes the thread's file-system identity; the process ends after it
	var out, errs bytes.Buffer
	code := probeAnswer(argv, &out, &errs)
	os.Stdout.Write(out.Bytes())
	os.Stderr.Write(errs.Bytes())
	return code
}

// probeAnswer is the probe's work for `checkpoint-probe <argv>`: its output, its messages and its exit
// status. It changes the file-system identity of the calling thread, which the caller has locked its
// goroutine to (and restores afterwards, or lets end, when it goes on living: the executor).
func probeAnswer(argv []string, out, errs *bytes.Buffer) int {
	if len(argv) < 1 {
		fmt.Fprintln(errs, "agent-sandbox-tools checkpoint-probe: expected <margin µs> [pattern...]")
		return 2
	}
	margin, err := strconv.ParseInt(argv[0], 10, 64)
	if err != nil || margin < 0 {
		fmt.Fprintf(errs, "agent-sandbox-tools checkpoint-probe: margin: %q is not a number of µs\n", argv[0])
		return 2
	}
	if why := probe(margin, argv[1:], out); why != "" {
		fmt.Fprintf(out, "@@checkpoint-changed %s\n", why)
	}
	return 0
}

// probe writes the unchanged answer and returns "", or returns why the workspace must be read.
func probe(margin int64, patterns []string, out *bytes.Buffer) string {
	// The clocks as the workspace is about to be read.
	wall := time.Now().UnixMicro()
	boot, err := bootClock()
	if err != nil {
		return "no boot clock"
	}
	last, err := readLastFull()
	if err != nil {
		return "no full checkpoint to compare with"
	}
	if last.patterns != strings.Join(patterns, "\x1f") {
		return "other patterns than the last full checkpoint's"
	}
	if head, err := os.ReadFile(checkpointRepo + "/refs/checkpoints/head"); err != nil || lineOne(string(head)) != last.commit {
		return "the last full checkpoint is not the head"
	}
	// A wall clock set back (or forward) since then, or a reboot, shows as a drift from the boot clock
	// (both are slewed alike).
	if drift := (wall - last.wall) - (boot - last.boot); drift > maxClockDrift || drift < -maxClockDrift {
		return "the wall clock moved apart from the boot clock"
	}
	since := (last.wall - margin) * 1000
	changed, err := changedSince(since, prunes(patterns))
	if err != nil {
		return "the workspace could not be read: " + err.Error()
	}
	if changed != "" {
		return "changed"
	}
	if last.unreadable == "" {
		last.unreadable = "0"
	}
	fmt.Fprintf(out, "@@checkpoint %s %s 0 %s\n", last.commit, last.commit, last.unreadable)
	return ""
}

// bootClock is /proc/uptime in µs, at its resolution (hundredths of a second), as checkpoint.sh reads it.
func bootClock() (int64, error) {
	content, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, err
	}
	field, _, _ := strings.Cut(string(content), " ")
	digits := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, field)
	hundredths, err := strconv.ParseInt(digits, 10, 64)
	return hundredths * 10_000, err
}

func readLastFull() (lastFull, error) {
	content, err := os.ReadFile(checkpointRepo + "/last-full")
	if err != nil {
		return lastFull{}, err
	}
	first, rest, _ := strings.Cut(string(content), "\n")
	fields := strings.Fields(first)
	if len(fields) < 3 {
		return lastFull{}, errors.New("a short record")
	}
	var last lastFull
	if !digitsOnly(fields[0]) || !digitsOnly(fields[1]) {
		return lastFull{}, errors.New("clocks that are not numbers")
	}
	last.wall, _ = strconv.ParseInt(fields[0], 10, 64)
	last.boot, _ = strconv.ParseInt(fields[1], 10, 64)
	last.commit = fields[2]
	if len(fields) > 3 {
		last.unreadable = fields[3]
	}
	last.patterns = lineOne(rest)
	return last, nil
}

func digitsOnly(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

func lineOne(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// prune is a rule for entries of the workspace that the probe neither tests nor walks into.
type prune struct {
	path string // the entry's whole path, when set
	name string // else its name, anywhere but in the workspace's .git
	dir  bool   // only a directory
}

// prunes are the rules for the checkpoint's patterns (gitignore syntax): only what certainly
// matches — a plain name, anchored or not, one level deep when anchored. A pattern with a negation
// anywhere prunes nothing (a folder left out may hold a file taken back in); one with wildcards is
// not pruned (its folders are walked, so a change there reads the workspace, which is only slower).
func prunes(patterns []string) []prune {
	rules := []prune{{path: harnessOutputs}}
	for _, pattern := range patterns {
		if strings.HasPrefix(pattern, "!") {
			return rules[:1]
		}
	}
	for _, pattern := range patterns {
		dir := strings.HasSuffix(pattern, "/") && len(pattern) > 1
		bare := strings.TrimSuffix(pattern, "/")
		if !dir {
			bare = pattern
		}
		switch {
		case strings.ContainsAny(pattern, `[]*?\`):
		case strings.HasPrefix(pattern, "/"):
			if !strings.Contains(bare[1:], "/") {
				rules = append(rules, prune{path: workspace + bare, dir: dir})
			}
		case !strings.Contains(bare, "/"):
			rules = append(rules, prune{name: bare, dir: dir})
		}
	}
	return rules
}

func pruned(rules []prune, path, name string, isDir bool) bool {
	for _, rule := range rules {
		if rule.dir && !isDir {
			continue
		}
		if rule.path != "" && rule.path == path {
			return true
		}
		if rule.name != "" && rule.name == name && !strings.HasPrefix(path, workspace+"/.git/") {
			return true
		}
	}
	return false
}

// changedSince walks the workspace as the agent and returns the first entry whose status changed
// after `since` (ns since the epoch), or "" when none did; an entry it cannot read is an error.
func changedSince(since int64, rules []prune) (string, error) {
	// This thread alone (the caller locked its goroutine to it) takes the agent's file-system identity.
	if err := threadFsIdentity(agentID, agentID, nil); err != nil {
		return "", err
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(workspace, &st); err != nil {
		return "", err
	}
	if ctimeNs(&st) > since {
		return workspace, nil
	}
	return walkChanged(workspace, since, rules)
}

func walkChanged(dir string, since int64, rules []prune) (string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return "", err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return "", err
	}
	var st syscall.Stat_t
	for _, name := range names {
		path := dir + "/" + name
		if err := syscall.Lstat(path, &st); err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		isDir := st.Mode&syscall.S_IFMT == syscall.S_IFDIR
		if pruned(rules, path, name, isDir) {
			continue
		}
		if ctimeNs(&st) > since {
			return path, nil
		}
		if isDir {
			if found, err := walkChanged(path, since, rules); err != nil || found != "" {
				return found, err
			}
		}
	}
	return "", nil
}

func ctimeNs(st *syscall.Stat_t) int64 {
	return st.Ctim.Sec*1_000_000_000 + st.Ctim.Nsec
}
