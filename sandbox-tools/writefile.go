// write_file: creates or replaces a file with the given content, making missing parent directories;
// content it already has is left alone. Request: {path, content}.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
)

type writeRequest struct {
	Path    *string `json:"path"`
	Content *string `json:"content"`
}

func writeFile(arg string) int {
	var req writeRequest
	if err := loadRequest(arg, &req); err != nil {
		return finish("", err)
	}
	if req.Path == nil {
		return finish("", required("path"))
	}
	if req.Content == nil {
		return finish("", required("content"))
	}
	return finish(write(*req.Path, []byte(*req.Content)))
}

func write(path string, data []byte) (string, error) {
	if err := inside(path, "/workspace"); err != nil {
		return "", err
	}
	if isDir(path) {
		return "", fail("%s is a directory; give a file path.", path)
	}
	existed := exists(path)
	cannot := func(err error) (string, error) {
		return "", fail("Cannot write %s: %s.", path, strerror(err))
	}
	if parent, _ := splitPath(path); parent != "" {
		if err := makedirs(parent); err != nil {
			return cannot(err)
		}
	}
	if existed {
		current, err := os.ReadFile(path)
		if err != nil {
			return cannot(err)
		}
		if bytes.Equal(current, data) {
			return fmt.Sprintf("%s already has this content (%d bytes); nothing changed.\n", path, len(data)), nil
		}
	}
	if err := replaceContent(path, data); err != nil {
		return cannot(err)
	}
	lines := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		lines++
	}
	verb := "Created"
	if existed {
		verb = "Replaced"
	}
	return fmt.Sprintf("%s %s: %d bytes, %d lines.\n", verb, path, len(data), lines), nil
}

// replaceContent writes data over the file in place (same inode, mode and owner), creating it when
// missing.
func replaceContent(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	return err
}

// makedirs makes a directory and its missing parents. A path that exists as a directory is fine;
// one that exists as anything else fails with mkdir's own error ("File exists").
func makedirs(name string) error {
	head, tail := splitPath(name)
	if tail == "" {
		head, tail = splitPath(head)
	}
	if head != "" && tail != "" && !exists(head) {
		if err := makedirs(head); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		if tail == "." {
			return nil
		}
	}
	if err := os.Mkdir(name, 0o777); err != nil {
		if !isDir(name) {
			return err
		}
	}
	return nil
}
