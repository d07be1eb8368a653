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

import glob
import importlib.util
import json
import os
import select
import shutil
import signal
import site
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from relconsole.engine.relations.subject import harness

HARNESS = Path(harness.__file__)
FAKETIME_GLOBS = ("/usr/lib/*/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1",
                  "/usr/local/lib/faketime/libfaketime.so.1")


class ServerFault(Exception):
    """The fork server died, hung or said something that is not a frame (the judge's fault
    or the subject's attack on it; either way no call result)."""


@dataclass
class CallResult:
    """One call's result as the server reported it.

    ``status``: ``ok`` (``body`` is the child's result mapping: ``ok`` value on the wire,
    ``raised`` exception data or ``unencodable`` type name, plus ``imported`` tree files),
    ``timeout``, ``died`` (exit status or signal in ``detail``), ``over_cap`` (the result
    exceeded harness.MAX_BYTES) or ``garbage`` (bytes that are not a result). ``seconds``
    is the call's wall time, fork to reap. ``kept``: the server holds the output of this
    ``keep`` call for the next one (``{"type": wire type word, "is_input": bool}``), and
    ``body`` is only ``{"imported": [...]}``; only the server's header sets it, never the
    child's bytes.
    """

    status: str
    body: dict = field(default_factory=dict)
    detail: str = ""
    seconds: float = 0.0
    kept: dict | None = None


_HARNESS_PYC: list[bytes] = []
COMMAND_FILENAME = "<string>"  # what ``python -c`` calls the code it runs


def harness_pyc() -> bytes:
    """The harness compiled once per process, as a ``.pyc`` the server's interpreter runs
    as its script: compiling 1,200 lines cost every server 18 ms of its start. The header is
    PEP 552's unchecked hash-based form (no source beside it to check against)."""
    if not _HARNESS_PYC:
        import importlib.machinery
        import importlib.util
        import marshal
        # the import system's cached bytecode of harness.py when it has one (else it compiles),
        # every code object renamed as ``python -c`` names its code: a subject reading frames
        # sees a -c program (argv and __main__ agree), not us
        code = importlib.machinery.SourceFileLoader("harness", str(HARNESS)).get_code("harness")
        code = _renamed(code, COMMAND_FILENAME)
        flags = (0b01).to_bytes(4, "little")  # hash-based, check_source off
        _HARNESS_PYC.append(importlib.util.MAGIC_NUMBER + flags + bytes(8) + marshal.dumps(code))
    return _HARNESS_PYC[0]


def _renamed(code, filename: str):
    """``code`` with ``co_filename`` set to ``filename`` in it and every code object it holds."""
    consts = tuple(_renamed(c, filename) if isinstance(c, type(code)) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


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


def _faketime_candidates() -> list[str]:
    """libfaketime builds on this machine: the ``libfaketime`` package's (a dependency on
    Linux), then the system's (Debian ``faketime``)."""
    found = []
    spec = importlib.util.find_spec("libfaketime")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found += sorted(glob.glob(os.path.join(folder, "vendor", "libfaketime", "src", "libfaketime.so.1")))
    for pattern in FAKETIME_GLOBS:
        found += sorted(glob.glob(pattern))
    return found


_PROBE = ("import datetime, threading, time\n"
          "time.sleep(0.01); threading.Event().wait(0.01)\n"
          "print(datetime.datetime.now().isoformat())\n")
_FAKETIME: list = []  # [(library, extra environment) or None], once per process


def faketime_setup() -> tuple[str, dict[str, str]] | None:
    """(library, extra variables) of a libfaketime that freezes the wall clock here and
    still lets ``time.sleep`` and timed waits return, or None. Builds differ (one needs
    ``FAKETIME_DONT_FAKE_MONOTONIC``, another breaks with it), so each is tried once in a
    throwaway interpreter; the answer is cached for the process and in the user's cache
    folder, keyed by the library's path, size and modification time."""
    if _FAKETIME:
        return _FAKETIME[0]
    cache_file = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "relconsole" / "faketime.json"
    try:
        cached = json.loads(cache_file.read_text())
    except (OSError, ValueError):
        cached = {}
    answer = None
    for library in _faketime_candidates():
        stat = os.stat(library)
        key = f"{library}:{stat.st_size}:{stat.st_mtime_ns}"
        if key in cached:
            if cached[key] is not None:
                answer = (library, dict(cached[key]))
                break
            continue
        cached[key] = None
        for extra in ({"FAKETIME_DONT_FAKE_MONOTONIC": "1"}, {}):  # the quick failure first
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TZ": "UTC", "LD_PRELOAD": library,
                   "FAKETIME": "2001-02-03 04:05:06", **FAKETIME_FIXED, **extra}
            try:
                proc = subprocess.run([sys.executable, "-S", "-c", _PROBE], env=env, capture_output=True,
                                      text=True, timeout=3)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if proc.returncode == 0 and proc.stdout.strip() == "2001-02-03T04:05:06":
                cached[key] = extra
                break
        if cached[key] is not None:
            answer = (library, dict(cached[key]))
            break
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        scratch = cache_file.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(json.dumps(cached))
        os.replace(scratch, cache_file)
    except OSError:
        pass
    _FAKETIME.append(answer)
    return answer


def site_dirs() -> list[str]:
    """The judge interpreter's site-packages folders (venv first), for the subject's imports."""
    dirs = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    try:
        dirs += site.getsitepackages()
    except AttributeError:
        pass
    out = []
    for entry in dirs:
        if entry and entry not in out and os.path.isdir(entry):
            out.append(entry)
    return out


def base_interpreter() -> str:
    """The interpreter a venv's ``python`` stands for (the venv's own path is not seen)."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    return os.path.realpath(base) if os.path.exists(base) else os.path.realpath(sys.executable)


def neutral_site_dirs(dirs: list[str]) -> dict[str, str]:
    """Each site folder -> where the sandbox shows it: a folder whose path names relconsole
    (its venv in a clone called relconsole) appears as a plain venv's, ``/opt/venv/lib/pythonX.Y/
    site-packages`` (then ``-2``, ``-3`` ...); any other keeps its path."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    out, count = {}, 0
    for entry in dirs:
        if "relconsole" in entry.lower():
            count += 1
            out[entry] = f"/opt/venv/lib/{version}/site-packages" + (f"-{count}" if count > 1 else "")
        else:
            out[entry] = entry
    return out


def _own_location() -> Path:
    return Path(__file__).resolve().parents[4]  # the folder holding the relconsole package


def own_pth_files(dirs: list[str]) -> list[str]:
    """.pth files in ``dirs`` that put relconsole on the path (an editable install): the
    subject's interpreter skips them, so relconsole is not importable there."""
    mine, out = str(_own_location()), []
    for entry in dirs:
        for path in glob.glob(os.path.join(entry, "*.pth")):
            name = os.path.basename(path)
            try:
                text = Path(path).read_text(errors="replace")
            except OSError:
                continue
            if "relconsole" in name or mine in text:
                out.append(name)
    return out


def _hidden_dirs(dirs: list[str]) -> list[str]:
    """relconsole's own files inside the site folders (a normal install), masked in the sandbox."""
    out = []
    for entry in dirs:
        out += glob.glob(os.path.join(entry, "relconsole")) + glob.glob(os.path.join(entry, "relconsole-*"))
        out += glob.glob(os.path.join(entry, "__editable__*relconsole*"))
    return out


def subject_env(home: str, hashseed: int, clock: str | None, faketime: tuple[str, dict] | None,
                extra: dict[str, str] | None = None) -> dict[str, str]:
    """The subject's whole environment: nothing inherited but PATH, the locale and ``extra``
    (the repository's ``pass_env``)."""
    env = dict(extra or {})
    env |= {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "HOME": home, "TMPDIR": home,
           "LANG": os.environ.get("LANG", "C.UTF-8"), "TZ": "UTC", "PYTHONHASHSEED": str(hashseed)}
    # no PYTHONDONTWRITEBYTECODE: sys.dont_write_bytecode would say "a harness"; a sandboxed tree is
    # read-only (nothing is written), a plain process's is a scratch copy
    if clock and faketime:
        env["LD_PRELOAD"] = faketime[0]
        env["FAKETIME"] = _faketime_spec(clock)
        env.update(FAKETIME_FIXED)
        env.update(faketime[1])
    return env


# libfaketime reads FAKETIME again every 10 s by default: once the harness has taken it out of
# the environment (a subject must not see it) the clock would thaw, so it reads it once. And it
# re-reads FAKETIME_FORCE_MONOTONIC_FIX at every timed wait: on glibc >= 2.30 its default
# turns every timed wait of a thread into an immediate timeout (threaded code ran 10x slower);
# the harness keeps that one variable in the C environment only.
FAKETIME_FIXED = {"FAKETIME_CACHE_DURATION": "2000000000", "FAKETIME_FORCE_MONOTONIC_FIX": "0"}


CLOCK_SPAN_DAYS = 30


def clock_span(clock: str, today: str | None = None) -> tuple:
    """(first, last) naive UTC datetimes a drawn clock stands between: the ``CLOCK_SPAN_DAYS``
    days from the later of ``clock``'s day and ``today`` (ISO date, the review's). Raises
    ValueError for text that is not ISO."""
    import datetime as dt
    moment = dt.datetime.fromisoformat(clock)
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.timezone.utc).replace(tzinfo=None)
    first = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if today:
        first = max(first, dt.datetime.combine(dt.date.fromisoformat(today), dt.time()))
    return first, first + dt.timedelta(days=CLOCK_SPAN_DAYS)


def drawn_instant(clock: str, today: str | None = None) -> str:
    """An instant drawn from os.urandom (UTC, to the microsecond) in ``clock_span(clock, today)``.

    A clock standing at midnight of New Year's Day says "a harness" to anything that prints a
    time or a date (``email.utils.formatdate``, a gzip header, ``tm_yday == 1``); a clock
    before the review's day passes code that changes its answer on a date in between (a time
    bomb that production has already met). So it stands on or after the review's day, as
    production's does, at a drawn instant of the month that follows: a bomb set for the
    coming weeks goes off in some runs too."""
    import datetime as dt
    import secrets
    first, last = clock_span(clock, today)
    micros = int((last - first).total_seconds()) * 10**6
    # to the microsecond: a clock on a whole second is a tell too (logging's record.msecs == 0)
    return (first + dt.timedelta(microseconds=secrets.randbelow(micros))).isoformat()


def _faketime_spec(clock: str) -> str:
    """libfaketime's absolute, standing time for an ISO instant (naive means UTC): the wall
    clock reads that instant in every call, so a call and its follow-up agree on "now"."""
    import datetime as dt
    moment = dt.datetime.fromisoformat(clock)
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f" if moment.microsecond else "%Y-%m-%d %H:%M:%S")


def readable(fd: int, seconds: float) -> bool:
    """Whether ``fd`` has data (or EOF) within ``seconds``: poll, not select, which fails for a
    descriptor above 1024 in a long run."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(poller.poll(max(0, int(seconds * 1000) + 1)))


SCRATCH_VARIABLE = "RELCONSOLE_JUDGE_SCRATCH"  # the worker's, never a subject's (its environment is built from nothing)


def _readonly_beside(folders, scratch: Path) -> list[str]:
    """The real paths of ``folders`` that exist and do not hold ``scratch`` (a TMPDIR inside
    the repository: the call writes its home and output there)."""
    out = []
    inner = os.path.realpath(scratch)
    for folder in folders:
        real = os.path.realpath(folder)
        if os.path.isdir(real) and not (inner + os.sep).startswith(real.rstrip(os.sep) + os.sep):
            out.append(real)
    return out


def scratch_root() -> str | None:
    """Where fork servers keep their scratch folders: the judge's own working folder, which
    the process that started the judge removes whatever happens to the judge, named by
    ``RELCONSOLE_JUDGE_SCRATCH`` in the judge's environment (None: the temp dir). Its name is
    a plain temp name: it shows in the sandbox's mount table."""
    named = os.environ.get(SCRATCH_VARIABLE)
    return named if named and os.path.isdir(named) and os.path.realpath(named) == os.path.realpath(os.getcwd()) else None


def draw_hashseed() -> int:
    """A PYTHONHASHSEED for one server's life, from os.urandom (0 is never drawn: 0 turns
    randomisation off, which a subject could notice)."""
    return 1 + int.from_bytes(os.urandom(4), "big") % 4294967294


def other_hashseed(hashseed: int) -> int:
    """The PYTHONHASHSEED of a run's second server, derived from its first's (so replaying a
    run's seed replays both): never the same, never 0."""
    return 1 + (hashseed * 2654435761 + 97) % 4294967293


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
                 extra_env: dict[str, str] | None = None, max_bytes: int = harness.MAX_BYTES,
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
        if os.geteuid() == 0:  # the server maps uid 0 in each call's own user namespace (harness.map_ids)
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
            argv += ["--tmpfs", shown] if os.path.isdir(hidden) else ["--ro-bind", "/dev/null", shown]
        inside = str(self.checkout)
        argv += ["--ro-bind", str(self.root), inside]
        git = self.root / ".git"
        if git.exists():
            argv += ["--tmpfs", f"{inside}/.git"] if git.is_dir() else ["--ro-bind", "/dev/null", f"{inside}/.git"]
        argv += ["--ro-bind", str(self.scratch / "main.pyc"), str(self.scratch / "main.pyc"),
                 "--bind", str(self.scratch / "run"), str(self.scratch / "run"), "--chdir", inside]
        # the root bwrap builds (and /dev) stay writable otherwise: a file left in / or /dev
        # would outlive its call (each call's /tmp and /dev/shm are its own, harness.own_namespaces)
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
            result.kept = {"type": str(header.get("kept_type") or "?"), "is_input": header.get("kept_is_input") is True}
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


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL ``proc``'s process group (it was started in a session of its own) and reap it
    (within 5 seconds; one stuck in the kernel longer is left to the caller's exit)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        wait_exit(proc, 5)
    except subprocess.TimeoutExpired:
        pass


def wait_exit(proc: subprocess.Popen, seconds: float) -> int:
    """``proc.wait(timeout=seconds)`` without its polling: Popen sleeps 0.5 ms, 1 ms, 2 ms ...
    up to 50 ms between looks, which made every reaped server cost up to tens of ms more
    than its exit. A pidfd turns readable the moment the process exits. Returns the exit
    status; raises subprocess.TimeoutExpired as ``wait`` does."""
    if proc.returncode is not None:
        return proc.returncode
    try:
        fd = os.pidfd_open(proc.pid)  # not reaped yet, so the pid cannot be another's
    except (AttributeError, OSError):
        return proc.wait(timeout=seconds)
    try:
        select.select([fd], [], [], seconds)
    finally:
        os.close(fd)
    return proc.wait(timeout=0)


def _signal_name(number) -> str:
    try:
        return signal.Signals(int(number)).name
    except (ValueError, TypeError):
        return f"signal {number}"


def _written_alike(payload: bytes | bytearray, expected: bytes) -> dict | None:
    """``{"same": True, "imported": [...]}`` when ``payload`` is the child's result mapping
    with ``expected`` as its ``ok`` value to the byte (the child writes ``ok`` first, then
    ``imported``, with the judge's own JSON settings), else None."""
    head = b'{"ok":' + expected + b',"imported":'
    if len(payload) < len(head) or payload[:len(head)] != head:
        return None
    try:
        imported = json.loads(payload[len(head):-1])
    except ValueError:
        return None
    if payload[-1:] != b"}" or not isinstance(imported, list):
        return None
    return {"same": True, "imported": imported}


def _kept(payload: bytes | bytearray, seconds: float) -> CallResult:
    """The result of a call made with ``keep``, whose output the server kept for the next
    call (``payload``: the JSON list of the files it imported)."""
    try:
        imported = json.loads(payload)
    except ValueError:
        raise ServerFault("the subject's server sent a kept result that is not one") from None
    if not isinstance(imported, list):
        raise ServerFault("the subject's server sent a kept result that is not one")
    return CallResult("ok", {"imported": imported}, seconds=seconds, kept={})


def _parse(payload: bytes | bytearray, seconds: float) -> CallResult:
    """A child's result bytes as a CallResult; anything but a result mapping is ``garbage``."""
    try:
        body = harness.loads(payload)
    except json.JSONDecodeError:
        return CallResult("garbage", detail="the subject's result is not JSON", seconds=seconds)
    except harness.DECODE_ERRORS as exc:
        return CallResult("garbage", detail=f"the subject's output is not in the wire format: "
                                            f"{type(exc).__name__}", seconds=seconds)
    if not isinstance(body, dict) or not ({"ok", "raised", "unencodable", "history"} & set(body)):
        return CallResult("garbage", detail="the subject's result is not a result mapping", seconds=seconds)
    return CallResult("ok", body, seconds=seconds)
