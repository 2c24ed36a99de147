"""The file-creation methods of the billion-file study, other than our worker.

Each makes the same forest as `boatload-worker tree --shape ...` inside an empty
directory: the leaf directories of the shape, each holding `shape[-1]` empty
files. They run as the original ran them: a shell loop around `touch`, `tar x`
or `unzip`, or a Python script, timed from the outside as a whole process.
"""

from __future__ import annotations

import itertools
import os
import resource
import signal
import subprocess
import sys
import tarfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from boatload.measure import interference
from boatload.base.results import write_atomic_with


@dataclass
class Timed:
    """What one creation run did: wall seconds, CPU of the child, and whether it was cut short."""

    seconds: float
    cpu_user_s: float
    cpu_sys_s: float
    capped: bool
    returncode: int
    stderr: str


def leaf_dirs(shape: list[int]) -> list[str]:
    """Relative paths of the leaf directories, in creation order (`d00/d03` for shape [100, 10, F])."""
    levels = shape[:-1]
    if not levels:
        return ["."]
    names = [[f"d{i:0{len(str(n - 1))}d}" for i in range(n)] for n in levels]
    return ["/".join(parts) for parts in itertools.product(*names)]


def file_names(count: int) -> list[str]:
    return [f"f{i:0{len(str(count - 1))}d}" for i in range(count)]


def file_name_format(count: int) -> str:
    """The same names as file_names(), as a `seq -f` format for shell loops."""
    return f"f%0{len(str(count - 1))}g"


# The Python method: a plain os.open loop, as short as a user would write it.
PYTHON_LOOP = r"""
import os, sys
root, leaves, count, width = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY
for leaf in open(leaves).read().split():
    d = os.path.join(root, leaf)
    os.makedirs(d, exist_ok=True)
    for i in range(count):
        os.close(os.open(f"{d}/f{i:0{width}d}", flags, 0o644))
"""

# Shell loops over the leaf directories listed one per line on stdin.
SHELL_LOOPS = {
    "touch-many": 'while read -r d; do mkdir -p "$d"; (cd "$d" && seq -f "$FMT" 0 $((COUNT - 1)) | xargs -n 1000 touch); done',
    "touch-each": 'while read -r d; do mkdir -p "$d"; for f in $(seq -f "$FMT" 0 $((COUNT - 1))); do touch "$d/$f"; done; done',
    "tar": 'while read -r d; do mkdir -p "$d"; tar -xf "$ARCHIVE" -C "$d"; done',
    "unzip": 'while read -r d; do mkdir -p "$d"; unzip -q "$ARCHIVE" -d "$d"; done',
}


def leaf_archive(kind: str, count: int, cache: Path) -> Path:
    """An archive of one leaf directory's `count` empty files, built once and reused.

    The original extracted one archive of a million files a thousand times;
    we extract one leaf's archive once per leaf, which is the same at any scale.
    """
    path = cache / f"leaf-{count}.{'tar' if kind == 'tar' else 'zip'}"
    if path.exists():
        return path

    def write(tmp: Path) -> None:
        if kind == "tar":
            with tarfile.open(tmp, "w", format=tarfile.GNU_FORMAT) as tar:
                for name in file_names(count):
                    info = tarfile.TarInfo(name)
                    info.mode, info.mtime = 0o644, 0
                    tar.addfile(info)
        else:
            with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as archive:
                for name in file_names(count):
                    archive.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), b"")

    write_atomic_with(path, write)
    return path


def run_timed(argv: list[str], cwd: Path, stdin_text: str, env: dict, time_cap_s: float | None,
              tool: str | None = None) -> Timed:
    """Run a creation command in its own process group; stop it after `time_cap_s`.

    With an active interference monitor the run is one timed phase of `tool`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with interference.tool_phase(tool or Path(argv[0]).name, "create"):
        start = time.monotonic()
        proc = subprocess.Popen(
            argv, cwd=cwd, stdin=subprocess.PIPE, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
            env={**os.environ, **env}, text=True, start_new_session=True,
        )
        capped = False
        try:
            _, stderr = proc.communicate(stdin_text, timeout=time_cap_s)
        except subprocess.TimeoutExpired:
            capped = True
            os.killpg(proc.pid, signal.SIGKILL)
            _, stderr = proc.communicate()
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        seconds = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return Timed(
        seconds=seconds,
        cpu_user_s=after.ru_utime - before.ru_utime,
        cpu_sys_s=after.ru_stime - before.ru_stime,
        capped=capped,
        returncode=proc.returncode,
        stderr=(stderr or "").strip()[-2000:],
    )


def create(method: str, root: Path, shape: list[int], time_cap_s: float | None, cache: Path) -> Timed:
    """Make the forest of `shape` in the empty directory `root` with a baseline `method`."""
    count = shape[-1]
    leaves = "\n".join(leaf_dirs(shape)) + "\n"
    if method == "python":
        leaves_file = cache / f"leaves-{os.getpid()}.txt"
        cache.mkdir(parents=True, exist_ok=True)
        leaves_file.write_text(leaves)
        try:
            argv = [sys.executable, "-S", "-c", PYTHON_LOOP, str(root), str(leaves_file), str(count), str(len(str(count - 1)))]
            return run_timed(argv, root, "", {}, time_cap_s, tool=method)
        finally:
            leaves_file.unlink()
    if method not in SHELL_LOOPS:
        raise ValueError(f"method: unknown creation method '{method}'")
    env = {"FMT": file_name_format(count), "COUNT": str(count), "LC_ALL": "C"}
    if method in ("tar", "unzip"):
        env["ARCHIVE"] = str(leaf_archive(method, count, cache))
    return run_timed(["bash", "-c", SHELL_LOOPS[method]], root, leaves, env, time_cap_s, tool=method)


def count_files(root: Path) -> tuple[int, int]:
    """(regular files, directories) below `root`, not following symlinks."""
    files = dirs = 0
    stack = [str(root)]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    dirs += 1
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    files += 1
    return files, dirs
