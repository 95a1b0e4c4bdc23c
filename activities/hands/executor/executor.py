# The sandbox's executor: runs the harness's commands on request, so a tool call costs no `docker exec`.
# The hands worker starts it as one long-running exec (as the journal store's writer, like the run
# wrapper) and holds the exec's stdin and stdout: that pipe is its only channel. It opens no socket
# and no file, so the agent (uid 1000, no capabilities) can neither reach it nor speak for it.
#
# Requests on stdin, one JSON object per line:
#   {"id": n, "argv": [...], "uid": u, "gid": g}   run argv (as uid:gid with no supplementary groups
#                                                   when given, else as the executor's own user)
# Replies on stdout, each a JSON header line, some followed by raw bytes:
#   {"t": "ready", "pid": p}            once, when it listens
#   {"id": n, "t": "o", "n": k}         the next k bytes are the command's stdout
#   {"id": n, "t": "e", "n": k}         the next k bytes are its stderr
#   {"id": n, "t": "x", "code": c}      it ended and its output is complete (c: exit status, 128 + signal)
#   {"id": n, "t": "f", "error": "..."} it could not be started (the pid limit, a missing program)
# Commands get /dev/null as stdin and the executor's environment and working directory: what a
# `docker exec` of the same container would give them. At the end of stdin (the worker is gone) it
# takes no more requests, lets the commands it runs finish, and exits.
import json
import os
import selectors
import subprocess

sel = selectors.DefaultSelector()
running = {}
state = {"stdin_open": True, "stdout_ok": True, "pending": b""}


def send(header, payload=b""):
    if not state["stdout_ok"]:
        return
    data = memoryview((json.dumps(header, separators=(",", ":")) + "\n").encode() + payload)
    try:
        while data:
            data = data[os.write(1, data):]
    except OSError:
        state["stdout_ok"] = False


def finish_if_done(rid):
    run = running.get(rid)
    if run and run["open"] == 0 and run["code"] is not None:
        del running[rid]
        send({"id": rid, "t": "x", "code": run["code"]})


def on_output(rid, fd, kind):
    try:
        chunk = os.read(fd, 65536)
    except BlockingIOError:
        return
    except OSError:
        chunk = b""
    if chunk:
        send({"id": rid, "t": kind, "n": len(chunk)}, chunk)
        return
    sel.unregister(fd)
    os.close(fd)
    running[rid]["open"] -= 1
    finish_if_done(rid)


def on_exit(rid, pidfd, proc):
    sel.unregister(pidfd)
    os.close(pidfd)
    code = proc.wait()
    running[rid]["code"] = code if code >= 0 else 128 - code
    finish_if_done(rid)


def start(request):
    rid = request.get("id")
    try:
        user = {}
        if request.get("uid") is not None:
            user = {"user": int(request["uid"]), "group": int(request["gid"]), "extra_groups": []}
        proc = subprocess.Popen(
            [str(a) for a in request["argv"]],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            close_fds=True,
            **user,
        )
    except Exception as err:  # noqa: BLE001 - every failure to start is reported to the caller
        send({"id": rid, "t": "f", "error": f"{type(err).__name__}: {err}"})
        return
    running[rid] = {"open": 2, "code": None}
    for pipe, kind in ((proc.stdout, "o"), (proc.stderr, "e")):
        fd = os.dup(pipe.fileno())
        pipe.close()
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ, (lambda r, f, k: lambda: on_output(r, f, k))(rid, fd, kind))
    try:
        pidfd = os.pidfd_open(proc.pid)
        sel.register(pidfd, selectors.EVENT_READ, lambda: on_exit(rid, pidfd, proc))
    except OSError:
        running[rid]["wait"] = proc


def on_stdin():
    chunk = os.read(0, 65536)
    if not chunk:
        state["stdin_open"] = False
        sel.unregister(0)
        return
    lines = (state["pending"] + chunk).split(b"\n")
    state["pending"] = lines.pop()
    for line in lines:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError as err:
            send({"t": "bad-request", "error": str(err)})
            continue
        start(request)


def reap_without_pidfd():
    for rid, run in list(running.items()):
        proc = run.get("wait")
        if proc is not None and run["open"] == 0:
            code = proc.wait()
            run["code"] = code if code >= 0 else 128 - code
            finish_if_done(rid)


sel.register(0, selectors.EVENT_READ, on_stdin)
send({"t": "ready", "pid": os.getpid()})
while state["stdin_open"] or running:
    for key, _ in sel.select(timeout=1.0):
        key.data()
    reap_without_pidfd()
