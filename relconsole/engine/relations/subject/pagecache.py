"""A seccomp filter that keeps the page cache from carrying a memo from one call to the next (SPEC §7).

A part of the subject's fork server (``harness.py``; standard library only, merged into its
script by ``script.py``).
"""

from relconsole.engine.relations.subject.namespaces import _libc


# Every process that reads a file shares its cached pages, so which pages of a big read-only file
# are cached can carry a memo from one call to the next: written by evicting pages, read by asking
# which are cached. A seccomp filter takes both away from each call: the questions (mincore,
# cachestat, a read that must not wait, io_uring) fail as on a kernel without them, and the
# evictions (fadvise DONTNEED/NOREUSE, madvise COLD/PAGEOUT) succeed without doing anything.
SECCOMP_ARCH = {  # machine: (AUDIT_ARCH_*, bit that marks another ABI's numbers, {syscall: number})
    "x86_64": (0xC000003E, 0x40000000, {"mincore": 27, "madvise": 28, "fadvise64": 221, "preadv2": 327,
                                        "pwritev2": 328, "io_uring_setup": 425, "io_uring_enter": 426,
                                        "io_uring_register": 427, "process_madvise": 440, "cachestat": 451}),
    "aarch64": (0xC00000B7, 0, {"mincore": 232, "madvise": 233, "fadvise64": 223, "preadv2": 286,
                                "pwritev2": 287, "io_uring_setup": 425, "io_uring_enter": 426,
                                "io_uring_register": 427, "process_madvise": 440, "cachestat": 451}),
}
ENOSYS, EPERM, EOPNOTSUPP = 38, 1, 95
RWF_NOWAIT = 0x8
MADV_COLD, MADV_PAGEOUT = 20, 21
POSIX_FADV_DONTNEED, POSIX_FADV_NOREUSE = 4, 5
# syscall: (argument index or None, values or bit mask that trigger, errno; 0 = succeed doing nothing)
PAGE_CACHE_RULES = {
    "mincore": (None, None, ENOSYS), "cachestat": (None, None, ENOSYS),
    "io_uring_setup": (None, None, ENOSYS), "io_uring_enter": (None, None, ENOSYS),
    "io_uring_register": (None, None, ENOSYS), "process_madvise": (None, None, EPERM),
    "preadv2": (5, RWF_NOWAIT, EOPNOTSUPP), "pwritev2": (5, RWF_NOWAIT, EOPNOTSUPP),
    "madvise": (2, (MADV_COLD, MADV_PAGEOUT), 0), "fadvise64": (3, (POSIX_FADV_DONTNEED, POSIX_FADV_NOREUSE), 0),
}
BPF_LD_ABS, BPF_JEQ, BPF_JGE, BPF_JSET, BPF_RET = 0x20, 0x15, 0x35, 0x45, 0x06
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000


def page_cache_filter(machine):
    """The classic BPF program of the seccomp filter above, as [(code, jt, jf, k)], or None
    on a machine this table does not know (the calls then share the page cache's answers)."""
    if machine not in SECCOMP_ARCH:
        return None
    arch, other_abi, numbers = SECCOMP_ARCH[machine]
    prog = [(BPF_LD_ABS, 0, 0, 4), (BPF_JEQ, 1, 0, arch), (BPF_RET, 0, 0, RET_ERRNO | ENOSYS),
            (BPF_LD_ABS, 0, 0, 0)]
    if other_abi:  # x32 numbers would bypass every rule below
        prog += [(BPF_JGE, 0, 1, other_abi), (BPF_RET, 0, 0, RET_ERRNO | ENOSYS)]
    for name, (arg, trigger, errno) in PAGE_CACHE_RULES.items():
        body = [(BPF_RET, 0, 0, RET_ERRNO | errno)]
        if arg is not None:  # the low 32 bits of the argument (the flags and advice are ints)
            tests = [(BPF_JSET, 0, 0, trigger)] if isinstance(trigger, int) else [(BPF_JEQ, 0, 0, t) for t in trigger]
            body = ([(BPF_LD_ABS, 0, 0, 16 + 8 * arg)]
                    + [(code, len(tests) - i, 0, k) for i, (code, _, _, k) in enumerate(tests)]
                    + [(BPF_RET, 0, 0, RET_ALLOW)] + body)
        prog += [(BPF_JEQ, 0, len(body), numbers[name])] + body
    return prog + [(BPF_RET, 0, 0, RET_ALLOW)]


PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


def close_page_cache(prog):
    """Install ``prog`` (``page_cache_filter``) on this process for good; returns whether the
    kernel took it."""
    if not prog:
        return False
    try:
        import ctypes
        libc = _libc()
    except OSError:
        return False

    class Insn(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(Insn))]

    insns = (Insn * len(prog))(*[Insn(*insn) for insn in prog])
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    return libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(Prog(len(prog), insns)), 0, 0) == 0
