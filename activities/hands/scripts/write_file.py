# write_file inside the sandbox. argv[1]: JSON {path, content} or @file (the input file is removed).
import json, os, sys

def inside(path, roots=('/workspace',)):
    """The file tools stay inside /workspace: a symbolic link that leads out is refused."""
    real = os.path.realpath(path)
    if not any(real == r or real.startswith(r + '/') for r in roots):
        print(f'{path} resolves to {real} through a symbolic link, outside {" and ".join(roots)}: '
              'the file tools work only inside it (use bash to look elsewhere).')
        sys.exit(1)

a = sys.argv[1]
if a.startswith('@'):
    with open(a[1:], encoding='utf-8') as f:
        p = json.load(f)
    os.unlink(a[1:])
else:
    p = json.loads(a)
path, data = p['path'], p['content'].encode('utf-8')
inside(path)
if os.path.isdir(path):
    print(f'{path} is a directory; give a file path.')
    sys.exit(1)
existed = os.path.exists(path)
try:
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    if existed:
        with open(path, 'rb') as f:
            if f.read() == data:
                print(f'{path} already has this content ({len(data)} bytes); nothing changed.')
                sys.exit(0)
    with open(path, 'wb') as f:
        f.write(data)
except OSError as e:
    print(f'Cannot write {path}: {e.strerror}.')
    sys.exit(1)
lines = data.count(b'\n') + (1 if data and not data.endswith(b'\n') else 0)
print(f'{"Replaced" if existed else "Created"} {path}: {len(data)} bytes, {lines} lines.')
