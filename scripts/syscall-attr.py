#!/usr/bin/env python3
"""syscall-attr: system calls per NFSv3 call, by procedure, from a trace.

usage: syscall-attr.py FILE   (FILE from `strace -f -tt -p SERVER_PID -o FILE`)

For a client with one call in flight (libnfs's synchronous API:
scripts/bench-peers-meta.c, scripts/syscall-kinds.c), every system call
between one reply's writev and the next belongs to the call that the
second writev answers; the procedure is read from the NFS call header in
the read that brought it (program 100003, version 3). The Go runtime's
own calls (futex, nanosleep, epoll_pwait, ...) are left out; a LOOKUP
whose span holds an ENOENT is counted as LOOKUP-miss. The handle cache's
sweep (fstat of idle entries every 2 s) runs on another thread and lands
in whichever span it falls in. See docs/performance.md, section 10.
"""
import collections
import re
import sys

# The Go runtime's own system calls, not a call's work.
RUNTIME = {"nanosleep", "epoll_pwait", "futex", "sched_yield", "rt_sigprocmask", "rt_sigreturn", "getpid",
           "tgkill", "clone3", "mmap", "mprotect", "sigaltstack", "rseq", "set_robust_list", "gettid", "madvise",
           "munmap", "restart_syscall", "exit", "sched_getaffinity", "pread64", "write"}
# NFSv3 procedure numbers (RFC 1813 section 3).
PROCS = {0: "NULL", 1: "GETATTR", 2: "SETATTR", 3: "LOOKUP", 4: "ACCESS", 6: "READ", 7: "WRITE", 8: "CREATE",
         9: "MKDIR", 12: "REMOVE", 13: "RMDIR", 14: "RENAME", 16: "READDIR", 17: "READDIRPLUS", 18: "FSSTAT",
         19: "FSINFO", 20: "PATHCONF", 21: "COMMIT"}
# strace's escapes for the procedure's last byte.
ESC = {"t": 9, "n": 10, "v": 11, "f": 12, "r": 13}
# program 100003 version 3, then the procedure's four bytes, as strace prints them.
HEADER = re.compile(r"\\0\\1\\206\\243\\0\\0\\0\\3\\0\\0\\0(\\[0-7]{1,3}|\\[tnvfr]|.)")


def spans(path):
    """Yields (procedure number or None, [(syscall, line)]) per reply."""
    cur, proc = [], None
    for line in open(path):
        m = re.match(r"(\d+)\s+(?:\S+\s+)?(.*)", line.rstrip("\n"))
        if not m:
            continue
        body = m.group(2)
        h = HEADER.search(body)
        if h and body.startswith(("read(", "<... read")):
            g = h.group(1)
            if g.startswith("\\"):
                g = g[1:]
                proc = ESC[g] if g in ESC else int(g, 8)
            else:
                proc = ord(g)
        if body.startswith("<..."):
            continue  # the rest of a call counted where it began
        sm = re.match(r"(\w+)\(", body)
        if not sm or sm.group(1) in RUNTIME:
            continue
        cur.append((sm.group(1), body))
        if sm.group(1) == "writev":
            yield proc, cur
            cur, proc = [], None


def main():
    kinds = collections.defaultdict(list)
    for proc, calls in spans(sys.argv[1]):
        name = PROCS.get(proc, str(proc))
        if name == "LOOKUP" and any("ENOENT" in b for _, b in calls):
            name = "LOOKUP-miss"
        kinds[name].append(calls)
    for name, cs in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
        total = sum(len(c) for c in cs)
        per = collections.Counter(s for c in cs for s, _ in c)
        print(f"{name:12s} calls {len(cs):6d} syscalls/call {total / len(cs):5.2f}  " +
              " ".join(f"{k}:{v / len(cs):.2f}" for k, v in per.most_common()))


if __name__ == "__main__":
    main()
