"""Start and speak to the subject fork server (``harness.py``) from the judge (SPEC §7).

The judge never imports code from the reviewed tree. It starts the harness, compiled once and
written to a scratch folder under a plain name, as ``python -s -S -P main.pyc`` with an environment built
from nothing (no variable of relconsole's or of the caller's shell but PATH and the locale),
a PYTHONHASHSEED drawn for the server's life (recorded in every run made on it), the tree as
its working directory and, where the machine has bubblewrap, inside a sandbox: the tree and
the interpreter read-only, a private /tmp, no network, its own pid namespace, dying with its
parent. Without bubblewrap the isolation is a process (``sandbox: process``).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from relconsole.engine.processes import kill_group
from relconsole.engine.relations.subject import wire
from relconsole.engine.relations.subject.clock import _faketime_spec, drawn_instant, faketime_setup
from relconsole.engine.relations.subject.environment import (_hidden_dirs, _readonly_beside, base_interpreter,
                                                             draw_hashseed, neutral_site_dirs, own_pth_files,
                                                             scratch_root, site_dirs, subject_env)
from relconsole.engine.relations.subject.results import (CallResult, ServerFault, _kept, _parse, _signal_name,
                                                         _written_alike)
from relconsole.engine.relations.subject.script import harness_pyc


def bwrap_path() -> str | None:
    """The bubblewrap binary, when it is installed and can make a sandbox here (checked once)."""
    global _BWRAP_CHECKED
    if _BWRAP_CHECKED is None:
        found = shutil.which("bwrap")
        ok = False
        if found:
            try:
                ok = subprocess.run([found, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent",
                                     "--new-session", "true"], capture_output=True, timeout=20).returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                ok = False
        _BWRAP_CHECKED = (found if ok else "")
    return _BWRAP_CHECKED or None


_BWRAP_CHECKED: str | None = None



def readable(fd: int, seconds: float) -> bool:
    """Whether ``fd`` has data (or EOF) within ``seconds``: poll, not select, which fails for a
    descriptor above 1024 in a long run."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(poller.poll(max(0, int(seconds * 1000) + 1)))


class ForkServer:
    """One harness process serving one tree and one input file.

    ``root``: the materialised tree; ``import_paths``: its import roots (absolute);
    ``input_kind``/``input_path``: ``lease`` (a corpus) or ``seeds`` or None; ``clock``: an
    ISO instant the subject's wall clock starts at (libfaketime), or None for real time;
    ``oracle_roots``: the top-level package names of the oracle's adapters, importable
    before the tree is (for calls that name none of their own); ``sandbox``: ``auto`` (bwrap when it works), ``bwrap`` or
    ``process``; ``checkout``: where the tree appears inside the sandbox (default
    ``/src/<tree folder's name>``, a plain checkout path, so the subject's working folder
    says nothing of relconsole's scratch). Construction returns once the server is started;
    it reads the input meanwhile, and the first call (or ``ready``) waits for it, raising
    ServerFault when it could not start or read the input. ``extra_env``: variables the subject gets besides its own few;
    ``max_bytes``: the cap on one call's result (bytes). ``input_given`` (a corpus): the
    server waits for ``give_input`` to send the rows the judge has decoded instead of parsing
    the file itself.
    """

    def __init__(self, root: Path, import_paths: list[str], input_kind: str | None, input_path: Path | None,
                 clock: str | None = None, oracle_roots: list[str] = (), sandbox: str = "auto",
                 clock_day: bool = False, clock_today: str | None = None,
                 hashseed: int | None = None, checkout: str | None = None,
                 extra_env: dict[str, str] | None = None, max_bytes: int = wire.MAX_BYTES,
                 input_given: bool = False, readonly: list[str] = ()):
        self.root = Path(root)
        self.max_bytes = max_bytes
        self.checkout = Path(checkout) if checkout else self.root
        self.hashseed = hashseed or draw_hashseed()
        self.scratch = Path(tempfile.mkdtemp(prefix="py-", dir=scratch_root()))
        (self.scratch / "main.pyc").write_bytes(harness_pyc())
        (self.scratch / "run").mkdir()
        bwrap = bwrap_path() if sandbox in ("auto", "bwrap") else None
        if sandbox == "bwrap" and not bwrap:
            raise ServerFault("bubblewrap is required (require_sandbox) but cannot make a sandbox here")
        self.sandbox = "bwrap" if bwrap else "process"
        if not bwrap:
            self.checkout = self.root
        elif not checkout:
            self.checkout = Path("/src") / (self.root.name or "project")
        faketime = faketime_setup() if clock else None
        if clock and clock_day:
            clock = drawn_instant(clock, clock_today)
        self.instant = clock  # the ISO instant the clock stands at (None: real time); a second server shares it
        self.clock = ("frozen" if faketime else "real (libfaketime is not installed)") if clock else "real"
        self.frozen_at = f"{_faketime_spec(clock)} UTC" if clock and faketime else None
        dirs = site_dirs()
        self.site_inside = neutral_site_dirs(dirs) if bwrap else {d: d for d in dirs}
        env = subject_env(str(self.scratch / "run"), self.hashseed, clock, faketime, extra_env)
        # in the sandbox the base interpreter runs (a venv's own path may name its project: a
        # clone called relconsole), and the site folders appear where a plain venv's would
        python = [base_interpreter() if bwrap else sys.executable, "-s", "-S", "-P", str(self.scratch / "main.pyc")]
        inside = self._inside
        argv = self._bwrap_argv(bwrap, dirs, env) + python if bwrap else python
        self.stderr = tempfile.TemporaryFile()
        # one socket for both directions: unlike a pipe, /proc/<pid>/fd/N of a socket cannot be
        # opened, so a call cannot write frames into the server's channel to the judge
        self.channel, theirs = socket.socketpair()
        try:
            self.proc = subprocess.Popen(argv, stdin=theirs, stdout=theirs, stderr=self.stderr,
                                         env=env, cwd=str(self.root) if not bwrap else "/",
                                         start_new_session=True)
        except OSError as exc:
            self._cleanup()
            raise ServerFault(f"could not start the subject's interpreter: {exc}") from None
        finally:
            theirs.close()
        self.buffer = bytearray()  # appended in place: a 100 MB result is read in linear time
        init = {"root": inside(self.root), "import_paths": [inside(p) for p in import_paths],
                "site_dirs": [self.site_inside[d] for d in dirs],
                "skip_pth": own_pth_files(dirs), "scratch": str(self.scratch / "run"),
                "input_kind": input_kind, "input": inside(input_path) if input_path else None,
                "oracle_roots": list(oracle_roots), "parent": None if bwrap else os.getpid(),
                "sandboxed": bool(bwrap), "max_bytes": self.max_bytes,
                "input_frame": bool(input_given and input_kind == "lease"),
                # without bubblewrap, each call's own mount namespace binds these read-only (the
                # sandbox never shows them); one holding the server's scratch would break the call
                "readonly": [] if bwrap else _readonly_beside(readonly, self.scratch)}
        self.awaits_input = init["input_frame"]
        self._write(init)
        self.records: int | None = None  # set by ``ready``

    def give_input(self, rows: bytes | None) -> None:
        """Send the corpus rows as ``marshal`` bytes (the judge's own decoded rows: loading
        them takes a fifth of a CSV parse), or None to have the server read the file itself.
        Only for a server made with ``input_given``, once. Raises ServerFault when the server
        is gone."""
        if not self.awaits_input:
            return
        self.awaits_input = False
        self._write({"op": "input", "read": True} if rows is None else {"op": "input", "size": len(rows)})
        if rows is not None:
            try:
                self.channel.sendall(rows)
            except OSError:
                raise ServerFault(f"the subject's server is gone: {self._tail()}") from None

    def ready(self) -> int:
        """Wait until the server has read its input (it does so while the caller goes on);
        returns the number of records read. Raises ServerFault when it could not start."""
        if self.records is None:
            self.give_input(None)  # rows never given: the server reads the file itself
            ready = self._header(time.monotonic() + 600)
            if ready is None or ready.get("status") != "ready":
                why = (ready or {}).get("error") or self._tail() or "no answer"
                self.close()
                raise ServerFault(f"the subject's interpreter did not start: {why}")
            self._check_clock(ready.get("clock"))
            self.records = int(ready.get("records", 0))
        return self.records

    def _check_clock(self, reported) -> None:
        """A clock said frozen must read its instant in the subject's interpreter: a
        libfaketime the sandbox cannot see leaves the real clock running while the record
        would say "frozen". Raises ServerFault (the run aborts, §7) when it does not."""
        if not self.frozen_at or self.instant is None:
            return
        import datetime as dt
        moment = dt.datetime.fromisoformat(self.instant)
        expected = (moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)).timestamp()
        if not isinstance(reported, (int, float)) or abs(reported - expected) > 60:
            self.close()
            raise ServerFault("the frozen clock did not take in the subject's interpreter (libfaketime "
                              "was not loaded there): the run cannot say what time its calls saw")

    def _inside(self, path) -> str:
        """``path`` as the subject sees it (under the checkout path in a sandbox)."""
        text = str(path)
        root = str(self.root)
        if text == root or text.startswith(root + os.sep):
            return str(self.checkout) + text[len(root):]
        return text

    def _bwrap_argv(self, bwrap: str, dirs: list[str], env: dict[str, str]) -> list[str]:
        # --as-pid-1: the server is the namespace's init (no bwrap process there to be seen, and
        # its kill(-1) reaches every other process in it)
        argv = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                "--as-pid-1", "--clearenv"]
        if os.geteuid() == 0:  # the server maps uid 0 in each call's own user namespace (namespaces.map_ids)
            argv += ["--cap-add", "CAP_SETFCAP"]
        for name, value in env.items():
            # a library under a site folder is where the sandbox shows that folder
            argv += ["--setenv", name, self._site_path(value) if name == "LD_PRELOAD" else value]
        # the fresh /tmp, /proc and /dev first: a bind made before them under /tmp (a venv there)
        # would be hidden by them
        argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/dev/shm"]
        for system in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"):
            if os.path.exists(system):
                argv += ["--ro-bind", system, system]
        prefixes = {sys.base_prefix, sys.base_exec_prefix, os.path.dirname(base_interpreter())}
        for path in sorted(prefixes):
            argv += ["--ro-bind", path, path]
        for path in dirs:
            argv += ["--ro-bind", path, self.site_inside[path]]
        for hidden in _hidden_dirs(dirs):
            shown = self._site_path(hidden)
            # an empty folder no call can write to: a file one call left there would meet the next
            argv += ["--tmpfs", shown, "--remount-ro", shown] if os.path.isdir(hidden) else \
                ["--ro-bind", "/dev/null", shown]
        inside = str(self.checkout)
        argv += ["--ro-bind", str(self.root), inside]
        git = self.root / ".git"
        if git.exists():
            argv += ["--tmpfs", f"{inside}/.git"] if git.is_dir() else ["--ro-bind", "/dev/null", f"{inside}/.git"]
        argv += ["--ro-bind", str(self.scratch / "main.pyc"), str(self.scratch / "main.pyc"),
                 "--bind", str(self.scratch / "run"), str(self.scratch / "run"), "--chdir", inside]
        # the root bwrap builds (and /dev) stay writable otherwise: a file left in / or /dev
        # would outlive its call (each call's /tmp and /dev/shm are its own, namespaces.own_namespaces)
        argv += ["--remount-ro", "/dev", "--remount-ro", "/"]
        return argv

    def _site_path(self, path: str) -> str:
        """Where a file of a site folder appears in the sandbox."""
        for real, shown in self.site_inside.items():
            if path == real or path.startswith(real + os.sep):
                return shown + path[len(real):]
        return path

    def _write(self, frame: dict) -> None:
        try:
            self.channel.sendall(json.dumps(frame).encode("utf-8") + b"\n")
        except (BrokenPipeError, OSError, ValueError):
            raise ServerFault(f"the subject's server is gone: {self._tail()}") from None

    def _fill(self, deadline: float) -> bool:
        fd = self.channel.fileno()
        left = deadline - time.monotonic()
        if left <= 0 or not readable(fd, left):
            return False
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            raise ServerFault(f"the subject's server died: {self._tail()}")
        self.buffer += chunk
        return True

    def _header(self, deadline: float) -> dict | None:
        while b"\n" not in self.buffer:
            if len(self.buffer) > 1 << 16:
                raise ServerFault("the subject's server wrote a header that is not one")
            if not self._fill(deadline):
                return None
        end = self.buffer.index(b"\n")
        line = bytes(self.buffer[:end])
        del self.buffer[:end + 1]
        try:
            header = json.loads(line)
        except ValueError:
            raise ServerFault("the subject's server wrote a header that is not JSON") from None
        if not isinstance(header, dict):
            raise ServerFault("the subject's server wrote a header that is not a mapping")
        return header

    def _payload(self, size: int, deadline: float) -> bytearray:
        """The next ``size`` bytes: what is buffered, then read straight into place."""
        data = bytearray(size)
        have = min(size, len(self.buffer))
        data[:have] = self.buffer[:have]
        del self.buffer[:have]
        view, fd = memoryview(data), self.channel.fileno()
        while have < size:
            left = deadline - time.monotonic()
            if left <= 0 or not readable(fd, left):
                raise ServerFault("the subject's server stopped in the middle of a result")
            got = self.channel.recv_into(view[have:], min(size - have, 1 << 22))
            if not got:
                raise ServerFault(f"the subject's server died: {self._tail()}")
            have += got
        return data

    def call(self, call: dict, timeout: float, expect: Callable[[], bytes | None] | None = None) -> CallResult:
        """Make one call (see ``harness.serve_call``); a child's failure is a CallResult,
        the server's own a ServerFault. ``expect``, when given, returns the wire bytes the
        judge expects the output to be (or None): a result written exactly so is not decoded,
        its body is ``{"same": True, "imported": [...]}`` (the bytes equal, so the values do)."""
        self.ready()
        self._write({"op": "call", "call": call, "timeout": timeout})
        deadline = time.monotonic() + timeout + 30
        header = self._header(deadline)
        if header is None:
            raise ServerFault(f"the subject's server did not answer within {timeout:g} s")
        size = header.get("size", 0)
        if not isinstance(size, int) or size < 0 or size > self.max_bytes:
            raise ServerFault("the subject's server sent a result size that is not one")
        payload = self._payload(size, deadline)
        seconds = float(header.get("seconds") or 0.0)
        status = header.get("status")
        if status == "lost":
            raise ServerFault("the subject's server no longer holds the output the call was to read")
        if status == "ok" and call.get("keep") and header.get("kept") is True:
            result = _kept(payload, seconds)
            result.kept.update(type=str(header.get("kept_type") or "?"), is_input=header.get("kept_is_input") is True)
            return result
        if status == "ok":
            expected = expect() if expect is not None else None
            if expected is not None:
                same = _written_alike(payload, expected)
                if same is not None:
                    return CallResult("ok", same, seconds=seconds)
            return _parse(payload, seconds)
        if status == "timeout":
            return CallResult("timeout", detail=f"no result within {timeout:g} s", seconds=seconds)
        if status == "over_cap":
            return CallResult("over_cap", detail=f"the result is over the cap of {self.max_bytes:,} bytes",
                              seconds=seconds)
        how = (f"killed by {_signal_name(header['signal'])}" if "signal" in header
               else f"exit {header.get('exit')}")
        tail = str(header.get("stderr") or "")
        return CallResult("died", detail=f"{how}: {tail}" if tail else how, seconds=seconds)

    def _tail(self) -> str:
        try:
            self.stderr.seek(0)
            lines = self.stderr.read()[-4000:].decode("utf-8", "replace").strip().splitlines()
        except (OSError, ValueError):
            return ""
        return lines[-1][:300] if lines else ""

    def close(self) -> None:
        """End the server and everything under it (its process group; bwrap's namespace)."""
        proc = getattr(self, "proc", None)
        if proc is not None:  # it holds nothing to save: no graceful exit to wait for
            kill_group(proc)
            self.channel.close()
        self._cleanup()

    def _cleanup(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)
        stderr = getattr(self, "stderr", None)
        if stderr is not None:
            stderr.close()
