# read_file inside the sandbox. argv[1]: JSON {path, offset, limit, maxBytes, maxLineChars} or @file.
# Prints numbered lines and a trailer when cut; exit 0 = result, 1 = tool error (message printed).
import json, os, sys

def arg():
    a = sys.argv[1]
    if a.startswith('@'):
        with open(a[1:], encoding='utf-8') as f:
            return json.load(f)
    return json.loads(a)

def fail(msg):
    sys.stdout.write(msg + '\n')
    sys.exit(1)

def inside(path, roots=('/workspace',)):
    """The file tools stay inside /workspace: a symbolic link that leads out is refused."""
    real = os.path.realpath(path)
    if not any(real == r or real.startswith(r + '/') for r in roots):
        print(f'{path} resolves to {real} through a symbolic link, outside {" and ".join(roots)}: '
              'the file tools work only inside it (use bash to look elsewhere).')
        sys.exit(1)

p = arg()
path, offset, limit = p['path'], p.get('offset') or 1, p['limit']
max_bytes, max_line = p['maxBytes'], p['maxLineChars']
inside(path, ('/workspace', '/var/lib/agent-journal'))
if not os.path.exists(path):
    fail(f'File not found: {path}. Check the path with list_files (relative paths start at /workspace).')
if os.path.isdir(path):
    fail(f'{path} is a directory, not a file. Use list_files to see what it contains.')
try:
    f = open(path, 'rb')
except OSError as e:
    fail(f'Cannot read {path}: {e.strerror}.')
with f:
    head = f.read(8192)
    if b'\0' in head:
        size = os.fstat(f.fileno()).st_size
        fail(f'{path} looks like a binary file ({size} bytes); it is not shown. Inspect it with bash (e.g. `xxd {path} | head`) if needed.')
    f.seek(0)
    out, used, total, shown_last, cut_bytes = [], 0, 0, 0, False
    for total, raw in enumerate(f, start=1):
        if total < offset or total >= offset + limit or cut_bytes:
            continue
        line = raw.decode('utf-8', errors='replace').rstrip('\n')
        if len(line) > max_line:
            line = line[:max_line] + f' … [line cut: {len(line)} characters]'
        text = f'{total:6d}\t{line}\n'
        if used + len(text) > max_bytes and out:
            cut_bytes = True
            continue
        out.append(text)
        used += len(text)
        shown_last = total
if total == 0:
    print(f'(empty file: {path})')
    sys.exit(0)
if offset > total:
    fail(f'offset {offset} is past the end of {path}, which has {total} lines.')
sys.stdout.write(''.join(out))
if shown_last < total:
    why = f'the {max_bytes}-byte result limit' if cut_bytes else f'limit={limit}'
    print(f'[Showing lines {offset}-{shown_last} of {total} ({why}). Call read_file with offset={shown_last + 1} to continue.]')
