"""What a call leaves behind, removed before the next: its processes, files and System V objects (SPEC §7).

A part of the subject's fork server (``harness.py``; standard library only, merged into its
script by ``script.py``).
"""

import os
import shutil
import signal
import time

from relconsole.engine.relations.subject.namespaces import _libc


def _descendants(root_pid):
    """Pids of every living process below ``root_pid`` (from /proc), deepest not first."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        parents.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [root_pid]
    while todo:
        for pid in parents.get(todo.pop(), []):
            found.append(pid)
            todo.append(pid)
    return found


def _no_children():
    """True when this process has no child, living or dead (the dead are reaped on the way): as
    their subreaper, it then has no descendant at all, and /proc need not be read."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == 0:
            return False


def kill_descendants(sandboxed=False):
    """SIGKILL every process below this one until none is left (this server is their subreaper).

    In the sandbox's own pid namespace one ``kill(-1)`` reaches every process but this one and
    the namespace's init at once, so a process that keeps forking new pids cannot outrun it;
    outside one, the descendants found in /proc are killed round by round."""
    for _ in range(200):
        if _no_children():
            return
        if sandboxed:
            try:
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
            time.sleep(0.001)
            continue
        pids = _descendants(os.getpid())
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for _ in pids:  # reap what died, so the next scan sees only the living
            try:
                while os.waitpid(-1, os.WNOHANG)[0]:
                    pass
            except ChildProcessError:
                break
        time.sleep(0.005)

def mount_points(folders):
    """The mount points at or below ``folders`` in this process's mount namespace (from
    /proc/self/mountinfo; octal escapes decoded), as a tuple of paths; () when it cannot be read.
    In the sandbox these are the binds bubblewrap made when the server started (a venv, the
    server's scratch): a call cannot mount in the server's namespace, so the list holds for
    the server's life."""
    try:
        with open("/proc/self/mountinfo", "rb") as handle:
            rows = handle.read().decode("utf-8", "surrogateescape").splitlines()
    except OSError:
        return ()
    found = []
    for row in rows:
        fields = row.split(" ")
        if len(fields) < 5:
            continue
        point = _unescaped(fields[4])
        if any(point.startswith(folder + os.sep) for folder in folders):
            found.append(point)
    return tuple(found)


def _unescaped(text):
    """``text`` with mountinfo's octal escapes (``\\040`` for a space) decoded."""
    if "\\" not in text:
        return text
    out, index = [], 0
    while index < len(text):
        if text[index] == "\\" and text[index + 1:index + 4].isdigit():
            out.append(chr(int(text[index + 1:index + 4], 8)))
            index += 4
        else:
            out.append(text[index])
            index += 1
    return "".join(out)


def empty_folder(folder, keep=()):
    """Remove everything in ``folder`` but the paths of ``keep`` (a tuple): the folders on the
    way to a kept path are emptied around it, never removed or skipped whole (links are
    removed, never followed). A kept mount point is never walked: a read-only bind of a venv
    holds thousands of files that cannot be removed, and took every call 46-110 ms to fail on."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        path = os.path.join(folder, name)
        if path in keep:
            continue
        real_dir = os.path.isdir(path) and not os.path.islink(path)
        if real_dir and any(k.startswith(path + os.sep) for k in keep):
            empty_folder(path, keep)
        elif real_dir:
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


SHARED = ("/tmp", "/dev/shm")


def wipe_shared(keep):
    """Empty the sandbox's own /tmp and /dev/shm but the paths of ``keep`` (the server's
    scratch folder and the mount points there, ``mount_points``), so no file one call wrote
    is there for the next; only inside a sandbox, where both are private."""
    for folder in SHARED:
        empty_folder(folder, keep)


def wipe_scratch(scratch):
    """Empty the server's scratch folder (each call's home lives there): nothing a call wrote
    is there for the next."""
    empty_folder(scratch)


def remove_sysv_ipc():
    """Remove every System V shared memory segment, semaphore set and message queue (a memo a
    call could leave for the next is not a file): only in the sandbox, whose IPC namespace is
    its own."""
    try:
        libc = _libc()
    except OSError:
        return
    ipc_rmid = 0
    for table, remove in (("shm", lambda i: libc.shmctl(i, ipc_rmid, None)),
                          ("sem", lambda i: libc.semctl(i, 0, ipc_rmid)),
                          ("msg", lambda i: libc.msgctl(i, ipc_rmid, None))):
        try:
            with open(f"/proc/sysvipc/{table}") as handle:
                rows = handle.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 1 and fields[1].lstrip("-").isdigit():
                remove(int(fields[1]))
