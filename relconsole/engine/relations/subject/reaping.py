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

def empty_folder(folder, keep=""):
    """Remove everything in ``folder`` but ``keep`` and the folders on the way to it (links
    are removed, never followed)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        path = os.path.join(folder, name)
        if keep and (path == keep or keep.startswith(path + os.sep)):
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


def wipe_shared(keep):
    """Empty the sandbox's own /tmp and /dev/shm but ``keep`` (the server's scratch folder), so
    no file one call wrote is there for the next; only inside a sandbox, where both are private."""
    for folder in ("/tmp", "/dev/shm"):
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
