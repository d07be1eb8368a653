"""hash benchmark (SPEC §4 lease hashes): streamed sha256 of a 1 GiB corpus, and the stat cache.

Writes a ``--size-mib`` file (default 1024) of random bytes (``os.urandom`` in 8 MiB
blocks; the free space is checked first) in a temporary directory, reads it once so
the page cache holds it, then runs, interleaved ``--repeat`` times so that a noisy spell
of the machine hits them alike:

* the anchor, ``openssl dgst -sha256 FILE`` (OpenSSL's SHA-NI code, as hashlib uses);
* ``sha256sum FILE`` (coreutils);
* ``hashcache.sha256_stream`` in a fresh Python process, once per ``--chunks`` size
  (the default ``CHUNK_BYTES`` among them), timed inside the child around the call (the
  hashing) and from outside (the whole process: interpreter start and import included).

Peak RSS: ``os.wait4``'s ``ru_maxrss`` of each child, which on Linux also keeps the peak
of the image the child replaced at exec (the spawning benchmark process, whose pages it
shares until exec), so it is an upper bound printed beside this process's own peak; the
target is judged on our child's own peak since exec (``VmHWM`` it reads from
``/proc/self/status`` when done), the larger of the two where ``/proc`` is absent.

Every run's digest is compared with the anchor's. Then, once the file is older than the
racy margin (``RACY_NS``), it is hashed into a ``HashCache`` file, and the re-check of the
unchanged file (a new ``HashCache`` loaded from disk, one ``stat``, no read) is timed
``--rechecks`` times.

Targets (issue 6): ours / openssl >= 0.9 in throughput (the median of per-run ratios, the
hashing timed in the child; the whole-process ratio is printed beside it); peak RSS of
our child < 100 MiB; the stat-cache re-check of the unchanged file < 50 ms (median).

Usage: python -m bench.hash [--size-mib 1024] [--repeat 5] [--chunks 256K,1M,4M,16M]
                            [--rechecks 9] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.timing import verdict
from relconsole.engine.oracle.hashcache import CHUNK_BYTES, RACY_NS, HashCache

MIB = 1 << 20
CHILD = """\
import sys, time
from relconsole.engine.oracle.hashcache import sha256_stream
started = time.perf_counter()
digest = sha256_stream(sys.argv[1], chunk_bytes=int(sys.argv[2]))
seconds = time.perf_counter() - started
hwm = [int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmHWM:")]
print(digest, seconds, hwm[0] if hwm else 0)
"""


def own_peak() -> int:
    """This process's peak RSS in bytes (VmHWM), 0 where /proc is absent."""
    try:
        with open("/proc/self/status") as handle:
            return next((int(line.split()[1]) * 1024 for line in handle if line.startswith("VmHWM:")), 0)
    except OSError:
        return 0


def parse_size(text: str) -> int:
    """``256K``, ``4M``, ``1G`` or a byte count, as bytes."""
    units = {"K": 1 << 10, "M": MIB, "G": 1 << 30}
    text = text.strip().upper()
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def label(size: int) -> str:
    return f"{size // MIB} MiB" if size >= MIB else f"{size >> 10} KiB"


def run_child(args: list[str], env: dict[str, str] | None = None) -> tuple[float, int, str]:
    """(wall seconds, peak RSS in bytes of that child only, stdout) of one process."""
    started = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out, err = proc.stdout.read(), proc.stderr.read()  # the outputs are a line each
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{args[0]} exited {proc.returncode}: {err.decode(errors='replace')[-2000:]}")
    return wall, usage.ru_maxrss * 1024, out.decode()  # ru_maxrss is in KiB on Linux


def make_corpus(path: Path, size: int) -> None:
    block = 8 * MIB
    with open(path, "wb") as handle:
        left = size
        while left > 0:
            handle.write(os.urandom(min(block, left)))
            left -= block


def warm(path: Path) -> None:
    with open(path, "rb", buffering=0) as handle:
        buffer = bytearray(8 * MIB)
        while handle.readinto(buffer):
            pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--chunks", default="256K,1M,4M,16M")
    parser.add_argument("--rechecks", type=int, default=9)
    parser.add_argument("--dir", default=None, help="where the corpus is written (default: the temp dir)")
    args = parser.parse_args()
    size = args.size_mib * MIB
    chunks = sorted({parse_size(c) for c in args.chunks.split(",")} | {CHUNK_BYTES})
    tools = {name: shutil.which(name) for name in ("openssl", "sha256sum")}
    if not tools["openssl"]:
        print("openssl is not installed: the anchor is missing")
        return 1
    parent = Path(args.dir or tempfile.gettempdir())
    free = shutil.disk_usage(parent).free
    if free < size + 256 * MIB:
        print(f"{parent}: {free // MIB} MiB free, {args.size_mib + 256} MiB needed; use --dir or --size-mib")
        return 1
    scratch = Path(tempfile.mkdtemp(prefix="relconsole-bench-hash-", dir=parent))
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]), *inherited]))
    try:
        corpus = scratch / "corpus.bin"
        started = time.perf_counter()
        make_corpus(corpus, size)
        warm(corpus)
        print(f"{label(size)} of random bytes written and read once (page cache warm) in "
              f"{time.perf_counter() - started:.1f} s; {scratch}")

        steps = {"openssl": [tools["openssl"], "dgst", "-sha256", str(corpus)]}
        if tools["sha256sum"]:
            steps["sha256sum"] = [tools["sha256sum"], str(corpus)]
        for chunk in chunks:
            steps[f"ours:{chunk}"] = [sys.executable, "-c", CHILD, str(corpus), str(chunk)]
        wall: dict[str, list[float]] = {k: [] for k in steps}
        inner: dict[str, list[float]] = {k: [] for k in steps if k.startswith("ours")}
        rss: dict[str, int] = {k: 0 for k in steps}
        own_rss: dict[str, int] = {k: 0 for k in steps if k.startswith("ours")}
        digests: set[str] = set()
        ratios, whole_ratios = [], []
        ours = f"ours:{CHUNK_BYTES}"
        for _ in range(args.repeat):
            for name, command in steps.items():
                seconds, peak, out = run_child(command, env)
                wall[name].append(seconds)
                rss[name] = max(rss[name], peak)
                fields = out.split()
                if name == "openssl":
                    digests.add(fields[-1])
                elif name == "sha256sum":
                    digests.add(fields[0])
                else:
                    digests.add(fields[0])
                    inner[name].append(float(fields[1]))
                    own_rss[name] = max(own_rss[name], int(fields[2]))
            ratios.append(wall["openssl"][-1] / inner[ours][-1])  # throughput ratio ours/openssl
            whole_ratios.append(wall["openssl"][-1] / wall[ours][-1])
        if len(digests) != 1:
            print(f"FAIL: the tools disagree on the digest: {sorted(digests)}")
            return 1

        def mibs(seconds: float) -> float:
            return size / MIB / seconds

        anchor = statistics.median(wall["openssl"])
        print(f"sha256 of {label(size)}, medians of {args.repeat} interleaved runs (digest {digests.pop()[:16]}…)")
        print(f"  {'':52} {'MiB/s':>7} {'seconds':>8} {'x openssl':>10} {'wait4 RSS':>10} {'own RSS':>9}")

        def line(name: str, seconds: float, peak: int, own: int | None = None) -> None:
            mine = f"{own / MIB:6.1f} MiB" if own else ""
            print(f"  {name:52} {mibs(seconds):7.0f} {seconds:8.3f} {anchor / seconds:10.2f} "
                  f"{peak / MIB:6.1f} MiB {mine:>9}")

        line("openssl dgst -sha256 (anchor, whole process)", anchor, rss["openssl"])
        if "sha256sum" in steps:
            line("sha256sum (whole process)", statistics.median(wall["sha256sum"]), rss["sha256sum"])
        for chunk in chunks:
            name = f"ours:{chunk}"
            mark = " (CHUNK_BYTES)" if chunk == CHUNK_BYTES else ""
            line(f"sha256_stream, {label(chunk)} chunks, the call{mark}", statistics.median(inner[name]), rss[name],
                 own_rss[name])
            line("  the same, whole process (start + import)", statistics.median(wall[name]), rss[name],
                 own_rss[name])
        print(f"  (wait4 RSS includes what a child inherits at spawn: this process peaked at "
              f"{own_peak() / MIB:.1f} MiB)")
        ours_inner = statistics.median(inner[ours])
        if "sha256sum" in steps:
            print(f"  ours / sha256sum throughput: {statistics.median(wall['sha256sum']) / ours_inner:.2f}x")

        # the stat cache: fill it once the file is clearly older than the racy margin
        store = scratch / "git" / "relconsole" / "hashcache.json"
        changed = max(corpus.stat().st_mtime_ns, corpus.stat().st_ctime_ns)
        # bounded: under a faked clock (the date checks run the suite in faketime) the file's real
        # mtime can lie months ahead of time.time()
        time.sleep(min(RACY_NS / 1e9 + 0.05, max(0.0, (changed + RACY_NS - time.time_ns()) / 1e9 + 0.05)))
        filler = HashCache(store)
        expected = filler.file_sha256(corpus)
        filler.save()
        times = []
        for _ in range(args.rechecks):
            started = time.perf_counter()
            cache = HashCache(store)
            hit = cache.cached_file(corpus)
            digest = cache.file_sha256(corpus) if hit else None
            times.append(time.perf_counter() - started)
            if hit is None or digest != expected:
                print("FAIL: the unchanged file was not answered from the stat cache")
                return 1
        recheck = statistics.median(times)
        print(f"  stat-cache re-check of the unchanged file (load cache + stat), median of {args.rechecks}: "
              f"{recheck * 1000:.2f} ms")

        ratio, whole = statistics.median(ratios), statistics.median(whole_ratios)
        peak = own_rss[ours] or rss[ours]
        results = [(f"ours / openssl throughput {ratio:.2f}x (whole process {whole:.2f}x) >= 0.90x", ratio >= 0.9),
                   (f"peak RSS of our child {peak / MIB:.1f} MiB < 100 MiB", peak < 100 * MIB),
                   (f"stat-cache re-check {recheck * 1000:.2f} ms < 50 ms", recheck < 0.05)]
        for text, ok in results:
            print(f"  target: {text}: {verdict(ok)}")
        return 0 if all(ok for _t, ok in results) else 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
