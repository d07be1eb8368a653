"""The server made to look like a plain interpreter: its exec-time argv and environment, site's builtins (SPEC §7).

A part of the subject's fork server (``harness.py``; standard library only, merged into its
script by ``script.py``): nothing a subject reads of its process says that a judge started it.
"""

import os

from relconsole.engine.relations.subject.namespaces import _libc


def _rewrite_exec_block(start_field, end_field, data):
    """Overwrite this process's exec-time argv or environment block (what /proc/<pid>/cmdline
    and /proc/<pid>/environ read) with ``data``, NUL-padded; nothing when it does not fit."""
    try:
        import ctypes
        with open("/proc/self/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[start_field - 3]), int(fields[end_field - 3])
    except (OSError, ValueError, IndexError):
        return
    if end <= start or len(data) > end - start:
        return
    ctypes.memmove(start, data + b"\0" * (end - start - len(data)), end - start)


def _disguise(argv0):
    """/proc/self/environ without the variables read at start (PYTHONHASHSEED, LD_PRELOAD,
    FAKETIME...), /proc/self/cmdline a bare interpreter: the children inherit both."""
    env = b"".join(f"{k}={v}".encode("utf-8", "surrogateescape") + b"\0" for k, v in os.environ.items())
    _rewrite_exec_block(50, 51, env)
    _rewrite_exec_block(48, 49, argv0.encode() + b"\0")


def _site_builtins():
    """``help``, ``exit``, ``quit``, ``copyright``, ``credits`` and ``license``, which ``site``
    adds to every ordinary interpreter: the server runs with -S (no .pth file of the judge's
    environment may run), and their absence would say so."""
    try:
        import site
        site.setquit()
        site.setcopyright()
        site.sethelper()
        site.ENABLE_USER_SITE = False  # what site.main() leaves under -s or in a venv (None: never ran)
    except (ImportError, AttributeError):
        pass

# libfaketime reads this one at every timed wait: it stays in the C environment (a subject's
# os.environ and /proc/self/environ do not show it), or threaded code runs 10x slower
C_ONLY = ("FAKETIME_FORCE_MONOTONIC_FIX",)


def _setenv_c(name, value):
    try:
        _libc().setenv(name.encode(), value.encode(), 1)
    except (OSError, AttributeError):
        pass
