"""Peak resident memory of a `conformance` child process, as the child measures it.

Linux carries a parent's high-water mark into its child: at exec, the old address
space's peak is kept in the process's rusage, so ``os.wait4`` and ``RUSAGE_SELF`` both
report at least what the parent held when it forked. A run started from a pytest
worker that had grown to 325 MB read as 325 MB. The child's own address space
(``VmHWM`` in /proc/self/status) is its alone, so the child writes that at exit.
"""

from __future__ import annotations

import sys
from pathlib import Path

# `python -c WRAPPER FILE ARGS...` runs `conformance ARGS...` as `python -m conformance.cli`
# does, then writes its peak (KiB) to FILE at exit
WRAPPER = """
import atexit, runpy, sys
_file = sys.argv.pop(1)
def _peak():
    try:
        with open('/proc/self/status') as status:
            kib = next(int(line.split()[1]) for line in status if line.startswith('VmHWM:'))
    except (OSError, StopIteration):  # not Linux: the rusage figure, an upper bound
        import resource
        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with open(_file, 'w') as out:
        out.write(str(kib))
atexit.register(_peak)
runpy.run_module('conformance.cli', run_name='__main__', alter_sys=True)
"""


def command(peak: Path, *args: str) -> list[str]:
    """The argv of `conformance ARGS` that writes its own peak memory to ``peak``."""
    return [sys.executable, "-c", WRAPPER, str(peak), *args]


def read_mb(path: Path) -> int:
    """The peak the child wrote, in MB (0 when it wrote none: killed before exit)."""
    try:
        return int(path.read_text()) // 1024
    except (OSError, ValueError):
        return 0
