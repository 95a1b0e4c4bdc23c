// read_file: numbered lines of a text file, from `offset` for `limit` lines, at most `maxBytes`
// characters of numbered text and `maxLineChars` characters a line, with a trailer saying how to
// continue when cut. Request: {path, offset, limit, maxBytes, maxLineChars}.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

type readRequest struct {
	Path         *string `json:"path"`
	Offset       *int    `json:"offset"`
	Limit        *int    `json:"limit"`
	MaxBytes     *int    `json:"maxBytes"`
	MaxLineChars *int    `json:"maxLineChars"`
}

func readFile(arg string) int {
	var req readRequest
	if err := loadRequest(arg, &req); err != nil {
		return finish("", err)
	}
	for name, field := range map[string]*int{"limit": req.Limit, "maxBytes": req.MaxBytes, "maxLineChars": req.MaxLineChars} {
		if field == nil {
			return finish("", required(name))
		}
	}
	if req.Path == nil {
		return finish("", required("path"))
	}
	offset := 1
	if req.Offset != nil && *req.Offset != 0 {
		offset = *req.Offset
	}
	return finish(readLines(*req.Path, offset, *req.Limit, *req.MaxBytes, *req.MaxLineChars))
}

func readLines(path string, offset, limit, maxBytes, maxLine int) (string, error) {
	if err := inside(path, "/workspace", "/var/lib/agent-journal"); err != nil {
		return "", err
	}
	if !exists(path) {
		return "", fail("File not found: %s. Check the path with list_files (relative paths start at /workspace).", path)
	}
	if isDir(path) {
		return "", fail("%s is a directory, not a file. Use list_files to see what it contains.", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fail("Cannot read %s: %s.", path, strerror(err))
	}
	defer f.Close()
	head := make([]byte, 8192)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "", fail("Cannot read %s: %s.", path, strerror(err))
	}
	if bytes.IndexByte(head[:n], 0) >= 0 {
		var size int64
		if info, err := f.Stat(); err == nil {
			size = info.Size()
		}
		return "", fail("%s looks like a binary file (%d bytes); it is not shown. Inspect it with bash (e.g. `xxd %s | head`) if needed.", path, size, path)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", fail("Cannot read %s: %s.", path, strerror(err))
	}

	var out strings.Builder
	// `used` counts characters, as maxBytes always has.
	used, total, shownLast, cutBytes := 0, 0, 0, false
	lines := bufio.NewReaderSize(f, 1<<16)
	for {
		keep := total+1 >= offset && total+1 < offset+limit && !cutBytes
		raw, ok, err := nextLine(lines, keep)
		if err != nil {
			return "", fail("Cannot read %s: %s.", path, strerror(err))
		}
		if !ok {
			break
		}
		total++
		if !keep {
			continue
		}
		line := strings.TrimRight(decodeReplacing(raw), "\n")
		if chars := utf8.RuneCountInString(line); chars > maxLine {
			line = string([]rune(line)[:maxLine]) + fmt.Sprintf(" … [line cut: %d characters]", chars)
		}
		text := fmt.Sprintf("%6d\t%s\n", total, line)
		width := utf8.RuneCountInString(text)
		if used+width > maxBytes && out.Len() > 0 {
			cutBytes = true
			continue
		}
		out.WriteString(text)
		used += width
		shownLast = total
	}
	if total == 0 {
		return fmt.Sprintf("(empty file: %s)\n", path), nil
	}
	if offset > total {
		return "", fail("offset %d is past the end of %s, which has %d lines.", offset, path, total)
	}
	if shownLast < total {
		why := fmt.Sprintf("limit=%d", limit)
		if cutBytes {
			why = fmt.Sprintf("the %d-byte result limit", maxBytes)
		}
		fmt.Fprintf(&out, "[Showing lines %d-%d of %d (%s). Call read_file with offset=%d to continue.]\n",
			offset, shownLast, total, why, shownLast+1)
	}
	return out.String(), nil
}

// nextLine reads the next line with its newline (the last may have none); one that is not kept is
// skipped without being held in memory. ok is false at the end of the file.
func nextLine(r *bufio.Reader, keep bool) (line []byte, ok bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if len(chunk) > 0 {
			ok = true
			if keep {
				line = append(line, chunk...)
			}
		}
		switch {
		case err == nil:
			return line, true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return line, ok, nil
		default:
			return nil, false, err
		}
	}
}
