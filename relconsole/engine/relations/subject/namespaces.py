"""Each call's own namespaces: keyring, user, IPC, network and mounts, through the C library (SPEC §7).

A part of the subject's fork server (``harness.py``; standard library only, merged into its
script by ``script.py``). ``own_namespaces`` runs in the call's child, ``map_ids`` is the
server's half of it; ``_libc`` and ``_prctl`` are the C library as every part uses it.
"""

import os
import sys

_LIBC = []


def _libc():
    """The C library (loaded once; ``ctypes`` is imported only when it is needed). Raises OSError."""
    if not _LIBC:
        import ctypes
        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def _prctl(option, value):
    try:
        _libc().prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 1, 4, 36
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x08000000, 0x10000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x4000, 0x40000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
CALL_TMPFS = ("/tmp", "/dev/shm", "/var/tmp")  # a fresh, empty one in each call's own mount namespace
KEYCTL_JOIN_SESSION_KEYRING = 1
KEYCTL_SYSCALL = {"x86_64": 250, "aarch64": 219}  # keyctl(2) has no libc wrapper
PR_SET_SECUREBITS = 28
SECURE_NOROOT_ALL = 0x3F  # noroot, no_setuid_fixup, keep_caps: each set and locked


def own_namespaces(ask_fd, answer_fd, keep=(), readonly=()):
    """Give this call (a fresh child) state no other call can see: a new session keyring,
    a new user namespace (its own user keyrings), a new IPC namespace (System V objects,
    POSIX message queues), a new network namespace (sockets, TIME_WAIT ports, abstract
    unix names; ``lo`` up) and a new mount namespace with an empty tmpfs on every writable
    scratch folder (``CALL_TMPFS``; ``keep``: paths that must stay in sight). The server maps the call's uid and gid in it to its own
    (``map_ids``: a process cannot map uid 0 for itself without CAP_SETFCAP); then every
    capability the new namespace gave is dropped for good. Returns "all" (every namespace),
    "some" (user and IPC only: mounts or the network were refused) or "" (none: the kernel
    has no user namespaces; the call then shares them)."""
    try:
        import ctypes
        libc = _libc()
    except OSError:
        os.write(ask_fd, b"n")
        return ""
    keyctl = KEYCTL_SYSCALL.get(os.uname().machine)
    if keyctl is not None:
        libc.syscall(keyctl, KEYCTL_JOIN_SESSION_KEYRING, None)
    made = "all"
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWIPC | CLONE_NEWNS | CLONE_NEWNET) != 0:
        made = "some"
        if libc.unshare(CLONE_NEWUSER | CLONE_NEWIPC) != 0:
            os.write(ask_fd, b"n")
            return ""
    os.write(ask_fd, b"u")
    os.read(answer_fd, 1)
    if made == "all" and not (_private_mounts(libc, keep, readonly) and _loopback_up(libc)):
        made = "some"
    libc.prctl(PR_SET_SECUREBITS, SECURE_NOROOT_ALL, 0, 0, 0)  # uid 0 regains nothing by exec
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    libc.capset(header, (ctypes.c_uint32 * 6)())  # no effective, permitted or inheritable capability
    return made


OPEN_TREE, MOVE_MOUNT = 428, 429  # one number on every machine (syscalls added after the tables merged)
OPEN_TREE_CLONE, OPEN_TREE_CLOEXEC, AT_RECURSIVE, MOVE_MOUNT_F_EMPTY_PATH = 0x1, 0o2000000, 0x8000, 0x4
AT_FDCWD = -100


def _outermost(paths, folder):
    """The paths under ``folder`` (resolved), none inside another: what must stay in sight."""
    inside = sorted({os.path.realpath(p) for p in paths if isinstance(p, str) and p}
                    - {folder}, key=len)
    out = []
    for path in inside:
        if path.startswith(folder + os.sep) and not any(path.startswith(o + os.sep) for o in out):
            out.append(path)
    return out


MS_RDONLY, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 8, 32, 4096
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
ST_RELATIME = 4096


def _read_only(libc, folders):
    """Each of ``folders`` (the reviewer's git directory and checkout) bound onto itself
    read-only in the call's mount namespace: a subject without bubblewrap could otherwise
    write through the oracle export's hard links into its store, or plant a parse cache that
    a later run loads (red team). The new mount keeps the flags the kernel locks on it
    (nosuid, nodev, noexec, atime). False when the kernel refused a step."""
    for folder in folders:
        if not os.path.isdir(folder):
            continue
        path = folder.encode()
        if libc.mount(path, path, None, MS_BIND | MS_REC, None) != 0:
            return False
        flags = os.statvfs(folder).f_flag
        locked = flags & (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME)
        locked |= MS_RELATIME if flags & ST_RELATIME else 0
        if libc.mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | locked, None) != 0:
            return False
    return True


def _private_mounts(libc, keep, readonly=()):
    """In the call's own mount namespace: ``readonly`` folders bound read-only
    (``_read_only``), then an empty tmpfs on each of ``CALL_TMPFS`` that exists, with the
    folders of ``keep`` that were under it (the tree, the interpreter, site folders, when
    they live in /tmp) cloned first and put back at their paths. Returns False when the
    kernel refused any step (the call then keeps the server's folders, wiped between calls)."""
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return False
    if not _read_only(libc, readonly):
        return False
    for folder in CALL_TMPFS:
        if not os.path.isdir(folder) or os.path.islink(folder):
            continue
        kept = []
        for path in _outermost(keep, os.path.realpath(folder)):
            fd = libc.syscall(OPEN_TREE, AT_FDCWD, path.encode(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE)
            if fd < 0:
                return False
            kept.append((path, fd))
        if libc.mount(b"tmpfs", folder.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=1777") != 0:
            return False
        for path, fd in kept:
            os.makedirs(path, exist_ok=True)
            moved = libc.syscall(MOVE_MOUNT, fd, b"", AT_FDCWD, path.encode(), MOVE_MOUNT_F_EMPTY_PATH)
            os.close(fd)
            if moved != 0:
                return False
    return True


def _loopback_up(libc):
    """Bring ``lo`` up in the call's own network namespace (a new one has it down). Through
    the C library: importing ``socket`` here would cost each call 8 ms."""
    import ctypes
    fd = libc.socket(2, 2, 0)  # AF_INET, SOCK_DGRAM
    if fd < 0:
        return False
    try:
        request = ctypes.create_string_buffer(b"lo", 40)  # struct ifreq: name[16], then short flags
        if libc.ioctl(fd, SIOCGIFFLAGS, request) != 0:
            return False
        flags = int.from_bytes(request.raw[16:18], sys.byteorder) | IFF_UP
        request[16:18] = flags.to_bytes(2, sys.byteorder)
        return libc.ioctl(fd, SIOCSIFFLAGS, request) == 0
    finally:
        os.close(fd)


def map_ids(pid, ask_fd, answer_fd):
    """The server's half of ``own_namespaces``: once the child has its user namespace, map
    its uid and gid there to the server's own, so the call keeps its uid; then let it go."""
    if os.read(ask_fd, 1) == b"u":
        uid, gid = os.getuid(), os.getgid()
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            try:
                fd = os.open(f"/proc/{pid}/{name}", os.O_WRONLY)
                try:
                    os.write(fd, text.encode())
                finally:
                    os.close(fd)
            except OSError:
                pass
        os.write(answer_fd, b"m")
