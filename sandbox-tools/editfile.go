// edit_file: replaces old_text, which must occur exactly once, with new_text; when it does not occur
// or occurs several times, says what the model can do about it. Request: {path, old_text, new_text}.
// $AGENT_ATTEMPT > 1 marks a retry of the same call: an edit found already applied then succeeds.
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

type editRequest struct {
	Path    *string `json:"path"`
	OldText *string `json:"old_text"`
	NewText *string `json:"new_text"`
}

func editFile(arg string) int {
	var req editRequest
	if err := loadRequest(arg, &req); err != nil {
		return finish("", err)
	}
	for name, field := range map[string]*string{"path": req.Path, "old_text": req.OldText, "new_text": req.NewText} {
		if field == nil {
			return finish("", required(name))
		}
	}
	attempt, err := strconv.Atoi(strings.TrimSpace(envOr("AGENT_ATTEMPT", "1")))
	if err != nil {
		return finish("", fmt.Errorf("AGENT_ATTEMPT is not a number: %w", err))
	}
	return finish(edit(*req.Path, *req.OldText, *req.NewText, attempt > 1))
}

func edit(path, old, replacement string, retry bool) (string, error) {
	if err := inside(path, "/workspace"); err != nil {
		return "", err
	}
	if old == replacement {
		return "", fail("old_text and new_text are identical; nothing to change.")
	}
	if !exists(path) {
		return "", fail("File not found: %s. To create a file, use write_file.", path)
	}
	if isDir(path) {
		return "", fail("%s is a directory, not a file.", path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fail("Cannot read %s: %s.", path, strerror(err))
	}
	if !utf8.Valid(raw) {
		return "", fail("%s is not UTF-8 text; edit it with bash instead.", path)
	}
	text := string(raw)

	switch count := strings.Count(text, old); {
	case count == 0:
		return notFound(path, text, old, replacement, retry)
	case count > 1:
		var lines []string
		for start := 0; len(lines) < 10; {
			i := strings.Index(text[start:], old)
			if i < 0 {
				break
			}
			lines = append(lines, strconv.Itoa(lineOf(text, start+i)))
			start += i + len(old)
		}
		return "", fail("old_text matches %d times in %s (at lines %s); nothing changed. Include more surrounding lines in old_text so that it matches exactly once.",
			count, path, strings.Join(lines, ", "))
	}

	i := strings.Index(text, old)
	if err := replaceContent(path, []byte(text[:i]+replacement+text[i+len(old):])); err != nil {
		return "", fail("Cannot write %s: %s.", path, strerror(err))
	}
	before, after := strings.Count(old, "\n")+1, strings.Count(replacement, "\n")+1
	return fmt.Sprintf("Edited %s: replaced %d line(s) at line %d with %d line(s).\n", path, before, lineOf(text, i), after), nil
}

// notFound explains an old_text that does not occur: an edit already made (done, on a retry), a
// near miss in whitespace, or a first line that matches where the rest does not.
func notFound(path, text, old, replacement string, retry bool) (string, error) {
	if replacement != "" {
		if i := strings.Index(text, replacement); i >= 0 {
			if retry {
				return fmt.Sprintf("Edit already applied to %s (new_text is present at line %d and old_text is absent); nothing changed.\n", path, lineOf(text, i)), nil
			}
			return "", fail("old_text was not found in %s, but new_text already appears at line %d: the edit may already have been made. Read the file to check.", path, lineOf(text, i))
		}
	}
	hint := ""
	if stripped := strip(old); stripped != "" && strings.Contains(text, stripped) {
		hint = fmt.Sprintf(" A match ignoring leading/trailing whitespace exists at line %d: copy the exact text, including indentation and line breaks.",
			lineOf(text, strings.Index(text, stripped)))
	} else if first := firstLine(old); first != "" && strings.Contains(text, first) {
		hint = fmt.Sprintf(" Its first line occurs at line %d, but the following text differs.", lineOf(text, strings.Index(text, first)))
	}
	return "", fail("old_text was not found in %s; nothing changed.%s Read the file (read_file) and copy the text to replace exactly.", path, hint)
}

// firstLine is old_text's first line that is not blank, stripped.
func firstLine(old string) string {
	for _, line := range strings.Split(old, "\n") {
		if s := strip(line); s != "" {
			return s
		}
	}
	return ""
}

func envOr(name, fallback string) string {
	if value, ok := os.LookupEnv(name); ok {
		return value
	}
	return fallback
}
