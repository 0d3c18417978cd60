"""Where a `kai` process spends its CPU, over all its threads: `python bench/sample_profile.py OUT kai-args...`.

Runs `python -m kai_scheduler.cli kai-args...` with a sampling thread: every `KAI_SAMPLE_MS` (default 5) ms it
counts the current stack of each thread the kernel has running (state R in /proc/self/task/TID/stat): a thread
blocked on a socket, a lock or a queue is not counted (py-spy without `--idle`, without py-spy; a thread's CPU
clock is no help here, since it charges the work done between samples to wherever the thread blocked after it).
Every 5 s and at exit the stacks go to OUT, one per line as `frame;frame;... samples` (the collapsed format of
flame graphs; outermost first). `report OUT` prints the functions by their own and their inclusive share.
"""

from __future__ import annotations

import atexit
import os
import runpy
import sys
import threading
import time
from collections import Counter
from types import FrameType

Stack = tuple[str, ...]


def _stack(frame: FrameType | None) -> Stack:
    out = []
    while frame is not None:
        code = frame.f_code
        out.append(f"{os.path.basename(code.co_filename)}:{code.co_qualname}")
        frame = frame.f_back
    return tuple(reversed(out))


def _running(tid: int) -> bool:
    try:
        with open(f"/proc/self/task/{tid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2][1:2] == b"R"
    except OSError:
        return False


class Sampler:
    def __init__(self, out: str, every: float) -> None:
        self.out = out
        self.every = every
        self.stacks: Counter[Stack] = Counter()
        self._lock = threading.Lock()

    def run(self) -> None:
        me = threading.get_ident()
        dumped = time.monotonic()
        while True:
            time.sleep(self.every)
            tids = {t.ident: t.native_id for t in threading.enumerate()}
            frames = sys._current_frames()
            with self._lock:
                for ident, frame in frames.items():
                    tid = tids.get(ident)
                    if ident == me or tid is None or not _running(tid):
                        continue
                    self.stacks[_stack(frame)] += 1
            if time.monotonic() - dumped > 5:
                self.dump()
                dumped = time.monotonic()

    def dump(self) -> None:
        with self._lock:
            lines = [f"{';'.join(stack)} {n}\n" for stack, n in self.stacks.items()]
        tmp = f"{self.out}.tmp"
        with open(tmp, "w") as f:
            f.writelines(lines)
        os.replace(tmp, self.out)


def report(path: str, top: int = 40) -> None:
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    with open(path) as f:
        for line in f:
            stack_text, _, micros = line.rstrip("\n").rpartition(" ")
            stack, n = stack_text.split(";"), int(micros)
            total += n
            own[stack[-1]] += n
            for name in set(stack):
                inclusive[name] += n
    print(f"samples of running threads: {total}")
    print("own:")
    for name, n in own.most_common(top):
        print(f"  {100 * n / total:5.1f} %  {name}")
    print("inclusive:")
    for name, n in inclusive.most_common(top):
        print(f"  {100 * n / total:5.1f} %  {name}")


def main() -> None:
    if sys.argv[1] == "report":
        report(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 40)
        return
    out, args = sys.argv[1], sys.argv[2:]
    sampler = Sampler(out, float(os.environ.get("KAI_SAMPLE_MS", "5")) / 1000)
    threading.Thread(target=sampler.run, name="bench-sampler", daemon=True).start()
    atexit.register(sampler.dump)
    sys.argv = ["kai", *args]
    runpy.run_module("kai_scheduler.cli", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
