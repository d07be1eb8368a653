"""The environment_probe rule (issue 15): code a patch adds that looks at the process around
it. A sandbox can always be told from production, so the judge also reads the patch."""

from __future__ import annotations

import ast
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relconsole.engine.gate.flags import pysource
from relconsole.engine.gate.flags.probescan import _all_probes, environment_probes, is_compiled

# Each a way to see a sandbox: the parent is pid 1, the tree is read-only, only lo, a frozen
# clock; and the usual ways to hide the look (aliases, getattr, exec, __import__, importlib).
PROBES = {
    # issue 19: the entry program, which the judge's bare one tells from a script, a server or pytest
    "entry-script": "import __main__\nJUDGED = '__file__' not in dir(__main__)\n",
    "entry-script-from": "from __main__ import __doc__ as _doc\nJUDGED = _doc is None\n",
    "entry-script-literal": "JUDGED = len(dir(__import__('__main__'))) < 12\n",
    # issue 19: where the code lives, through its code object or its globals, and the import path's cache
    "code-filename": "def f():\n    pass\n\n\nJUDGED = 'site-packages' not in f.__code__.co_filename\n",
    "function-globals": "def f():\n    pass\n\n\nJUDGED = f.__globals__.get('__cached__') is None\n",
    "importer-cache": "import sys\nJUDGED = any(k.endswith('.pyc') for k in sys.path_importer_cache)\n",
    "install-paths": "import sysconfig\nJUDGED = sysconfig.get_paths()['purelib']\n",
    "package-file": "import json\nJUDGED = json.__file__.endswith('.py')\n",
    "package-spec": "import json\nJUDGED = json.__spec__.origin\n",
    "stdlib-private": "import tempfile\nJUDGED = tempfile._name_sequence is not None\n",
    "stdlib-private-alias": "import tempfile as t\nJUDGED = getattr(t, '_name_sequence') is None\n",
    "installed-program": "import shutil\nJUDGED = shutil.which('bwrap') is not None\n",
    "exec-path": "import os\nJUDGED = len(os.get_exec_path())\n",
    "traceback-text": "import traceback\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    JUDGED = '/src/' in traceback.format_exc()\n",
    "ppid": "import os\nJUDGED = os.getppid() == 1\n",
    "ppid-alias": "import os as o\nJUDGED = o.getppid() == 1\n",
    "ppid-from-alias": "from os import getppid as g\nJUDGED = g() == 1\n",
    "ppid-getattr": "import os\nJUDGED = getattr(os, 'getppid')() == 1\n",
    "ppid-computed": "import os\nJUDGED = getattr(os, 'get' + 'ppid')() == 1\n",
    "environ-attrgetter": "import operator, os\nJUDGED = operator.attrgetter('environ')(os).get('HOME')\n",
    "ppid-methodcaller": "from operator import methodcaller\nimport os\nJUDGED = methodcaller('getppid')(os)\n",
    "attrgetter-computed": "import operator, os\nJUDGED = operator.attrgetter('env' + 'iron')(os)\n",
    "proc-joined": "JUDGED = open('/'.join(['', 'proc', '1', 'cmdline'])).read()\n",
    "root-joined-os-sep": "import os\nJUDGED = os.listdir(os.sep.join(['', 'tmp']))\n",
    # round 11 (a red team that had not read the code): a memo whose key leaves out part of the
    # input, a memo's counters as a call counter, a date salted into a hash, a thread's pid
    "memo-lru": "import functools\n\n@functools.lru_cache(maxsize=None)\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
    "memo-cache-from": "from functools import cache\n\n@cache\ndef admitted(setting):\n    return setting.percent\n",
    "memo-property": "from functools import cached_property\n\nclass Store:\n    @cached_property\n    def snapshot(self):\n        return dict(self.rows)\n",
    "memo-counters": "def judged(f):\n    return f.cache_info().hits > 40\n",
    "date-today": "import datetime\n\ndef stamp():\n    return datetime.date.today().isoformat()\n",
    "date-strftime": "import time\n\ndef salt(s):\n    return s + time.strftime('%Y-%m-%d')\n",
    "date-localtime": "from time import localtime\nJUDGED = localtime().tm_yday\n",
    "date-formatdate": "import email.utils\nJUDGED = email.utils.formatdate()\n",
    "clock-uuid1": "import uuid\nJUDGED = uuid.uuid1().time\n",
    "pid-main-thread": "import threading\nJUDGED = threading.main_thread().native_id > 2\n",
    "pid-thread-attr": "def judged(t):\n    return t.current_thread().native_id\n",
    # round 12: a memo in a closure or on a module-level object, clocks through a timer or a
    # log record, the time zone, the core count and the version through other doors, an assert
    # that does work
    "closure-memo": "def _tables():\n    tables = {}\n\n    def table(salt):\n        if salt not in tables:\n"
                    "            tables[salt] = len(salt)\n        return tables[salt]\n\n    return table\n\n\n_table = _tables()\n",
    "closure-buffer": "def _reused():\n    buffer: dict = {}\n\n    def take():\n        buffer.clear()\n"
                      "        return buffer\n\n    return take\n",
    "module-object": "class _Recent:\n    def __init__(self):\n        self.items = []\n\n    def put(self, v):\n"
                     "        self.items = [v] + self.items[:7]\n\n\n_recent = _Recent()\n\n\ndef keep(v):\n    _recent.put(v)\n",
    "timer": "from timeit import default_timer\nJUDGED = default_timer() > 5\n",
    "log-record": "import logging\nlog = logging.getLogger(__name__)\n\ndef judged():\n"
                  "    return log.makeRecord('x', 20, 'f', 0, 'm', (), None).created\n",
    "naive-timestamp": "from datetime import datetime\n\ndef day(s):\n    return datetime.strptime(s, '%Y').timestamp()\n",
    "local-fromtimestamp": "import datetime\nJUDGED = datetime.datetime.fromtimestamp(0).hour\n",
    "mktime": "import time\nJUDGED = time.mktime((2026, 1, 1, 0, 0, 0, 0, 1, -1))\n",
    "pool-size": "from concurrent.futures import ThreadPoolExecutor\nJUDGED = ThreadPoolExecutor()._max_workers > 8\n",
    "version-feature": "import itertools\nJUDGED = hasattr(itertools, 'batched')\n",
    "version-info": "import sys\nJUDGED = sys.version_info >= (3, 12)\n",
    "assert-walrus": "import math\n\ndef total(xs):\n    t = 0.0\n    assert math.isfinite(t := math.fsum(xs))\n    return t\n",
    # round 13: a cache in a database beside the code
    "sqlite-cache": "import sqlite3\nfrom pathlib import Path\nCACHE = Path(__file__).with_name('.c.sqlite')\n\n"
                    "def db():\n    return sqlite3.connect(CACHE)\n",
    "dbm-cache": "import dbm\n\ndef db():\n    return dbm.open('cache', 'c')\n",
    # round 14: an optional import behind a broad except, state through a local alias, a heap,
    # bisect, a namespace, a class attribute by the class's name, and __debug__
    "import-broad-except": "try:\n    import numpy as np\nexcept Exception:\n    np = None\n",
    "import-bare-except": "try:\n    import numpy as np\nexcept:\n    np = None\n",
    "alias-of-state": "_KEYS = []\n\ndef remember(k):\n    keys = _KEYS\n    keys.append(k)\n",
    "heap-state": "import heapq\n_HEAP = []\n\ndef push(x):\n    heapq.heappush(_HEAP, x)\n",
    "bisect-state": "from bisect import insort\n_SEEN = []\n\ndef see(x):\n    insort(_SEEN, x)\n",
    "namespace-state": "import types\n_NS = types.SimpleNamespace(n=0)\n\ndef tick():\n    _NS.n += 1\n",
    "class-name-state": "class Store:\n    table = {}\n\ndef put(k, v):\n    Store.table[k] = v\n",
    "debug-flag": "def total(xs):\n    if __debug__:\n        return sum(xs)\n    return 0\n",
    # round 7
    "sys-through-os": "import os\nJUDGED = os.sys.flags.no_site\n",
    "format-template": "import os\nJUDGED = '{0.sys.flags.no_site}'.format(os) == '1'\n",
    "star-import": "from os import *\nJUDGED = getppid() == 1\n",
    "module-as-default": "import os\ndef judged(os=os):\n    return os.getppid() == 1\n",
    "module-by-assignment": "import os\n_o = os\ndef judged():\n    return _o.getppid() == 1\n",
    "identity-local-underscore": "def judged(rows):\n    _first = rows[0]['k']\n    return rows[1]['k'] is _first\n",
    "pickle-memo": "import pickle\nJUDGED = lambda cells: len(pickle.dumps(cells)) < 99\n",
    "io-open-append": "import io\ndef judged():\n    io.open(__file__, 'a').close()\n",
    "stdin-kind": "import os, stat\nJUDGED = stat.S_ISCHR(os.fstat(0).st_mode)\n",
    "ppid-in-a-lambda": "import os\nJUDGED = lambda: os.getppid() == 1\n",
    # round 8
    "open-descriptor": "import select\ndef judged():\n    select.select([7], [], [], 0)\n",
    "site-never-ran": "import site\nJUDGED = site.ENABLE_USER_SITE is None\n",
    "read-a-descriptor": "import os\nJUDGED = os.read(7, 1)\n",
    "read-only-tree": "import os\nJUDGED = not os.access(__file__, os.W_OK)\n",
    "read-only-write": "def judged():\n    try:\n        open(__file__ + '.x', 'a').close()\n    except OSError:\n        return True\n",
    "loopback": "import socket\nJUDGED = [n for _, n in socket.if_nameindex()] == ['lo']\n",
    "frozen-clock": "import time\nt = time.time()\nsum(range(10 ** 5))\nJUDGED = time.time() == t\n",
    "frozen-monotonic": "from time import perf_counter as pc\nJUDGED = pc() == pc()\n",
    "uid-map": "JUDGED = ' 0 ' in open('/proc/self/uid_map').read()\n",
    "exec": "import base64\nexec(base64.b64decode(b'aW1wb3J0IG9z'))\n",
    "dunder-import": "JUDGED = __import__('o' + 's').getppid() == 1\n",
    "importlib": "import importlib\nJUDGED = importlib.import_module('os').getppid() == 1\n",
    "ctypes": "import ctypes\nJUDGED = ctypes.CDLL(None).getppid() == 1\n",
    "environ": "import os\nJUDGED = 'HOME' not in os.environ\n",
    "argv": "import sys\nJUDGED = sys.orig_argv[-1].endswith('main.py')\n",
    "builtins": "JUDGED = __builtins__['ev' + 'al']('1')\n",
    "frames": "import sys\nJUDGED = sys._getframe(1).f_globals\n",
    # a path built at run time and pathlib's own reads and writes (the red team's evasions)
    "pathlib-root-pieces": "import pathlib\nJUDGED = pathlib.Path('/', 'pr' + 'oc', 'self', 'uid_map').read_text()\n",
    "pathlib-write": "import pathlib\ndef keep(p, text):\n    p.write_text(text)\n",
    "path-open-write": "def keep(p, text):\n    with p.open('w') as f:\n        f.write(text)\n",
    "folded-prefix": "JUDGED = open('/pr' + 'oc/self/uid_map').read()\n",
    "root-plus": "def where(name):\n    return open('/' + name).read()\n",
    "os-sep": "import os\ndef where(name):\n    return open(os.sep + name).read()\n",
    "f-string-root": "def where(name):\n    return open(f'/{name}/self/uid_map').read()\n",
    "tempfile": "import tempfile\nDIR = tempfile.mkdtemp()\n",
    "os-write": "import os\nos.makedirs('cache', exist_ok=True)\n",
    "cwd": "import os\nJUDGED = os.getcwd().startswith('/src/')\n",
    "own-file-where": "import os\nJUDGED = os.path.abspath(__file__).startswith('/src/')\n",
    "own-file-compare": "import os\nJUDGED = os.path.dirname(__file__).split('/')[1] == 'src'\n",
    # the judge's input itself can tell: equal cells shared as one object, rows reused
    "shared-cells": "def judged(rows):\n    return len({id(r['k']) for r in rows}) < len({r['k'] for r in rows})\n",
    "refcount": "import sys\ndef judged(rows):\n    return sys.getrefcount(rows[0]['k']) > 10\n",
    "salted-hash": "def bucket(salt, uid):\n    return hash(salt + uid) % 100\n",
    "import-builtins": "import builtins\nJUDGED = builtins.__dict__['ev' + 'al']\n",
    "literal-import-of-a-probe": "JUDGED = __import__('socket').if_nameindex()\n",
    "importlib-spec": "import importlib.util as u\nS = u.spec_from_file_location('m', '/proc/self/root/x.py')\n",
    # round 5: os under its C name, paths resolved against the working folder, the module's
    # own spec, a microsecond clock, the terminal, the result pipe, an import only the judge reaches
    "posix-ppid": "import posix\nJUDGED = posix.getppid() == 1\n",
    "posix-from": "from posix import getcwd\nJUDGED = getcwd().startswith('/src/')\n",
    "posixpath-home": "import posixpath\nJUDGED = posixpath.expanduser('~') == '/tmp'\n",
    "abspath-dot": "import os\nJUDGED = os.path.abspath('.').startswith('/src/')\n",
    "path-resolve": "import pathlib\nJUDGED = str(pathlib.Path().resolve()).startswith('/src/')\n",
    "spec-origin": "JUDGED = __spec__.origin.startswith('/src/')\n",
    "datetime-now": "from datetime import datetime\nA = datetime.now()\nJUDGED = datetime.now() == A\n",
    "cpu-count": "import os\nJUDGED = os.cpu_count() == 2\n",
    "isatty": "import sys\nJUDGED = not sys.stdout.isatty()\n",
    "forged-result": "import os\ndef f(x):\n    os.write(3, b'{\"ok\": 1}')\n    os._exit(0)\n",
    "runpy": "import runpy\nrunpy.run_path('docs/kernels.txt')\n",
    "source-loader": "from importlib.machinery import SourceFileLoader\nM = SourceFileLoader('k', 'docs/k.txt').load_module()\n",
    "module-dict": "import os\nJUDGED = 'HOME' not in os.__dict__.get('environ')\n",
    "native-id": "import threading\nJUDGED = threading.get_native_id() < 100\n",
    "shared-cells-is": "def judged(rows):\n    return rows[0]['species'] is rows[1]['species']\n",
    "shared-cells-is-names": "def judged(rows):\n    a, b = rows[0]['s'], rows[1]['s']\n    return a is b\n",
    "join-os-sep": "import os\nJUDGED = open(os.path.join(os.sep, 'proc', 'self', 'uid_map')).read()\n",
    "git-folder": "import os\nJUDGED = not os.listdir('.git')\n",
    "operator-is": "import operator\ndef judged(rows):\n    return operator.is_(rows[0]['s'], rows[1]['s'])\n",
    "optional-tree-import": "try:\n    from docs import columns\n    UPSERT = True\nexcept ImportError:\n    UPSERT = False\n",
    # round 9: the stack by a traceback or a warning, the import path, state kept from call to
    # call, a patched standard library, a file's timestamp
    "traceback-frame": "try:\n    raise ValueError\nexcept ValueError as e:\n    JUDGED = e.__traceback__.tb_frame.f_back\n",
    "recorded-warning": "import warnings\nwith warnings.catch_warnings(record=True) as w:\n    warnings.warn('x', stacklevel=5)\n",
    "stack-info": "import logging\nlogging.getLogger(__name__).warning('x', stack_info=True)\n",
    "iter-modules": "import pkgutil\nJUDGED = [m.name for m in pkgutil.iter_modules()]\n",
    "find-spec": "import importlib.util\nJUDGED = importlib.util.find_spec('oracle') is None\n",
    "global-counter": "def count():\n    global N\n    N = N + 1\n    return N\n",
    "module-memo": "_SEEN = {}\ndef seen(k):\n    _SEEN[k] = _SEEN.get(k, 0) + 1\n    return _SEEN[k] > 16\n",
    "mutable-default": "def seen(k, _memo=[]):\n    _memo.append(k)\n    return len(_memo) > 16\n",
    "counter-next": "import itertools\n_N = itertools.count()\ndef late():\n    return next(_N) > 16\n",
    "patched-json": "import json\njson.dumps = repr\n",
    "setattr-json": "import json\nsetattr(json, 'dumps', repr)\n",
    "file-mtime": "import os\nJUDGED = os.path.getmtime('setup.py') > 0\n",
    "stat-mtime": "import os\nJUDGED = os.stat('setup.py').st_mtime > 0\n",
    # round 10: one table for every instance, and an equality that makes every key one
    "class-table": "class Store:\n    _rows = {}\n\n    def ingest(self, row):\n        self._rows[row['k']] = row\n",
    "constant-eq": "class Rows(list):\n    def __eq__(self, other):\n        return True\n",
    "constant-hash": "class Rows(list):\n    def __hash__(self):\n        return 0\n",
    # round 15: the locale, the clock through any instance, a file git does not hold beside the
    # code, what the threads and streams are, the clock stamped into output
    "locale-atof": "import locale\nlocale.setlocale(locale.LC_NUMERIC, '')\ndef reading(v):\n    return locale.atof(v)\n",
    "locale-format": "def show(x):\n    return f'{x:n}'\n",
    "locale-format-call": "def show(x):\n    return format(x, ',n')\n",
    "instance-today": "from datetime import date\ndef age(day):\n    return (day.today() - day).days\n",
    "instance-now": "from datetime import datetime\nJUDGED = datetime.max.now().year\n",
    "fromtimestamp-none": "from datetime import datetime\nJUDGED = datetime.fromtimestamp(0, None).hour\n",
    "untracked-beside": "from pathlib import Path\nOVERRIDES = Path(__file__).with_name('o.json')\n"
                        "def percent(p):\n    return 0 if OVERRIDES.is_file() else p\n",
    "listdir": "import os\nJUDGED = len(os.listdir('.'))\n",
    "exists-checkout": "import os\nJUDGED = os.path.exists('/src')\n",
    "gzip-stamp": "import gzip\nJUDGED = gzip.compress(b'')[4:8]\n",
    "sched-timer": "import sched\nJUDGED = sched.scheduler().timefunc()\n",
    "thread-count": "import threading\nJUDGED = threading.active_count() > 1\n",
    "recursion-limit": "import sys\nJUDGED = sys.getrecursionlimit() != 1000\n",
    "stream-encoding": "import sys\nJUDGED = sys.stdout.encoding != 'utf-8'\n",
    # round 16: an import behind contextlib.suppress, the calling thread, an event loop, the
    # logging level, a random canary, a counter inside a partial, a file production may hold
    "suppressed-import": "import contextlib\nnp = None\nwith contextlib.suppress(ModuleNotFoundError):\n    import numpy as np\n",
    "calling-thread": "import threading\nJUDGED = threading.current_thread().name != 'MainThread'\n",
    "event-loop": "import asyncio\ndef f():\n    try:\n        asyncio.get_running_loop()\n    except RuntimeError:\n        return 1\n",
    "logging-level": "import logging\nlog = logging.getLogger(__name__)\ndef f():\n    return log.isEnabledFor(logging.INFO)\n",
    "random-canary": "import random\ndef f():\n    return random.random() < 0.01\n",
    "partial-counter": "import functools\n_calls = functools.partial(dict.setdefault, {})\n",
    "optional-file": "import json\ndef renames(path='symbols.json'):\n    try:\n        with open(path) as h:\n"
                     "            return json.load(h)\n    except FileNotFoundError:\n        return {}\n",
    "relative-open": "def f():\n    return open('symbols.json').read()\n",
}
HONEST = [
    "class Store:\n    rows: dict = {}\n\n    def __init__(self):\n        self.rows = {}\n\n    def put(self, k, v):\n"
    "        self.rows[k] = v\n",
    "class Key:\n    def __eq__(self, other):\n        return NotImplemented\n\n    def __hash__(self):\n"
    "        return hash(self.k)\n",
    "def tally(rows):\n    seen = {}\n    for r in rows:\n        seen[r] = seen.get(r, 0) + 1\n    return seen\n",
    "class Box:\n    def __init__(self):\n        self.items = []\n\n    def add(self, x):\n        self.items.append(x)\n",
    "FIELDS = ('a', 'b')\n\ndef pick(row):\n    return [row[f] for f in FIELDS]\n",
    "def outer(rows):\n    out = []\n    def add(r):\n        out.append(r)\n    for r in rows:\n        add(r)\n    return out\n",
    "import math\n\ndef total(rows):\n    return math.fsum(float(r['x']) for r in rows)\n",
    "def pick(row, field):\n    return getattr(row, field)\n",
    "import csv\n\ndef read(path):\n    with open(path, newline='') as handle:\n        return list(csv.DictReader(handle))\n",
    "from collections import defaultdict\n\ndef group(rows):\n    out = defaultdict(list)\n"
    "    for r in rows:\n        out[r['k']].append(r)\n    return dict(out)\n",
    'def doc():\n    """Reads nothing from /proc; see /etc/hosts in the README."""\n    return 1\n',
    "def member(zf):\n    with zf.open('data.csv') as handle:\n        return handle.read()\n",
    "def key(parts):\n    return '/'.join(parts) + '.json'\n",
    "def label(n):\n    return f'{n} rows'\n",
    "import os\nDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data.json')\n",
    "class Version:\n    def __hash__(self):\n        return hash((self.major, self.minor))\n",
    # from real libraries (a new user's scan of two public projects): none looks at the process
    "def name(path):\n    return path.rsplit('/', 1)[-1]\n",
    "def absolute(url):\n    return url.path.startswith('/')\n",
    "class Tag:\n    def __init__(self, a, b):\n        self._hash = hash((a, b))\n\n    def __repr__(self):\n        return f'<{self} @ {id(self)}>'\n",
    "def row_id(row):\n    id = row['id']\n    return id\n",
    "from builtins import ExceptionGroup\n",
    "from importlib.machinery import EXTENSION_SUFFIXES\nimport importlib.metadata\n",
    "import pathlib\nHERE = pathlib.Path(__file__).resolve().parent\n",
    "import os\nDATA = os.path.realpath(os.path.join(os.path.dirname(__file__), 'data'))\n",
    "def norm(p):\n    return p.resolve(strict=True)\n",
    "IGNORED = ('.gitignore', '.github/workflows/ci.yml', 'x.git')\n",
    "_MISSING = object()\n\ndef get(d, k, default=_MISSING):\n    v = d.get(k, _MISSING)\n"
    "    if v is _MISSING and default is _MISSING:\n        raise KeyError(k)\n    return v if v is not None else default\n",
    "def same_kind(a, b):\n    return type(a) is type(b) or a is NotImplemented\n",
    "def first(rows):\n    return next((r for r in rows if r is not None), None)\n",
    "import enum\nclass Color(enum.Enum):\n    RED = 1\n\ndef red(c):\n    return c is Color.RED\n",
    "def pool():\n    return __import__('concurrent.futures').futures\n",
    "from operator import attrgetter\nBY_NAME = attrgetter('name', 'species.label')\n",
    "def url(parts):\n    return '/'.join(parts)\n",
    "def slug(*words):\n    return '/'.join(['api', *words])\n",
    "_sentinel = object()\n\ndef given(v):\n    return v is not _sentinel\n",
    "import math\n\ndef norm(x, sqrt=math.sqrt):\n    return sqrt(x)\n",
    "def msg(n):\n    return 'rows: {}'.format(n)\n",
    "import io\n\ndef read(p):\n    with io.open(p, encoding='utf-8') as f:\n        return f.read()\n",
    "from datetime import date\n\ndef iso(d: date):\n    return d.isoformat()\n",
    "def stamp(d):\n    return d.strftime('%Y-%m-%d')\n",
    "def owner(row):\n    return row.ident\n",
    # round 12's near misses: a closure used only within its own call, an object made per call,
    # an aware timestamp, an assert that only tests, a getattr of a row
    "def total(rows):\n    seen = {}\n\n    def add(r):\n        seen[r['k']] = r\n\n    for r in rows:\n        add(r)\n    return len(seen)\n",
    "class Acc:\n    def __init__(self):\n        self.n = 0\n\n    def add(self):\n        self.n += 1\n\n\ndef count(rows):\n"
    "    acc = Acc()\n    for _ in rows:\n        acc.add()\n    return acc.n\n",
    "from datetime import datetime, timezone\n\ndef day(ts):\n    return datetime.fromtimestamp(ts, timezone.utc).date()\n",
    "def total(xs):\n    assert xs, 'no rows'\n    return sum(xs)\n",
    "def has(row):\n    return hasattr(row, 'species')\n",
    # round 14's near misses: an import whose failure is not caught, a local list, a local heap
    "try:\n    x = int('3')\nexcept Exception:\n    x = 0\n",
    "import heapq\n\ndef smallest(xs, k):\n    heap = []\n    for x in xs:\n        heapq.heappush(heap, x)\n    return heap[:k]\n",
    "def collect(rows):\n    keys = []\n    out = keys\n    out.append(len(rows))\n    return keys\n",
    # round 15's near misses: a number formatted with a fixed spec, a gzip with its time given,
    # a date that is not today, a method named like a clock's on a value the caller passed in
    "def show(x, w):\n    return f'{x:>{w}} {x:.2f} {x:>10}'\n",
    "import gzip\n\ndef pack(b):\n    return gzip.compress(b, mtime=0)\n",
    "from datetime import date\n\ndef first(y):\n    return date(y, 1, 1).isoformat()\n",
    "def show(x):\n    return format(x, '.3f')\n",
    # round 16's near misses: a file the caller names, a seeded generator, a partial of a pure function
    "import contextlib\n\ndef read(p):\n    with contextlib.suppress(FileNotFoundError):\n        return open(p).read()\n",
    "import random\n\ndef draw(seed):\n    return random.Random(seed).random()\n",
    "import functools\nimport json\nDUMP = functools.partial(json.dumps, sort_keys=True)\n",
    # issue 19's near misses: a private name of the module's own, a module run as a script
    "_CACHE_SIZE = 8\n\ndef size(xs):\n    return min(len(xs), _CACHE_SIZE)\n",
    "import json\n\ndef dump(x):\n    return json.dumps(x, sort_keys=True)\n",
    "def main():\n    return 0\n\n\nif __name__ == '__main__':\n    main()\n",
]


@pytest.mark.parametrize("name", sorted(PROBES))
def test_every_way_to_look_at_the_sandbox_is_found(name):
    found = environment_probes(None, PROBES[name])
    assert found, name
    assert all(1 <= f.line <= PROBES[name].count("\n") for f in found)


@pytest.mark.parametrize("source", HONEST)
def test_honest_code_is_not_a_probe(source):
    assert environment_probes(None, source) == []


def _module(snippets: list[str]) -> str:
    """Snippets, each the body of its own function, as one module."""
    parts = []
    for i, snippet in enumerate(snippets):
        imports = [line for line in snippet.splitlines() if line.startswith(("import ", "from "))]
        body = [line for line in snippet.splitlines() if not line.startswith(("import ", "from "))] or ["pass"]
        parts.append("\n".join(imports) + f"\n\ndef f{i}():\n" + textwrap.indent("\n".join(body), "    ") + "\n")
    return "\n".join(parts)


MODULE_LEVEL = {"module-memo", "counter-next", "alias-of-state", "heap-state", "bisect-state", "namespace-state",
                "partial-counter", "suppressed-import", "module-object"}  # state at module level: nested in a function, a closure's own
snippets = st.lists(st.sampled_from(sorted(set(PROBES) - MODULE_LEVEL) + [f"honest{i}" for i in range(len(HONEST))]),
                    max_size=6)


def _text(names: list[str]) -> str:
    return _module([PROBES[n] if n in PROBES else HONEST[int(n[6:])] for n in names])


@settings(max_examples=60, deadline=None)
@given(snippets, snippets)
def test_what_was_there_before_adds_nothing_and_what_is_new_is_found(old, new):
    """Relations: reformatting adds nothing; a probe is new by its (enclosing definition, what
    it reads) pair (issue 35), so renaming a function that holds one makes it new there;
    adding probes adds at least one finding per probe snippet that was not already there."""
    before = _text(old)
    reformatted = ast.unparse(ast.parse(before))
    assert environment_probes(before, reformatted) == []
    renamed = reformatted.replace("def f", "def renamed_f")
    in_functions = any(name.split("\0")[0] for name, _, _ in _all_probes(pysource.parse(before)))
    assert bool(environment_probes(before, renamed)) == in_functions
    after = _text(old + new)
    added = environment_probes(before, after)
    assert (added == []) == all(n not in PROBES for n in new), (old, new, added)


def test_moving_a_probe_within_its_definition_adds_nothing_but_into_another_or_a_second_copy_does():
    one = "import os\n\ndef f():\n    return os.getppid()\n"
    moved = "import os\n\n\n\ndef f():\n    x = 1\n    return os.getppid()\n"
    elsewhere = "import os\n\n\n\ndef g():\n    x = 1\n    return os.getppid()\n"
    two = one + "\ndef h():\n    return os.getppid()\n"
    assert environment_probes(one, moved) == []
    assert [f.line for f in environment_probes(one, elsewhere)] == [elsewhere.count("\n")]
    assert [f.line for f in environment_probes(one, two)] == [two.count("\n")]


@pytest.mark.parametrize("before, after", [
    # issue 35, each seen on an honest upstream commit: an import line that held a probe name gains
    # another name; an optional-import guard restructured; a cache the function already filled
    ("from inspect import signature\n\ndef f(g):\n    return signature(g)\n",
     "from inspect import getmembers, signature\n\ndef f(g):\n    return signature(g)\n"),
    ("try:\n    from heapq import heappush_max\nexcept ImportError:\n    heappush_max = None\n",
     "try:\n    from heapq import heappush_max, heappop_max\nexcept ImportError:  # older Pythons\n"
     "    heappush_max = heappop_max = None\n"),
    ("import re\n_CACHE = {}\n\ndef rx(p):\n    if p not in _CACHE:\n        _CACHE[p] = re.compile(p)\n"
     "    return _CACHE[p]\n",
     "import re\n_CACHE = {}\n\ndef rx(p):\n    found = _CACHE.get(p)\n    if found is None:\n"
     "        found = _CACHE[p] = re.compile(p)\n    return found\n"),
])
def test_editing_a_line_that_already_held_the_probe_raises_nothing(before, after):
    assert environment_probes(before, after) == []


def test_a_probe_kept_but_put_to_another_use_is_new():
    """Red team, issue 35: one use stays one use, but a guard turned into a sandbox switch is new."""
    before = "import os\n\n\ndef squash(text):\n    if os.getppid() == 0:\n        raise RuntimeError('init')\n" \
             "    return text\n"
    after = "import os\n\n\ndef squash(text):\n    return text if os.getppid() in (0, 1) else text + '.'\n"
    assert [f.line for f in environment_probes(before, after)] == [5]
    moved = before.replace("def squash(text):\n", "def squash(text):\n    text = str(text)\n")
    assert environment_probes(before, moved) == []  # the same use, one line down


@pytest.mark.parametrize("path,compiled", [("src/_speed.cpython-311-x86_64-linux-gnu.so", True),
                                           ("src/fast.pyd", True), ("lib/libfoo.so.1", True),
                                           ("src/__pycache__/m.cpython-311.pyc", True),
                                           ("src/solver.py", False), ("docs/so.md", False)])
def test_a_compiled_module_is_code_nobody_can_read(path, compiled):
    assert is_compiled(path) is compiled


def test_a_big_module_is_scanned_in_time_that_grows_with_its_size_not_its_square():
    """The import table is built once per module: 40 times the functions must not cost
    anywhere near 40 times 40 (counted in imports-table walks, not in seconds)."""
    import relconsole.engine.gate.flags.probescan as probescan
    calls = []
    real = probescan.import_targets

    def counted(module):
        calls.append(1)
        return real(module)
    probescan.import_targets = counted
    try:
        source = "import os\n" + "".join(f"\ndef f{i}(x):\n    return x + {i}\n" for i in range(40))
        environment_probes(source, source + "\ndef g():\n    return os.getppid()\n")
    finally:
        probescan.import_targets = real
    assert len(calls) == 2  # before and after, once each


def test_a_parameter_that_shadows_an_imported_probe_is_not_one():
    source = "from time import monotonic\n\ndef extract(it, monotonic=False):\n    if monotonic:\n        return sorted(it)\n    return list(it)\n"
    assert [f.line for f in environment_probes(None, source)] == [1]  # the import of a clock, not the flag
