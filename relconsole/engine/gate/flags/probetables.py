"""What the ``environment_probe`` rule (SPEC §9 as extended by issue 15) knows of the process
around a subject: the modules, dotted names, methods and attributes that read it, with what
reading each one says, and how a name is resolved through a module's imports to the dotted
name those tables know (aliases, ``getattr`` with a literal, re-exported modules).
"""

from __future__ import annotations

import ast



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
    # issue 19 red team: the judge's entry is a bare ``python -c`` program (no __file__, no names),
    # production's a script, a server or pytest
    "__main__": "reads the program that started the process (the judge's is not production's)",
    "sysconfig": "reads where the interpreter and its packages are installed (the judge's are not production's)",
    "distutils": "reads where the interpreter and its packages are installed (the judge's are not production's)",
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
        "addaudithook", "audit", "meta_path", "path_hooks", "path_importer_cache")},
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
    # issue 19: which programs are installed (the judge's machine has bubblewrap and libfaketime)
    "shutil.which": "reads which programs are installed (the judge's machine is not production's)",
    "os.get_exec_path": "reads the environment (PATH)",
    # issue 19: a traceback's text names the files it passed, as __file__ does
    **{f"traceback.{n}": "reads the file names in a traceback (where the code lives)" for n in (
        "format_exc", "format_exception", "print_exc", "print_exception", "format_tb", "extract_tb",
        "print_tb", "TracebackException")},
    # round 15: which files exist (the judge has only what git holds: an untracked file beside
    # the code is there in production and not here), the threads, the interpreter's settings,
    # the streams' encodings, and clocks stamped into output
    **{name: "reads the file system (which files exist differs from machine to machine; the judge has only what git holds)"
       for name in ("os.listdir", "os.scandir", "os.walk", "os.stat", "os.lstat", "os.path.exists", "os.path.lexists",
                    "os.path.isfile", "os.path.isdir", "os.path.islink", "os.path.getsize", "glob.glob", "glob.iglob")},
    **{f"threading.{n}": "reads the process's threads" for n in ("active_count", "activeCount", "enumerate")},
    # red team, issue 35: the judge's line recorder is the threads' trace function too
    **{f"threading.{n}": "reads or replaces the trace functions (the judge's record of the lines a call ran)"
       for n in ("gettrace", "settrace", "getprofile", "setprofile", "settrace_all_threads", "setprofile_all_threads")},
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


# attributes of a function, code object or module that say where code lives or what its module
# holds: ``f.__code__.co_filename`` is ``__file__``, ``f.__globals__`` is ``globals()``, and
# ``yaml.__file__`` says where packages are installed (issue 19)
CODE_ATTRS = frozenset({"__code__", "co_filename", "__globals__", "__file__", "__spec__", "__cached__", "__loader__"})


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
    return _rerooted(canonical(".".join([imports[node.id], *parts])))


def _rerooted(dotted: str) -> str:
    """``os.sys.flags`` -> ``sys.flags``: from the last module another module re-exports."""
    segments = dotted.split(".")
    for index in range(len(segments) - 1, 0, -1):
        if segments[index] in REROOTED and segments[index] != segments[index - 1]:
            return canonical(".".join(segments[index:]))
    return dotted


def canonical(dotted: str) -> str:
    """``dotted`` under its module's usual name (``posix.getppid`` -> ``os.getppid``)."""
    for alias in sorted(MODULE_ALIASES, key=len, reverse=True):
        if dotted == alias or dotted.startswith(alias + "."):
            return MODULE_ALIASES[alias] + dotted[len(alias):]
    return dotted


def constant_probe(text: str) -> str | None:
    """Why the string constant ``text`` names the machine rather than the package (a system
    path, relconsole, a .git folder), or None."""
    if text.startswith(SYSTEM_PREFIXES) or "relconsole" in text.lower():
        return f"names {text[:40]!r} (a path of the machine, not of the package)"
    if ".git" in text and ".git" in text.replace("\\", "/").split("/"):  # a .git folder, not .github or .gitignore
        return f"names {text[:40]!r} (the checkout's git folder, which a sandbox hides)"
    return None


def names_own_file(node: ast.AST) -> bool:
    """Whether ``node`` mentions the module's own location (``__file__``, ``__spec__`` ...)."""
    return any(isinstance(n, ast.Name) and n.id in OWN_LOCATION for n in ast.walk(node))
