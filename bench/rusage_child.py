"""Run a command and write its own resource usage as JSON: `python rusage_child.py OUT CMD...`.

Why a wrapper: on Linux a child's ru_maxrss starts at its parent's high-water mark, because
exec carries the old address space's peak over. A benchmark process that grew (it generated a
corpus, say) would make every child it starts report at least that much. This small, fresh
process is the parent instead, so the peak it reports is the command's own.

The command runs in this process's group, so killing the group stops both."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def main(argv: list[str]) -> int:
    out, cmd = argv[0], argv[1:]
    try:
        proc = subprocess.Popen(cmd)
    except OSError as exc:
        print(f"rusage_child: cannot run {cmd[0]}: {exc}", file=sys.stderr)
        return 127
    _pid, status, usage = os.wait4(proc.pid, 0)
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"cpu_s": usage.ru_utime + usage.ru_stime,
                   "peak_mb": usage.ru_maxrss / 1024}, f)  # Linux reports kilobytes
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
