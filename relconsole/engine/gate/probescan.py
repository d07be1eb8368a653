"""Code a patch adds that looks at the process around it (the ``environment_probe`` rule of
the review flags, SPEC §9 as extended by issue 15).

A subject runs in a sandbox, and a sandbox can always be told from a production process by
something: its parent's pid, a read-only tree, a network with only ``lo``, a clock that does not
move, the mounts, the user namespace's uid map. A subject that behaves only when it sees one
passes every relation. So the judge also reads the patch: a commit that adds, to code that
is not a test, a read of the process's surroundings, a clock read, a write to a file, a way to
run code the reviewer cannot read (``exec``, ``ctypes``, a computed attribute of a module) or
a compiled module, gets a flag a reviewer must see and acknowledge.

How one would cheat it, and why that is flagged too: an alias (``import os as o``,
``from os import getppid as g``) resolves to the same dotted name; ``getattr(os, "getppid")``
with a literal resolves too, and with a computed name it is itself a probe; ``__import__``,
``importlib``, ``exec``/``eval``/``compile``, ``pickle``/``marshal`` loads and ``ctypes``
are probes; a compiled module (``.so``) cannot be read, so adding one is a probe; moving,
renaming or reformatting code adds nothing (probes are counted by shape over the whole
module). Not found: a path built at run time and read (``open("/" + "proc/...")``) and a
counting thread used as a clock; both are noted on issue 15.
"""

from __future__ import annotations

import ast
import re
from collections import Counter

from relconsole.engine.gate.pyscan import Finding, _before, _judged, _own_nodes, _scopes, parse

# modules whose import alone is the probe (what they are for is the process, the kernel or code)
PROBE_MODULES = {
    "ctypes": "calls C directly", "_ctypes": "calls C directly", "cffi": "calls C directly",
    "resource": "reads the process's resources", "platform": "reads the machine",
    "socket": "reads or opens the network", "subprocess": "runs other programs",
    "signal": "handles or sends signals", "mmap": "maps memory", "fcntl": "drives file descriptors",
    "pwd": "reads the user database", "grp": "reads the group database", "psutil": "reads processes",
    "multiprocessing.shared_memory": "shares memory between processes", "sysv_ipc": "uses System V IPC",
    "posix_ipc": "uses POSIX IPC", "marshal": "loads code objects", "inspect": "reads frames and code",
    "gc": "reaches every object", "posix": "is the os module under its C name", "nt": "is the os module under its C name",
    "runpy": "runs code from a file or module by name", "zipimport": "imports code from an archive",
    "select": "waits on file descriptors (which ones are open says who started it)",
    "selectors": "waits on file descriptors (which ones are open says who started it)",
    "site": "reads how the interpreter was started",
    # round 15: numbers parsed or printed by the machine's locale ("39,1" is 391 under de_DE)
    "locale": "reads the machine's locale (its numbers, dates and sort order differ from machine to machine)",
    "_locale": "reads the machine's locale (its numbers, dates and sort order differ from machine to machine)",
}
# other names of one module: ``posix.getppid`` is ``os.getppid``, ``posixpath.abspath`` is ``os.path.abspath``
MODULE_ALIASES = {"posix": "os", "nt": "os", "posixpath": "os.path", "ntpath": "os.path", "genericpath": "os.path",
                  "pathlib.PosixPath": "pathlib.Path", "pathlib.WindowsPath": "pathlib.Path"}
# functions and attributes, by dotted name, and what reading them says
PROBE_NAMES = {
    **{f"os.{n}": "reads the process's identity" for n in (
        "getppid", "getpid", "getpgid", "getpgrp", "getsid", "getuid", "geteuid", "getgid", "getegid",
        "getgroups", "getlogin", "getresuid", "getresgid", "uname", "getloadavg", "sched_getaffinity", "times")},
    **{f"os.{n}": "reads the environment" for n in ("environ", "environb", "getenv", "getenvb")},
    **{f"os.{n}": "runs or signals processes" for n in (
        "fork", "forkpty", "system", "popen", "kill", "killpg", "execv", "execve", "execl", "execle",
        "execlp", "execvp", "execvpe", "spawnv", "spawnve", "spawnl", "posix_spawn", "posix_spawnp")},
    "os.access": "asks whether a file is writable", "os.statvfs": "reads the file system",
    "os.getcwd": "reads the working folder", "os.getcwdb": "reads the working folder",
    "pathlib.Path.cwd": "reads the working folder",
    "os.path.expanduser": "reads the home folder", "os.path.expandvars": "reads the environment",
    "pathlib.Path.home": "reads the home folder", "tempfile.gettempdir": "reads the scratch folder",
    "getpass.getuser": "reads the user", "shutil.disk_usage": "reads the file system",
    **{f"os.{n}": "writes to the file system" for n in (
        "open", "mkdir", "makedirs", "remove", "unlink", "rename", "renames", "replace", "symlink", "link",
        "utime", "chmod", "chown", "truncate", "mkfifo", "mknod", "rmdir", "removedirs")},
    **{f"shutil.{n}": "writes to the file system" for n in (
        "copy", "copy2", "copyfile", "copytree", "copymode", "copystat", "move", "rmtree")},
    **{f"tempfile.{n}": "writes to the file system" for n in (
        "mkstemp", "mkdtemp", "NamedTemporaryFile", "TemporaryFile", "TemporaryDirectory", "SpooledTemporaryFile")},
    **{f"sys.{n}": "reads the interpreter's state" for n in (
        "_getframe", "_current_frames", "orig_argv", "argv", "flags", "modules", "executable", "path",
        "prefix", "base_prefix", "exec_prefix", "settrace", "setprofile", "gettrace", "getprofile",
        "addaudithook", "audit", "meta_path", "path_hooks")},
    **{f"time.{n}": "reads the clock" for n in (
        "time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "process_time",
        "process_time_ns", "thread_time", "thread_time_ns", "clock_gettime", "clock_gettime_ns",
        "get_clock_info", "clock_getres")},
    **{f"inspect.{n}": "walks the call stack" for n in (
        "stack", "currentframe", "getouterframes", "getframeinfo", "trace", "getinnerframes")},
    **{f"traceback.{n}": "walks the call stack" for n in ("extract_stack", "walk_stack", "format_stack")},
    **{f"gc.{n}": "walks every object" for n in ("get_objects", "get_referrers", "get_referents")},
    "sys.getrefcount": "reads who else holds an object", "sys.intern": "reads which strings are shared",
    "importlib.import_module": "imports by computed name", "importlib.__import__": "imports by computed name",
    "importlib.util.spec_from_file_location": "loads a module from a path",
    "importlib.util.module_from_spec": "loads a module from a path",
    "importlib.reload": "imports again", "builtins.__dict__": "reaches the builtins",
    "pickle.loads": "loads code-carrying data", "pickle.load": "loads code-carrying data",
    "types.CodeType": "builds code", "types.FunctionType": "builds code",
    "os.cpu_count": "reads the machine", "os.sysconf": "reads the machine", "os.confstr": "reads the machine",
    "os.isatty": "reads whether it runs on a terminal", "os.get_terminal_size": "reads the terminal",
    "shutil.get_terminal_size": "reads the terminal", "os.ttyname": "reads the terminal",
    "os.write": "writes to a file descriptor (the judge's result pipe among them)",
    **{f"importlib.machinery.{n}": "loads a module from a path" for n in (
        "SourceFileLoader", "SourcelessFileLoader", "ExtensionFileLoader", "PathFinder", "FileFinder")},
    **{f"operator.{n}": "compares two values by identity: which equal values are one object says how the input "
                        "was built" for n in ("is_", "is_not")},
    "threading.get_native_id": "reads the process's identity", "threading.get_ident": "reads the process's identity",
    "os._exit": "ends the process without returning its output",
    **{f"datetime.datetime.{n}": "reads the clock to the microsecond" for n in ("now", "utcnow", "today")},
    "os.fstat": "reads what a file descriptor is (a terminal, a pipe, /dev/null)",
    **{f"os.{n}": "drives file descriptors by number (which are open says who started it)" for n in (
        "read", "dup", "dup2", "lseek", "close", "closerange", "get_inheritable", "set_inheritable",
        "get_blocking", "set_blocking", "pipe", "device_encoding", "fdatasync", "fsync", "fchmod", "ftruncate")},
    **{f"pickle.{n}": "serialises with a memo: its size says which equal values are one object"
       for n in ("dumps", "dump", "Pickler")},
    **{f"pkgutil.{n}": "lists what the interpreter can import (the judge's import path is not production's)"
       for n in ("iter_modules", "walk_packages", "get_loader", "find_loader", "get_importer", "iter_importers")},
    **{f"importlib.util.{n}": "asks what the interpreter can import (the judge's import path is not production's)"
       for n in ("find_spec", "resolve_name")},
    **{f"importlib.metadata.{n}": "reads which distributions are installed" for n in (
        "distributions", "distribution", "packages_distributions", "files", "metadata", "requires")},
    "importlib.find_loader": "asks what the interpreter can import (the judge's import path is not production's)",
    **{f"os.path.{n}": "reads when a file was touched (a clock the frozen one does not stop)"
       for n in ("getmtime", "getctime", "getatime")},
    "logging.currentframe": "walks the call stack", "traceback.print_stack": "walks the call stack",
    # round 11: a date read through a formatter, and the clocks outside time and datetime
    **{f"time.{n}": "reads the clock" for n in ("strftime", "localtime", "gmtime", "ctime", "asctime")},
    "datetime.date.today": "reads the clock", "email.utils.formatdate": "reads the clock",
    "email.utils.localtime": "reads the clock", "uuid.uuid1": "reads the clock and the machine",
    "threading.main_thread": "reads the process's identity",
    # a memo keeps answers from call to call: a key that leaves out part of the input (a field
    # with compare=False, a hash of a prefix) answers a later call with an earlier one's, which
    # no run of a few calls per process can see
    **{f"functools.{n}": "keeps answers from call to call (a memo whose key a run of a few calls cannot test)"
       for n in ("lru_cache", "cache", "cached_property")},
    # round 12: a clock read through a timer or a log record, the time zone, the core count
    # through another door, and the interpreter's version
    **{f"timeit.{n}": "reads the clock" for n in ("default_timer", "timeit", "repeat", "Timer")},
    **{f"logging.{n}": "reads the clock (a log record's time)" for n in ("LogRecord", "makeLogRecord")},
    "time.mktime": "reads the machine's time zone", "time.tzname": "reads the machine's time zone",
    "time.timezone": "reads the machine's time zone", "time.altzone": "reads the machine's time zone",
    "multiprocessing.cpu_count": "reads the machine", "os.process_cpu_count": "reads the machine",
    **{f"sys.{n}": "asks which Python runs" for n in ("version_info", "version", "hexversion", "implementation")},
    **{f"platform.{n}": "asks which Python runs" for n in ("python_version", "python_version_tuple",
                                                            "python_implementation")},
    # round 13: a cache in a database file beside the code (read-only in the sandbox, so it
    # is off there and on in production)
    **{name: "keeps a database file, which outlives the call (a cache across processes)" for name in (
        "sqlite3.connect", "dbm.open", "shelve.open", "dbm.gnu.open", "dbm.ndbm.open", "dbm.dumb.open")},
    "traceback.StackSummary.extract": "walks the call stack",
    # round 15: which files exist (the judge has only what git holds: an untracked file beside
    # the code is there in production and not here), the threads, the interpreter's settings,
    # the streams' encodings, and clocks stamped into output
    **{name: "reads the file system (which files exist differs from machine to machine; the judge has only what git holds)"
       for name in ("os.listdir", "os.scandir", "os.walk", "os.stat", "os.lstat", "os.path.exists", "os.path.lexists",
                    "os.path.isfile", "os.path.isdir", "os.path.islink", "os.path.getsize", "glob.glob", "glob.iglob")},
    **{f"threading.{n}": "reads the process's threads" for n in ("active_count", "activeCount", "enumerate")},
    **{f"sys.{n}": "reads how the interpreter is set up" for n in (
        "getrecursionlimit", "getswitchinterval", "getdefaultencoding", "getfilesystemencoding",
        "getallocatedblocks", "getprofile", "gettrace")},
    **{f"sys.{stream}.{attr}": "reads what its standard streams are (the judge's are not a terminal's)"
       for stream in ("stdin", "stdout", "stderr", "__stdin__", "__stdout__", "__stderr__")
       for attr in ("encoding", "fileno")},
    "sched.scheduler": "reads the clock (sched's timer)",
    # round 16: which thread or event loop calls it, how logging is set up, random draws (a 1%
    # canary is seen by a run of a few calls only by chance)
    **{f"threading.{n}": "reads which thread calls it (the judge calls from the main thread)"
       for n in ("current_thread", "currentThread", "get_ident", "main_thread")},
    **{f"asyncio.{n}": "asks whether it runs on an event loop (the judge calls it plainly)"
       for n in ("get_running_loop", "get_event_loop", "current_task", "_get_running_loop", "all_tasks")},
    **{f"random.{n}": "draws random numbers (a branch taken on a few calls in a hundred is seen by a run of "
                      "a few calls only by chance)"
       for n in ("random", "randrange", "randint", "choice", "choices", "sample", "shuffle", "uniform", "gauss",
                 "getrandbits", "randbytes", "betavariate", "expovariate", "triangular", "normalvariate",
                 "SystemRandom")},
    **{f"secrets.{n}": "draws random numbers (a branch taken on a few calls in a hundred is seen by a run of "
                       "a few calls only by chance)" for n in ("randbelow", "choice", "token_bytes", "token_hex")},
    "os.urandom": "draws random bytes", "uuid.uuid4": "draws random bytes",
    "logging.root": "reads how logging is set up (the judge's is not production's)",
    "logging.getLevelName": "reads how logging is set up (the judge's is not production's)",
}
# calls whose output carries the clock unless told a time (gzip's header stamps "now")
STAMPING = {"gzip.compress": "mtime", "gzip.GzipFile": "mtime"}
# attributes of frames and of what holds one: whatever their receiver, reading them climbs or
# reads the call stack (``exc.__traceback__.tb_frame.f_back`` is ``sys._getframe(1)``)
STAT_TIMES = frozenset({"st_mtime", "st_ctime", "st_atime", "st_mtime_ns", "st_ctime_ns", "st_atime_ns",
                        "st_birthtime"})
FRAME_ATTRS = frozenset({"f_back", "tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_code", "f_globals",
                         "f_locals", "f_builtins", "f_lineno", "f_lasti"})
# modules a module re-exports as an attribute (``os.sys``, ``subprocess.signal``): ``os.sys.flags``
# is ``sys.flags``
REROOTED = frozenset({"sys", "os", "time", "gc", "inspect", "builtins", "signal", "socket", "subprocess",
                      "ctypes", "threading", "datetime", "pathlib", "tempfile", "platform", "resource", "io",
                      "importlib", "pickle", "marshal", "shutil", "operator", "posix", "mmap", "fcntl"})
# modules whose every name a star import brings in unseen
STAR_PROBED = REROOTED - {"datetime", "pathlib", "io", "operator"}
# methods that read where or how the process runs, whatever their receiver (pathlib's, a stream's)
READ_METHODS = {"isatty": "reads whether it runs on a terminal", "expanduser": "reads the home folder",
                "cache_info": "reads how many calls the process made (a memo's counters)",
                "timestamp": "reads the machine's time zone (the timestamp of a naive datetime)",
                "astimezone": "reads the machine's time zone",
                "resolve": "resolves a path against the working folder", "absolute": "reads the working folder"}
# methods that read the process's surroundings whatever their receiver and arguments
ANY_ARGS_METHODS = {"makeRecord": "reads the clock (a log record's time)",
                    # round 16: a branch on the logging level (the judge's logging is not configured)
                    **{name: "reads how logging is set up (the judge's is not production's)"
                       for name in ("isEnabledFor", "getEffectiveLevel", "hasHandlers")},
                    # round 15: ``day.today()``, ``date.min.today()``: the class's clock through any instance
                    "today": "reads the clock", "now": "reads the clock", "utcnow": "reads the clock",
                    # which files exist, through pathlib or any other receiver
                    **{name: "reads the file system (which files exist differs from machine to machine; "
                             "the judge has only what git holds)"
                       for name in ("exists", "is_file", "is_dir", "is_symlink", "iterdir", "glob", "rglob",
                                    "lstat", "stat")}}
# attributes that read the process's surroundings whatever their receiver
ATTRIBUTE_PROBES = {"_max_workers": "reads how many workers a pool starts (the machine's core count)"}
OWN_LOCATION = frozenset({"__file__", "__spec__", "__loader__", "__cached__", "__path__"})
BUILTINS = {"__debug__": "reads whether python -O runs", "exec": "runs code it builds", "eval": "runs code it builds", "compile": "builds code",
            "__import__": "imports by computed name", "globals": "reaches names by computed key",
            "vars": "reaches names by computed key", "breakpoint": "stops for a debugger",
            "id": "reads object addresses (which objects the judge shares)"}
SYSTEM_PREFIXES = ("/proc", "/sys", "/dev", "/run", "/etc", "/.dockerenv", "/tmp", "/var")
WRITE_MODE = frozenset("wax+")
MODE_LETTERS = frozenset("rwxabt+U")
# methods that write whatever their receiver is (pathlib's, mostly): a pure subject has no use for them
WRITE_METHODS = frozenset({"write_text", "write_bytes", "touch", "mkdir", "symlink_to", "hardlink_to",
                           "link_to", "rmdir", "unlink", "chmod", "lchmod"})
ROOT_SEPARATORS = frozenset({"os.sep", "os.path.sep", "os.altsep", "posixpath.sep"})
COMPILED_SUFFIXES = (".so", ".pyd", ".dll", ".dylib", ".pyc")


def import_targets(module: ast.Module) -> dict[str, str]:
    """Local name -> the dotted name it is bound to by the module's imports: ``import os as o``
    gives o -> os, ``from os import getppid as g`` gives g -> os.getppid, ``import a.b``
    gives a -> a. Relative imports are left out."""
    names: dict[str, str] = {}
    for node in ast.walk(module):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if alias.name != "*":
                    names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
    return names


def _dotted(node: ast.AST, imports: dict[str, str]) -> str | None:
    """The dotted name an expression resolves to through the module's imports
    (``o.getppid`` with ``import os as o`` gives ``os.getppid``; ``getattr(os, "getppid")``
    too), or None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
        inner = _dotted(node.args[0], imports)
        return ".".join([inner, node.args[1].value, *parts]) if inner else None
    if not isinstance(node, ast.Name) or node.id not in imports:
        return None
    return _rerooted(_canonical(".".join([imports[node.id], *parts])))


def _rerooted(dotted: str) -> str:
    """``os.sys.flags`` -> ``sys.flags``: from the last module another module re-exports."""
    segments = dotted.split(".")
    for index in range(len(segments) - 1, 0, -1):
        if segments[index] in REROOTED and segments[index] != segments[index - 1]:
            return _canonical(".".join(segments[index:]))
    return dotted


def _canonical(dotted: str) -> str:
    """``dotted`` under its module's usual name (``posix.getppid`` -> ``os.getppid``)."""
    for alias in sorted(MODULE_ALIASES, key=len, reverse=True):
        if dotted == alias or dotted.startswith(alias + "."):
            return MODULE_ALIASES[alias] + dotted[len(alias):]
    return dotted


def _import_probe(node: ast.AST) -> str | None:
    names = []
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
        names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    if isinstance(node, ast.Import) and "builtins" in names:
        return "imports builtins (reaches the builtins)"
    if isinstance(node, ast.ImportFrom) and node.module and not node.level \
            and any(alias.name == "*" for alias in node.names) and _canonical(node.module).split(".")[0] in STAR_PROBED:
        return f"star-imports {node.module} (its names are then used unseen)"
    for name in names:
        for candidate in (name, name.split(".")[0]):
            if candidate in PROBE_MODULES:
                return f"imports {candidate} ({PROBE_MODULES[candidate]})"
            if candidate in PROBE_NAMES:
                return f"imports {candidate} ({PROBE_NAMES[candidate]})"
    return None


def _call_probe(node: ast.Call, imports: dict[str, str]) -> str | None:
    func = node.func
    called = _dotted(func, imports)
    dotted = _dotted(node, imports)  # getattr(module, "literal")
    if dotted in PROBE_NAMES:
        return f"uses {dotted} ({PROBE_NAMES[dotted]})"
    getter = (_getter_probe(node, imports) or _root_join(node, imports) or _format_probe(node, imports)
              or _setattr_probe(node, imports) or _stack_keyword_probe(node, imports))
    if getter:
        return getter
    if isinstance(func, ast.Name) and func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2:
        if not (isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            target = node.args[0]
            if isinstance(target, ast.Name) and (target.id in imports or target.id in ("__builtins__", "builtins")):
                return f"reaches an attribute of module {target.id} by a computed name"
    if isinstance(func, ast.Name) and func.id == "hasattr" and len(node.args) == 2 \
            and isinstance(node.args[0], ast.Name) and node.args[0].id in imports:
        return f"asks whether module {node.args[0].id} has a name (a test of which version runs)"
    if isinstance(func, ast.Attribute) and func.attr in ANY_ARGS_METHODS:
        return f"{ANY_ARGS_METHODS[func.attr]} (.{func.attr}())"
    if isinstance(func, ast.Attribute) and func.attr == "fromtimestamp" and _no_zone(node):
        return "reads the machine's time zone (fromtimestamp without a tz)"
    if called in STAMPING and not any(k.arg == STAMPING[called] for k in node.keywords):
        return f"stamps the clock into its output ({called} without {STAMPING[called]}=)"
    if _locale_format(node, called):
        return "formats a number by the machine's locale (the n format)"
    if isinstance(func, ast.Attribute) and func.attr in WRITE_METHODS:
        return f"writes to the file system (.{func.attr})"
    if isinstance(func, ast.Attribute) and func.attr in READ_METHODS and not node.args and not node.keywords \
            and not _names_own_file(func.value):
        return f"{READ_METHODS[func.attr]} (.{func.attr}())"
    if called in ("os.path.abspath", "os.path.realpath") and node.args and not _names_own_file(node.args[0]):
        return f"resolves a path against the working folder ({called.rsplit('.', 1)[-1]})"
    if any(isinstance(a, ast.Constant) and a.value == "/" or _dotted(a, imports) in ROOT_SEPARATORS
           for a in node.args) and _builds_paths(func, imports):
        return "builds a path from the root folder (/)"
    plain_open = (isinstance(func, ast.Name) and func.id == "open" and "open" not in imports) \
        or called in ("io.open", "codecs.open", "os.fdopen")
    is_open = plain_open or (isinstance(func, ast.Attribute) and func.attr == "open" and not node.args[1:])
    if is_open:
        args = node.args if plain_open else [None] + node.args
        mode = args[1] if len(args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"), None)
        if isinstance(mode, ast.Constant) and isinstance(mode.value, str) and set(mode.value) <= MODE_LETTERS \
                and WRITE_MODE & set(mode.value):
            return f"opens a file to write (mode {mode.value!r})"
        if mode is not None and not isinstance(mode, ast.Constant):
            return "opens a file with a computed mode"
        where = args[0] if args else None
        if plain_open and isinstance(where, ast.Constant) and isinstance(where.value, str) \
                and not where.value.startswith("/"):
            return f"opens {where.value!r}, a path relative to the working folder (which differs from machine to machine)"
    if called == "random.Random" and not node.args and not node.keywords:
        return "draws random numbers (an unseeded random.Random)"
    return None


def _spec_text(spec: ast.AST | None) -> str:
    """An f-string field's format spec as far as it is literal (``{x:>10n}`` -> ``>10n``)."""
    if not isinstance(spec, ast.JoinedStr):
        return ""
    return "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "\0" for v in spec.values)


def _no_zone(node: ast.Call) -> bool:
    """``fromtimestamp(ts)`` or ``fromtimestamp(ts, None)`` / ``tz=None``: local time."""
    zone = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "tz"), None)
    return len(node.args) <= 2 and (zone is None or isinstance(zone, ast.Constant) and zone.value is None)


_LOCALE_SPEC = re.compile(r"\{[^{}]*:[^{}]*n\}")


def _locale_format(node: ast.Call, called: str | None) -> bool:
    """``format(x, "n")`` or ``"{:n}".format(x)``: a number written by the locale's rules."""
    func = node.func
    if isinstance(func, ast.Name) and func.id == "format" and len(node.args) == 2:
        spec = node.args[1]
        return isinstance(spec, ast.Constant) and isinstance(spec.value, str) and spec.value.endswith("n")
    return isinstance(func, ast.Attribute) and func.attr == "format" and isinstance(func.value, ast.Constant) \
        and isinstance(func.value.value, str) and bool(_LOCALE_SPEC.search(func.value.value))


# the last part of every probe's dotted name: ``operator.attrgetter("environ")(os)`` is os.environ
PROBE_ATTRS = frozenset(name.rsplit(".", 1)[-1] for name in PROBE_NAMES)
ATTRIBUTE_GETTERS = {"operator.attrgetter": None, "operator.methodcaller": 1}  # how many args are names


def _getter_probe(node: ast.Call, imports: dict[str, str]) -> str | None:
    """``operator.attrgetter("environ")``, ``methodcaller("getppid")``: getattr by another name,
    judged as getattr is (a probe's name, or a computed one)."""
    called = _dotted(node.func, imports)
    if called not in ATTRIBUTE_GETTERS:
        return None
    names = node.args[:ATTRIBUTE_GETTERS[called]] if ATTRIBUTE_GETTERS[called] else node.args
    for arg in names:
        if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
            return f"reaches an attribute by a computed name ({called.rsplit('.', 1)[-1]})"
        hit = next((part for part in arg.value.split(".") if part in PROBE_ATTRS), None)
        if hit:
            return f"reaches .{hit} through {called.rsplit('.', 1)[-1]} (getattr by another name)"
    return None


def _format_probe(node: ast.Call, imports: dict[str, str]) -> str | None:
    """``"{0.sys.flags}".format(os)``: a template reaches attributes of a module it is given."""
    func = node.func
    if not (isinstance(func, ast.Attribute) and func.attr in ("format", "format_map", "vformat")):
        return None
    for arg in [*node.args, *(k.value for k in node.keywords)]:
        target = _dotted(arg, imports)
        if target is not None and _probe_target(target):
            return f"gives {target} to a format template (its attributes are reached unseen)"
    return None


def _patch_words(dotted: str) -> str:
    module = dotted.rsplit(".", 1)[0]
    return (f"patches {dotted} (every caller of {module} then gets it, the judge's own code in the "
            "subject's process among them)")


def _setattr_probe(node: ast.Call, imports: dict[str, str]) -> str | None:
    """``setattr(json, "dumps", f)``, ``object.__setattr__(os.path, ...)``: a module patched by a call."""
    func = node.func
    plain = isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and func.id not in imports
    dunder = isinstance(func, ast.Attribute) and func.attr in ("__setattr__", "__delattr__")
    if not (plain or dunder) or not node.args:
        return None
    target = _dotted(node.args[0], imports)
    if target is None:
        return None
    name = node.args[1].value if len(node.args) > 1 and isinstance(node.args[1], ast.Constant) else "…"
    return _patch_words(f"{target}.{name}")


CATCHING = {"warnings.catch_warnings": "record"}  # reads back what it raised: a warning's filename is its caller's


def _stack_keyword_probe(node: ast.Call, imports: dict[str, str]) -> str | None:
    """``warnings.catch_warnings(record=True)`` and ``logger.info(..., stack_info=True)``: the
    call stack read by another way (a recorded warning's file and line are a caller's)."""
    called = _dotted(node.func, imports)
    for keyword in node.keywords:
        on = not (isinstance(keyword.value, ast.Constant) and not keyword.value.value)
        if keyword.arg == "stack_info" and on:
            return "writes the call stack (stack_info): the frames around it say who called"
        if called in CATCHING and keyword.arg == CATCHING[called] and on:
            return "records the warnings it raises (a warning's file and line are its caller's)"
    return None


def _probe_target(dotted: str) -> bool:
    """Whether an imported name is a probe or a module probes are made of."""
    return dotted in PROBE_NAMES or dotted in PROBE_MODULES or dotted.split(".")[0] in REROOTED


def _bound_probe(node: ast.AST, imports: dict[str, str]) -> str | None:
    """``def f(x, os=os)`` or ``o = os``: a module (or a probe) under a name the scan cannot follow."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        values = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
    elif isinstance(node, ast.Assign):
        values = [node.value]
    else:
        return None
    for value in values:
        target = _dotted(value, imports) if isinstance(value, (ast.Name, ast.Attribute)) else None
        if target is not None and _probe_target(target):
            return f"binds {target} to another name (its uses there are not seen as {target})"
    return None


def _root_join(node: ast.Call, imports: dict[str, str]) -> str | None:
    """``"/".join(["", "proc", "1", "cmdline"])``: a path from the root built by a join."""
    func = node.func
    if not (isinstance(func, ast.Attribute) and func.attr == "join" and len(node.args) == 1):
        return None
    separator = func.value
    if not ((isinstance(separator, ast.Constant) and separator.value == "/")
            or _dotted(separator, imports) in ROOT_SEPARATORS):
        return None
    parts = node.args[0]
    if isinstance(parts, (ast.List, ast.Tuple)) and parts.elts:
        first = parts.elts[0]
        if isinstance(first, ast.Constant) and first.value == "":
            named = "/" + "/".join(str(e.value) for e in parts.elts[1:3] if isinstance(e, ast.Constant))
            return _constant_probe(named) or "builds a path from the root folder ('/'.join)"
    return None


PATH_BUILDERS = frozenset({"open", "io.open", "os.path.join", "posixpath.join", "pathlib.Path", "pathlib.PurePath",
                           "pathlib.PosixPath", "pathlib.PurePosixPath", "os.listdir", "os.scandir", "os.walk",
                           "os.stat", "os.lstat", "glob.glob", "glob.iglob"})
QUIET_SCOPES = ("__repr__", "__str__", "__hash__", "__init__")  # id(self) in a repr, a cached hash


def _builds_paths(func: ast.AST, imports: dict[str, str]) -> bool:
    """Whether a call of ``func`` makes or opens a path (``"/".join`` and ``s.split("/")`` do not)."""
    if isinstance(func, ast.Name) and func.id in ("open", "Path") and func.id not in imports:
        return True
    return _dotted(func, imports) in PATH_BUILDERS


def _thread_like(node: ast.AST, imports: dict) -> bool:
    """Whether ``node`` is a thread reached from threading (``threading.main_thread()``,
    ``current_thread()``) or any call or name ending in ``thread``: its ``native_id`` is a pid."""
    target = node.func if isinstance(node, ast.Call) else node
    dotted = _dotted(target, imports) or ""
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
    return dotted.startswith("threading.") or name.lower().endswith("thread")


def _name_probe(node: ast.AST, imports: dict[str, str], scope_name: str = "") -> str | None:
    if isinstance(node, ast.Name) and node.id not in imports:
        if node.id == "id" and scope_name.rsplit(".", 1)[-1] in QUIET_SCOPES:
            return None
        if node.id in BUILTINS:
            return f"uses {node.id} ({BUILTINS[node.id]})"
        if node.id in OWN_LOCATION - {"__file__"}:  # __file__ alone names a data file beside it
            return f"reads where its module was loaded from ({node.id})"
        return "reaches the builtins module" if node.id == "__builtins__" else None
    dotted = _dotted(node, imports)
    return f"uses {dotted} ({PROBE_NAMES[dotted]})" if dotted in PROBE_NAMES else None


def _leftmost(node: ast.AST) -> ast.AST:
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        node = node.left
    return node


def _folded(node: ast.BinOp) -> str:
    """The leading text of a ``+`` chain of string constants (``"/pr" + "oc" + x`` gives ``/proc``)."""
    parts = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.BinOp) and isinstance(item.op, ast.Add):
            stack += [item.right, item.left]
        elif isinstance(item, ast.Constant) and isinstance(item.value, str):
            parts.append(item.value)
        else:
            break
    return "".join(parts)


def _path_probe(node: ast.AST, imports: dict[str, str]) -> str | None:
    """A path built at run time that starts at the root: ``"/" + x``, ``os.sep + x``,
    ``"/pr" + "oc"``, ``f"/{x}"``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        first = _leftmost(node)
        if _dotted(first, imports) in ROOT_SEPARATORS:
            return "builds a path from the root folder (os.sep + ...)"
        text = _folded(node)
        if text.startswith("/"):
            return _constant_probe(text) or "builds a path from the root folder (/ + ...)"
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant) \
            and str(node.values[0].value).startswith("/"):
        return "builds a path from the root folder (an f-string)"
    return None


def _constant_probe(text: str) -> str | None:
    if text.startswith(SYSTEM_PREFIXES) or "relconsole" in text.lower():
        return f"names {text[:40]!r} (a path of the machine, not of the package)"
    if ".git" in text and ".git" in text.replace("\\", "/").split("/"):  # a .git folder, not .github or .gitignore
        return f"names {text[:40]!r} (the checkout's git folder, which a sandbox hides)"
    return None


def _names_own_file(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id in OWN_LOCATION for n in ast.walk(node))


def _where_probe(node: ast.AST) -> str | None:
    """A comparison of where the module's own file is (``__file__.startswith("/src/")``)."""
    if isinstance(node, ast.Compare) and _names_own_file(node):
        return "compares where its own file is"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in ("startswith", "endswith", "find", "index", "count") and _names_own_file(node):
        return "inspects where its own file is"
    return None


def _salted_hash(node: ast.AST, scope_name: str, imports: dict[str, str]) -> str | None:
    """``hash(...)`` outside a ``__hash__``: str and bytes hashes are salted per process, so an
    output built from them agrees between the calls of one judge and nowhere else."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "hash" \
            and "hash" not in imports and scope_name.rsplit(".", 1)[-1] not in ("__hash__", "__init__"):
        return "uses hash(), salted per process (its value differs in every production process)"
    return None


SENTINELS = frozenset({"None", "True", "False", "NotImplemented", "Ellipsis"})
SENTINEL_WORDS = ("sentinel", "missing", "marker", "unset", "notset", "nothing", "default", "empty", "undefined")


def _sentinel(node: ast.AST) -> bool:
    """An operand ``is`` is for: a constant, a singleton, a module-level marker by convention
    (``_MISSING``, ``SENTINEL``), a class or ``type(x)``."""
    if isinstance(node, ast.Constant):
        return True
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    if name is not None:
        bare = name.strip("_")
        return (name in SENTINELS or bare.isupper() or bare[:1].isupper()
                or any(word in bare.lower() for word in SENTINEL_WORDS))
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type"


def _identity_probe(node: ast.AST) -> str | None:
    """``a is b`` between two values of the data (``row["species"] is prev["species"]``):
    whether two equal cells are one object says how the input was built (the judge reads a
    corpus once and shares equal cells; ``csv.DictReader`` does not), never what it holds."""
    if not isinstance(node, ast.Compare) or not any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
        return None
    operands = [node.left, *node.comparators]
    for op, left, right in zip(node.ops, operands, operands[1:]):
        if isinstance(op, (ast.Is, ast.IsNot)) and not _sentinel(left) and not _sentinel(right):
            return "compares two values by identity (is): which equal values are one object says how the input was built"
    return None


IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError"})


BROAD_ERRORS = frozenset({"Exception", "BaseException"})  # they catch an import's failure too


def _suppressed_import(node: ast.AST, imports: dict[str, str]) -> str | None:
    """``with contextlib.suppress(ImportError): import x``: the same choice as ``_optional_import``."""
    if not isinstance(node, ast.With) or not any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in node.body):
        return None
    for item in node.items:
        call = item.context_expr
        if isinstance(call, ast.Call) and _dotted(call.func, imports) in ("contextlib.suppress",) and any(
                isinstance(a, ast.Name) and a.id in IMPORT_ERRORS | BROAD_ERRORS for a in call.args):
            return "chooses its code by what can be imported (the judge and production may not reach the same modules)"
    return None


FILE_ERRORS = frozenset({"FileNotFoundError", "OSError", "IOError", "EnvironmentError", "PermissionError",
                         "IsADirectoryError", "NotADirectoryError"})
READS_FILE = frozenset({"open", "read_text", "read_bytes", "load", "loadtxt"})


def _optional_file(node: ast.AST) -> str | None:
    """``try: open("symbols.json") / except FileNotFoundError: <other code>``: which code runs
    depends on a file being there, and the judge's tree holds only what git holds."""
    if not isinstance(node, ast.Try):
        return None
    opens = any(isinstance(n, ast.Call) and (isinstance(n.func, ast.Name) and n.func.id == "open" or
                                              isinstance(n.func, ast.Attribute) and n.func.attr in READS_FILE)
                for stmt in node.body for n in ast.walk(stmt))
    if not opens:
        return None
    for handler in node.handlers:
        caught = handler.type
        names = [caught] if not isinstance(caught, ast.Tuple) else list(caught.elts)
        if caught is None or any(isinstance(n, ast.Name) and n.id in FILE_ERRORS | BROAD_ERRORS for n in names):
            return ("chooses its code by whether a file is there (the judge's tree holds only what git holds; "
                    "production may hold more)")
    return None


def _module_partial_state(node: ast.AST, imports: dict[str, str]) -> str | None:
    """``_calls = functools.partial(dict.setdefault, {})`` at module level: a mutable object kept
    inside a callable, changed by every call of it (a counter nobody sees)."""
    if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            and _dotted(node.value.func, imports) in ("functools.partial", "functools.partialmethod")):
        return None
    values = list(node.value.args) + [k.value for k in node.value.keywords]
    if any(isinstance(v, (ast.Dict, ast.List, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp))
           or isinstance(v, ast.Call) and _dotted(v.func, imports) in MUTABLE_MAKERS for v in values):
        return STATE.format("keeps a mutable object inside a module-level functools.partial")
    return None


def _optional_import(node: ast.AST) -> str | None:
    """``try: import x / except ImportError: <other code>``: which code runs depends on what
    the interpreter can import, and a module only the judge's import path reaches (the tree's
    root) makes the subject behave otherwise there than in production."""
    if not isinstance(node, ast.Try) or not any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in node.body):
        return None
    for handler in node.handlers:
        caught = handler.type
        names = [caught] if not isinstance(caught, ast.Tuple) else list(caught.elts)
        if caught is None or any(isinstance(n, ast.Name) and n.id in IMPORT_ERRORS | BROAD_ERRORS for n in names):
            return "chooses its code by what can be imported (the judge and production may not reach the same modules)"
    return None


def _local_names(scope: ast.AST, nodes: list[ast.AST]) -> set[str]:
    """Names a function binds itself (parameters, assignments): ``monotonic`` as a flag
    parameter is not ``time.monotonic``."""
    names = set()
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = scope.args
        names |= {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        names |= {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return names


MUTABLE_MAKERS = frozenset({"dict", "list", "set", "bytearray", "collections.defaultdict", "collections.Counter",
                            "collections.OrderedDict", "collections.deque", "itertools.count", "itertools.cycle",
                            "weakref.WeakValueDictionary", "weakref.WeakKeyDictionary", "weakref.WeakSet",
                            "types.SimpleNamespace", "array.array"})
# calls that change their first argument in place (``heapq.heappush(_HEAP, x)``)
MUTATING_CALLS = frozenset({"bisect.insort", "bisect.insort_left", "bisect.insort_right", "heapq.heappush",
                            "heapq.heappop", "heapq.heapreplace", "heapq.heappushpop", "heapq.heapify",
                            "operator.setitem", "operator.delitem", "operator.iadd", "setattr", "delattr"})
MUTATORS = frozenset({"append", "add", "update", "setdefault", "extend", "insert", "pop", "popitem", "clear",
                      "remove", "discard", "appendleft", "extendleft", "rotate", "__setitem__", "__delitem__"})
STATE = "keeps state from call to call ({}): a process's later calls may differ from its first, and the judge sees few calls per process"


def _mutable_value(node: ast.AST, imports: dict[str, str]) -> bool:
    """A value that a function can change in place: a display, or a call of a known maker."""
    if isinstance(node, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)):
        return True
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) and func.id not in imports else _dotted(func, imports)
        return name in MUTABLE_MAKERS
    return False


def _mutable_bindings(statements, imports: dict[str, str]) -> frozenset[str]:
    """Names ``statements`` bind to a mutable value (``_CACHE = {}``, ``_calls = itertools.count()``)."""
    names = set()
    for node in statements:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) and node.value else []
        if targets and _mutable_value(node.value, imports):
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return frozenset(names)


def module_state(tree: ast.Module, imports: dict[str, str]) -> frozenset[str]:
    """The mutable names the module binds at its top level: state that outlives one call. (A
    closure's own list, made anew by each call of its enclosing function, is not.)"""
    return _mutable_bindings(tree.body, imports)


def _state_probe(node: ast.AST, state: frozenset[str], shadowed: set[str], in_function: bool,
                 defaults: frozenset[str] = frozenset(), owners: dict[str, str] | None = None,
                 instances: frozenset[str] = frozenset(), imports: dict[str, str] | None = None) -> str | None:
    """In a function: ``global x``, or a change in place of a module-level mutable (``_CACHE[k] =``,
    ``_SEEN.add(k)``, ``next(_calls)``), of a mutable default argument or of what a returned
    closure holds (``owners``: name -> words), or a method call on a module-level object whose
    methods change it (``instances``)."""
    if not in_function:
        return None
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return STATE.format(f"{'global' if isinstance(node, ast.Global) else 'nonlocal'} {', '.join(node.names)}")
    def held(target):
        while isinstance(target, (ast.Subscript, ast.Attribute)):
            target = target.value
        return isinstance(target, ast.Name) and target.id in state and target.id not in shadowed and target.id
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        for target in targets:
            if isinstance(target, (ast.Subscript, ast.Attribute)) and held(target):
                return STATE.format(f"changes {_owner(held(target), defaults, owners)}")
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in MUTATORS and held(func.value):
            return STATE.format(f"changes {_owner(held(func.value), defaults, owners)}")
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and held(func.value) in instances:
            return STATE.format(f"calls .{func.attr}() of module-level {func.value.id}, an object its methods change")
        called = _dotted(func, imports or {}) or (func.id if isinstance(func, ast.Name) else None)
        if called in MUTATING_CALLS and node.args and held(node.args[0]):
            return STATE.format(f"changes {_owner(held(node.args[0]), defaults, owners)} ({called})")
        if isinstance(func, ast.Name) and func.id == "next" and node.args and held(node.args[0]):
            return STATE.format(f"advances {_owner(held(node.args[0]), defaults, owners)}")
    return None


def class_state(tree: ast.Module, imports: dict[str, str]) -> frozenset[str]:
    """Names a class binds in its body to a mutable value (``_rows: dict = {}``): one object
    every instance shares, however ``self._rows`` reads."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            names |= _mutable_bindings(node.body, imports)
    return frozenset(names)


def _self_state_probe(node: ast.AST, shared: frozenset[str], assigned: frozenset[str],
                      classes: frozenset[str] = frozenset()) -> str | None:
    """``self._rows.update(...)``, ``self._rows[k] = v`` where ``_rows`` is a mutable class
    attribute the method's class never gives an instance its own of (``self._rows = {}``), or
    ``Store._rows[k] = v`` through the name of a class of the module (``classes``)."""
    def attribute(target):
        while isinstance(target, ast.Subscript):
            target = target.value
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.attr in shared):
            return None
        by_instance = target.value.id in ("self", "cls") and target.attr not in assigned
        return target.attr if by_instance or target.value.id in classes else None
    hit = None
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        hit = next((attribute(t) for t in targets if isinstance(t, ast.Subscript) and attribute(t)), None)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
        hit = attribute(node.func.value)
    return STATE.format(f"changes class attribute {hit}, one for every instance") if hit else None


def instance_assigned(tree: ast.Module) -> frozenset[str]:
    """Attributes some method gives the instance itself (``self.x = ...``)."""
    return frozenset(t.attr for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AnnAssign))
                     for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                     if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self")


CONSTANT_DUNDERS = {"__eq__": "equality", "__ne__": "equality", "__hash__": "a hash", "__lt__": "an order",
                    "__le__": "an order", "__gt__": "an order", "__ge__": "an order"}


def _constant_dunder(node: ast.AST) -> str | None:
    """``def __eq__(self, other): return True``: an equality (hash, order) that ignores the
    value makes every two values one to a set, a dict or a cache."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name not in CONSTANT_DUNDERS:
        return None
    body = [n for n in node.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    if len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Constant) \
            and body[0].value.value is not NotImplemented and not isinstance(body[0].value.value, type(NotImplemented)):
        return (f"defines {CONSTANT_DUNDERS[node.name]} that ignores the value ({node.name} returns "
                f"{body[0].value.value!r}): every two values are one to a set, a dict or a cache")
    return None


def _aliases(nodes: list[ast.AST], held: frozenset[str]) -> dict[str, str]:
    """Local names bound to a held mutable by plain assignment (``keys = _recent_keys``, or
    ``keys, answers = _K, _A``): name -> the held name it stands for."""
    out = {}
    for node in nodes:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs = zip(target.elts, node.value.elts) if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) \
                else [(target, node.value)]
            for name, value in pairs:
                if isinstance(name, ast.Name) and isinstance(value, ast.Name) and value.id in held:
                    out[name.id] = value.id
    return out


def _owner(name: str, defaults: frozenset[str], owners: dict[str, str] | None = None) -> str:
    if owners and name in owners:
        return owners[name]
    return f"{'its mutable default' if name in defaults else 'module-level'} {name}"


def closure_state(tree: ast.Module, imports: dict[str, str]) -> dict[int, frozenset[str]]:
    """id(nested function) -> the mutables of its enclosing function it can reach, for every
    nested function its enclosing one returns (``def make(): table = {}; def get(k): ...;
    return get``): bound once at module level (``_get = make()``), that table lives as long
    as the process, as a module-level one does. A closure used only inside its own call is not."""
    out: dict[int, frozenset[str]] = {}
    for _, scope in _scopes(tree):
        if isinstance(scope, ast.Module):
            continue
        own = list(_own_nodes(scope))
        nested = {n.name: n for n in own if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        returned = {n.value.id for n in own if isinstance(n, ast.Return) and isinstance(n.value, ast.Name)}
        mutables = _mutable_bindings([n for n in own if isinstance(n, (ast.Assign, ast.AnnAssign))], imports)
        for name in returned & set(nested):
            if mutables:
                out[id(nested[name])] = mutables
    return out


def stateful_instances(tree: ast.Module) -> frozenset[str]:
    """Module-level names bound to an instance of a class of this module some method of which
    (``__init__`` aside) gives or changes an attribute of ``self``: one object every call shares."""
    changing = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for method in node.body:
                if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method.name not in (
                        "__init__", "__new__", "__post_init__") and _changes_self(method):
                    changing.add(node.name)
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and isinstance(node.value.func, ast.Name) and node.value.func.id in changing:
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return frozenset(names)


def _changes_self(method: ast.AST) -> bool:
    def on_self(target):
        while isinstance(target, (ast.Subscript, ast.Attribute)):
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                return True
            target = target.value
        return False
    for node in ast.walk(method):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            if any(on_self(t) for t in targets):
                return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS \
                and on_self(node.func.value):
            return True
    return False


def _mutable_defaults(scope: ast.AST, imports: dict[str, str]) -> frozenset[str]:
    """Parameters whose default is a mutable value: one object shared by every call."""
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return frozenset()
    args = scope.args
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return frozenset(a.arg for a, d in pairs if _mutable_value(d, imports))


def _probes(_name: str, scope: ast.AST, module: ast.Module, module_imports: dict[str, str],
            state: frozenset[str] = frozenset(), shared: tuple = (frozenset(), frozenset()),
            enclosed: frozenset[str] = frozenset(), instances: frozenset[str] = frozenset()):
    """(node, detail) of every probe in ``scope``'s own body (docstrings aside)."""
    nodes = list(_own_nodes(scope))
    shadowed = _local_names(scope, nodes)
    # __import__("json") names its module: judged as that import, not as a computed name
    literal_imports = {id(n.func): n.args[0].value for n in nodes if isinstance(n, ast.Call)
                       and isinstance(n.func, ast.Name) and n.func.id == "__import__" and n.args
                       and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str)}
    imports = {k: v for k, v in module_imports.items() if k not in shadowed} if shadowed else module_imports
    docs = {id(n.value) for n in nodes if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    in_function = not isinstance(scope, ast.Module)
    constant = _constant_dunder(scope)
    if constant:
        yield scope, constant
    defaults = _mutable_defaults(scope, imports)
    owners = {n: f"its enclosing function's {n} (kept as long as the closure it returns)" for n in enclosed}
    held = ((state | enclosed) - shadowed) | defaults  # a mutable default is shared state too
    aliases = _aliases(nodes, held)  # ``keys = _recent_keys``: the same list by a local name
    owners.update((alias, f"module-level {target} (as {alias})") for alias, target in aliases.items())
    held |= frozenset(aliases)
    shadowed = shadowed - set(aliases)
    for node in nodes:
        why = _state_probe(node, held, shadowed - defaults, in_function, defaults, owners, instances - shadowed,
                           imports) \
            or (_self_state_probe(node, *shared) if in_function else None)
        if why is not None:
            pass
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            why = _import_probe(node)
        elif isinstance(node, ast.Call):
            why = _call_probe(node, imports) or _where_probe(node) or _salted_hash(node, _name, imports)
        elif isinstance(node, ast.Compare):
            why = _where_probe(node) or _identity_probe(node)
        elif id(node) in literal_imports:
            why = _import_probe(ast.Import(names=[ast.alias(name=literal_imports[id(node)])]))
        elif isinstance(node, (ast.Attribute, ast.Name)) and isinstance(node.ctx, ast.Load):
            why = None if isinstance(node, ast.Name) and node.id in shadowed else _name_probe(node, imports, _name)
            if why is None and isinstance(node, ast.Attribute) and node.attr == "__dict__" and _dotted(node.value, imports):
                why = f"reaches the names of module {_dotted(node.value, imports)} through __dict__"
            if why is None and isinstance(node, ast.Attribute) and node.attr in FRAME_ATTRS:
                why = f"reads a frame (.{node.attr}): the call stack around it says who called"
            if why is None and isinstance(node, ast.Attribute) and node.attr in ("native_id", "ident") \
                    and _thread_like(node.value, imports):
                why = f"reads the process's identity (.{node.attr} of a thread)"
            if why is None and isinstance(node, ast.Attribute) and node.attr in ATTRIBUTE_PROBES:
                why = f"{ATTRIBUTE_PROBES[node.attr]} (.{node.attr})"
            if why is None and isinstance(node, ast.Attribute) and node.attr in STAT_TIMES:
                why = f"reads when a file was touched (.{node.attr}): a clock the frozen one does not stop"
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)) and _dotted(node, imports):
            why = _patch_words(_dotted(node, imports))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            why = _constant_probe(node.value)
        elif isinstance(node, (ast.BinOp, ast.JoinedStr)):
            why = _path_probe(node, imports)
        elif isinstance(node, ast.FormattedValue) and _spec_text(node.format_spec).endswith("n"):
            why = "formats a number by the machine's locale (the n format)"
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "__dict__":
            why = "reaches names through __dict__"
        elif isinstance(node, ast.Try):
            why = _optional_import(node) or _optional_file(node)
        elif isinstance(node, ast.With):
            why = _suppressed_import(node, imports)
        elif isinstance(node, ast.Assert) and any(isinstance(n, ast.NamedExpr) for n in ast.walk(node.test)):
            why = "does work inside an assert (python -O removes it, and what it binds with it)"
        if why is None and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Assign)):
            why = _bound_probe(node, imports)
        if why is None and not in_function:
            why = _module_partial_state(node, imports)
        if why:
            yield node, why


def _all_probes(tree: ast.Module) -> list[tuple[ast.AST, str]]:
    imports = import_targets(tree)  # once per module: per function it made big files quadratic
    instances = stateful_instances(tree)
    state = module_state(tree, imports) | instances
    shared = (class_state(tree, imports), instance_assigned(tree),
              frozenset(n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)))
    enclosed = closure_state(tree, imports)
    # a lambda's body is code too (``JUDGED = lambda: os.getppid()``)
    return [found for name, scope in _scopes(tree, lambdas=True)
            for found in _probes(name, scope, tree, imports, state, shared, enclosed.get(id(scope), frozenset()), instances)]


def environment_probes(before: str | None, after: str | None) -> list[Finding]:
    """Probes of the process's surroundings that ``after`` adds to ``before`` (module source
    text, None when absent), one Finding per probe, in source order. Counted over the whole
    module by shape, so moving, renaming or reformatting code adds nothing. Raises Unjudged
    when ``after`` cannot be judged (the caller flags that too: unread code is not cleared)."""
    tree = parse(after)
    if tree is None:
        return []

    def scan():
        old = _before(before)
        left = Counter(ast.dump(node) for node, _ in _all_probes(old)) if old is not None else Counter()
        found = []
        for node, detail in sorted(_all_probes(tree), key=lambda item: (item[0].lineno, item[0].col_offset)):
            key = ast.dump(node)
            if left[key]:
                left[key] -= 1
            elif Finding(node.lineno, detail) not in found:  # "/" + a + b is one path, not two
                found.append(Finding(node.lineno, detail))
        return found
    return _judged(scan)


def is_compiled(path: str) -> bool:
    """Whether ``path`` is a compiled module or library Python could load (code nobody can read)."""
    return path.lower().endswith(COMPILED_SUFFIXES) or ".so." in path.rsplit("/", 1)[-1]
