// What the three file tools share: how a request arrives, how they stay inside /workspace, how an
// OS error reads, and the few text rules they must apply exactly as the model has always been told
// (paths resolved like POSIX realpath without requiring the file to exist, invalid UTF-8 replaced one
// U+FFFD per maximal invalid subpart, whitespace as Unicode defines it).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"unicode/utf8"
)

// toolError ends a tool with a message for the model: exit 1.
type toolError struct{ message string }

func (e toolError) Error() string { return e.message }

func fail(format string, args ...any) error {
	return toolError{fmt.Sprintf(format, args...)}
}

// finish prints the tool's result (exit 0) or its message (exit 1); anything else is a failure of the
// tool itself, on stderr (exit 2).
func finish(result string, err error) int {
	var te toolError
	switch {
	case err == nil:
		os.Stdout.WriteString(result)
		return 0
	case errors.As(err, &te):
		os.Stdout.WriteString(te.message + "\n")
		return 1
	default:
		fmt.Fprintln(os.Stderr, "agent-sandbox-tools:", err)
		return 2
	}
}

// loadRequest decodes the request: the argument itself, or `@<file>` naming a file that holds it
// (staged by the hands when it is too large for a command line), removed once read.
func loadRequest(arg string, into any) error {
	data := []byte(arg)
	if strings.HasPrefix(arg, "@") {
		var err error
		if data, err = os.ReadFile(arg[1:]); err != nil {
			return fmt.Errorf("the request file: %w", err)
		}
		if err := os.Remove(arg[1:]); err != nil {
			return fmt.Errorf("the request file: %w", err)
		}
	}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("the request: %w", err)
	}
	return nil
}

// required names a field the request lacks.
func required(name string) error {
	return fmt.Errorf("the request has no %q", name)
}

// inside refuses a path that resolves, through a symbolic link, outside the roots: the file tools
// work only in the workspace (and read the journal).
func inside(path string, roots ...string) error {
	real := realpath(path)
	for _, root := range roots {
		if real == root || strings.HasPrefix(real, root+"/") {
			return nil
		}
	}
	return fail("%s resolves to %s through a symbolic link, outside %s: the file tools work only inside it (use bash to look elsewhere).",
		path, real, strings.Join(roots, " and "))
}

// strerror is the C library's text for an OS error ("Permission denied"), as the model knows it
// from every other tool.
func strerror(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		text := errno.Error()
		if r, size := utf8.DecodeRuneInString(text); r >= 'a' && r <= 'z' {
			return strings.ToUpper(text[:size]) + text[size:]
		}
		return text
	}
	return err.Error()
}

// describe is an error in words, with the C library's text for an OS error.
func describe(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return strerror(errno)
	}
	return err.Error()
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}

// realpath resolves every symbolic link in path, lexically past a component that does not exist,
// relative to the working directory, and normalises the result; a link loop stops the resolution
// there (the rest is appended as it is).
func realpath(path string) string {
	resolved, _ := joinRealpath("", path, map[string]*string{})
	return abspath(resolved)
}

func joinRealpath(path, rest string, seen map[string]*string) (string, bool) {
	if strings.HasPrefix(rest, "/") {
		rest = rest[1:]
		path = "/"
	}
	for rest != "" {
		var name string
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			name, rest = rest[:i], rest[i+1:]
		} else {
			name, rest = rest, ""
		}
		if name == "" || name == "." {
			continue
		}
		if name == ".." {
			if path != "" {
				path, name = splitPath(path)
				if name == ".." {
					path = joinPath(joinPath(path, ".."), "..")
				}
			} else {
				path = ".."
			}
			continue
		}
		next := joinPath(path, name)
		info, err := os.Lstat(next)
		if err != nil || info.Mode()&os.ModeSymlink == 0 {
			path = next
			continue
		}
		if known, ok := seen[next]; ok {
			if known != nil {
				path = *known
				continue
			}
			return joinPath(next, rest), false // a loop
		}
		seen[next] = nil
		target, err := os.Readlink(next)
		if err != nil {
			path = next
			continue
		}
		var ok bool
		path, ok = joinRealpath(path, target, seen)
		if !ok {
			return joinPath(path, rest), false
		}
		resolved := path
		seen[next] = &resolved
	}
	return path, true
}

func joinPath(a, b string) string {
	switch {
	case strings.HasPrefix(b, "/"):
		return b
	case a == "" || strings.HasSuffix(a, "/"):
		return a + b
	default:
		return a + "/" + b
	}
}

// splitPath is (everything up to the last '/', with trailing slashes removed unless it is all
// slashes; the rest).
func splitPath(p string) (string, string) {
	i := strings.LastIndexByte(p, '/') + 1
	head, tail := p[:i], p[i:]
	if head != "" && head != strings.Repeat("/", len(head)) {
		head = strings.TrimRight(head, "/")
	}
	return head, tail
}

func abspath(p string) string {
	if !strings.HasPrefix(p, "/") {
		// The working directory as the kernel knows it, never $PWD.
		cwd, err := syscall.Getwd()
		if err == nil {
			p = joinPath(cwd, p)
		}
	}
	return normpath(p)
}

func normpath(p string) string {
	if p == "" {
		return "."
	}
	initial := 0
	if strings.HasPrefix(p, "/") {
		initial = 1
		if strings.HasPrefix(p, "//") && !strings.HasPrefix(p, "///") {
			initial = 2
		}
	}
	var parts []string
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." {
			continue
		}
		if part != ".." || (initial == 0 && len(parts) == 0) || (len(parts) > 0 && parts[len(parts)-1] == "..") {
			parts = append(parts, part)
		} else if len(parts) > 0 {
			parts = parts[:len(parts)-1]
		}
	}
	out := strings.Repeat("/", initial) + strings.Join(parts, "/")
	if out == "" {
		return "."
	}
	return out
}

// decodeReplacing decodes UTF-8, replacing each maximal invalid subpart (a byte that cannot start a
// sequence, or the valid beginning of a sequence that breaks off) with one U+FFFD.
func decodeReplacing(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var out strings.Builder
	out.Grow(len(b) + 16)
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			out.WriteByte(b[i])
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			out.Write(b[i : i+size])
			i += size
			continue
		}
		out.WriteRune(utf8.RuneError)
		i += maximalSubpart(b[i:])
	}
	return out.String()
}

// maximalSubpart is the length of the invalid sequence at the start of b: its lead byte and the
// continuation bytes that were still valid for it.
func maximalSubpart(b []byte) int {
	lead := b[0]
	lo, hi := byte(0x80), byte(0xBF)
	var need int
	switch {
	case lead >= 0xC2 && lead <= 0xDF:
		need = 1
	case lead == 0xE0:
		need, lo = 2, 0xA0
	case lead == 0xED:
		need, hi = 2, 0x9F
	case lead >= 0xE1 && lead <= 0xEF:
		need = 2
	case lead == 0xF0:
		need, lo = 3, 0x90
	case lead == 0xF4:
		need, hi = 3, 0x8F
	case lead >= 0xF1 && lead <= 0xF3:
		need = 3
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(b); k++ {
		c := b[n]
		if k > 0 {
			lo, hi = 0x80, 0xBF
		}
		if c < lo || c > hi {
			return n
		}
		n++
	}
	return n
}

// isSpace is Unicode whitespace as Python's str.strip() sees it (which adds the ASCII information
// separators U+001C..U+001F to Unicode's White_Space).
func isSpace(r rune) bool {
	switch {
	case r >= 0x09 && r <= 0x0D, r >= 0x1C && r <= 0x20, r == 0x85, r == 0xA0, r == 0x1680,
		r >= 0x2000 && r <= 0x200A, r == 0x2028, r == 0x2029, r == 0x202F, r == 0x205F, r == 0x3000:
		return true
	}
	return false
}

func strip(s string) string {
	return strings.TrimFunc(s, isSpace)
}

// lineOf is the 1-based line number of a byte offset in text.
func lineOf(text string, offset int) int {
	return strings.Count(text[:offset], "\n") + 1
}
