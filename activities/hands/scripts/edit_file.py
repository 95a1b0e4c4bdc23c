# edit_file inside the sandbox: replace old_text, which must occur exactly once.
# argv[1]: JSON {path, old_text, new_text} or @file (the input file is removed).
# $AGENT_ATTEMPT > 1 marks a retry of the same call: an edit found already applied then succeeds.
import json, os, sys

a = sys.argv[1]
if a.startswith('@'):
    with open(a[1:], encoding='utf-8') as f:
        p = json.load(f)
    os.unlink(a[1:])
else:
    p = json.loads(a)
path, old, new = p['path'], p['old_text'], p['new_text']
retry = int(os.environ.get('AGENT_ATTEMPT', '1')) > 1

def fail(msg):
    print(msg)
    sys.exit(1)

def inside(path, roots=('/workspace',)):
    """The file tools stay inside /workspace: a symbolic link that leads out is refused."""
    real = os.path.realpath(path)
    if not any(real == r or real.startswith(r + '/') for r in roots):
        print(f'{path} resolves to {real} through a symbolic link, outside {" and ".join(roots)}: '
              'the file tools work only inside it (use bash to look elsewhere).')
        sys.exit(1)

def line_of(text, index):
    return text.count('\n', 0, index) + 1

inside(path)
if old == new:
    fail('old_text and new_text are identical; nothing to change.')
if not os.path.exists(path):
    fail(f'File not found: {path}. To create a file, use write_file.')
if os.path.isdir(path):
    fail(f'{path} is a directory, not a file.')
try:
    with open(path, 'rb') as f:
        raw = f.read()
    text = raw.decode('utf-8')
except UnicodeDecodeError:
    fail(f'{path} is not UTF-8 text; edit it with bash instead.')
except OSError as e:
    fail(f'Cannot read {path}: {e.strerror}.')

count = text.count(old)
if count == 0:
    if new and new in text:
        if retry:
            print(f'Edit already applied to {path} (new_text is present at line {line_of(text, text.index(new))} and old_text is absent); nothing changed.')
            sys.exit(0)
        fail(f'old_text was not found in {path}, but new_text already appears at line {line_of(text, text.index(new))}: the edit may already have been made. Read the file to check.')
    hint = ''
    stripped = old.strip()
    if stripped and stripped in text:
        hint = f' A match ignoring leading/trailing whitespace exists at line {line_of(text, text.index(stripped))}: copy the exact text, including indentation and line breaks.'
    else:
        first = next((l.strip() for l in old.split('\n') if l.strip()), '')
        if first and first in text:
            hint = f' Its first line occurs at line {line_of(text, text.index(first))}, but the following text differs.'
    fail(f'old_text was not found in {path}; nothing changed.{hint} Read the file (read_file) and copy the text to replace exactly.')
if count > 1:
    lines, start = [], 0
    while len(lines) < 10:
        i = text.find(old, start)
        if i < 0:
            break
        lines.append(str(line_of(text, i)))
        start = i + len(old)
    fail(f'old_text matches {count} times in {path} (at lines {", ".join(lines)}); nothing changed. Include more surrounding lines in old_text so that it matches exactly once.')

i = text.index(old)
result = text[:i] + new + text[i + len(old):]
try:
    with open(path, 'wb') as f:
        f.write(result.encode('utf-8'))
except OSError as e:
    fail(f'Cannot write {path}: {e.strerror}.')
before, after = old.count('\n') + 1, new.count('\n') + 1
print(f'Edited {path}: replaced {before} line(s) at line {line_of(text, i)} with {after} line(s).')
