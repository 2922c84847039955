"""Run a command and write its own resource usage as JSON: `python rusage_child.py OUT CMD...`.

Why a wrapper: on Linux a child's ru_maxrss starts at its parent's high-water mark, because
exec carries the old address space's peak over. A benchmark process that grew (it generated a
corpus, say) would make every child it starts report at least that much. This small, fresh
process is the parent instead, so the peak it reports is the command's own.

A command may start processes of its own (the import's reader process). ru_maxrss is then the
largest of them, not what they hold together, so the memory of the whole process tree is also
sampled every SAMPLE_S seconds while the command runs, as the sum of each process's PSS (its
own pages plus its share of pages it shares with others, such as the libraries two Python
processes both map: summing RSS would count those twice). ``peak_mb`` is the larger of the two
(a spike shorter than the interval can be missed by the sampling, never by ru_maxrss of one
process).

The command runs in this process's group, so killing the group stops both."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

SAMPLE_S = 0.05  # seconds between two samples of the process tree's resident memory
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def tree_memory_bytes(pid: int) -> int:
    """Proportional resident bytes (PSS; RSS where the kernel has no smaps_rollup) of ``pid``
    and every descendant now (Linux /proc; 0 where it is absent)."""
    total, todo, seen = 0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            total += _pss(p)
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError, IndexError):
            continue  # the process ended between two reads
    return total


def _pss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024  # kB
    except OSError:
        pass
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE


def main(argv: list[str]) -> int:
    out, cmd = argv[0], argv[1:]
    try:
        proc = subprocess.Popen(cmd)
    except OSError as exc:
        print(f"rusage_child: cannot run {cmd[0]}: {exc}", file=sys.stderr)
        return 127
    stop = threading.Event()
    tree_peak = [0]

    def sample() -> None:
        while not stop.is_set():
            tree_peak[0] = max(tree_peak[0], tree_memory_bytes(proc.pid))
            stop.wait(SAMPLE_S)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _pid, status, usage = os.wait4(proc.pid, 0)
    stop.set()
    sampler.join()
    own = usage.ru_maxrss / 1024  # Linux reports kilobytes
    tree = tree_peak[0] / 2**20
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"cpu_s": usage.ru_utime + usage.ru_stime, "peak_mb": max(own, tree),
                   "largest_process_mb": own, "tree_sampled_mb": tree}, f)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
