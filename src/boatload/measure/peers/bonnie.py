"""bonnie++ as a peer of the worker's `meta`: its small-file tests, its numbers.

The tmpfs study's original ran `bonnie++ -f -s 0 -n N:250000:0:1000`; we run

    bonnie++ -s 0 -n N:MAX:MIN:DIRS -u root -q -z SEED -d DIR

- `-s 0` skips the big-file I/O tests (so `-f` has nothing left to do);
- `-n N:MAX:MIN:DIRS`: N x 1024 files of MIN..MAX bytes in DIRS directories;
- `-u root`: bonnie++ refuses to run as root without it;
- `-q`: the CSV line alone on stdout, the text table on stderr;
- `-z SEED`: its random sizes and orders are repeatable.

CSV (format version 1.98, bonnie++ 1.9x and 2.00; bon_csv2html(1), "FORMAT"),
counted from 0: 0 format_version, 1 bonnie_version, 2 name, 3 concurrency,
4 seed, 5 file_size, 6 chunk_size, 7 seeks, 8 seek_proc_count, 9-20 the
big-file tests (value, %CPU pairs), 21 num_files (x 1024), 22 max_size,
23 min_size, 24 num_dirs, 25 file_chunk_size, then value/%CPU pairs for
26 seq_create, 28 seq_stat, 30 seq_del, 32 ran_create, 34 ran_stat,
36 ran_del, then latencies (the slowest single operation, with a unit:
`87us`, `12ms`, `3s`) 38-43 of the big-file tests and 44-49 of the six
file tests in the same order. A test that took under 500 ms prints `+++++`
(value) and `+++` (%CPU): too fast to time, so null here. An empty field is a
test that did not run (or, for min_size, 0), also null.

What 2.00a really prints differs from that list in fields 24-25:
bon_time.cpp (BonTimer::DoReportFile) writes "N,MAX,MIN" plus one more
separator, never the chunk size, then ",DIRS" (or "," for one directory).
So field 24 is empty and the directory count is field 25 (empty for one
directory): `-n 1:4096:0:4` gives `...,1,4096,,,4,+++++,...`. The file tests
(26-37) and their latencies (44-49) are where the list says.

We read the CSV only: in 2.00a the text table (stderr) prints N x 1024
/sec (files per one second) for every timed test, e.g. 65536 where the CSV
says 30784 for -n 64; its "+++++" and %CP agree with the CSV.

bonnie++'s "Read" is `stat()` of every file (sequential: in readdir order;
random: in a shuffled order) and, for a file of more than 0 bytes, open +
read of all its data + close (bon_file.cpp, COpenTest::stat_file).
"""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
from pathlib import Path

from boatload.measure import interference

# bonnie++'s six file tests, in its order, by the reference's names.
TESTS = (
    ("seq_create", "sequential_create"),
    ("seq_stat", "sequential_read"),
    ("seq_del", "sequential_delete"),
    ("ran_create", "random_create"),
    ("ran_stat", "random_read"),
    ("ran_del", "random_delete"),
)
FIRST_FILE_TEST = 26  # seq_create; each test is a (value, %CPU) pair
FIRST_FILE_LATENCY = 44  # seq_create_latency
FIELDS = 50  # fields of a format-1.98 line
FORMAT_VERSIONS = ("1.98",)
TOO_FAST = "+++++"
UNITS_US = {"us": 1.0, "ms": 1e3, "s": 1e6}
LATENCY_RE = re.compile(r"(?P<n>[0-9]+(?:\.[0-9]+)?)(?P<unit>us|ms|s)\Z")


class BonnieError(RuntimeError):
    """bonnie++ is missing, failed, or printed no CSV line this parser knows."""


def executable() -> str | None:
    return shutil.which("bonnie++") or shutil.which("bonnie++", path="/usr/local/sbin:/usr/sbin:/sbin")


def version() -> str | None:
    """bonnie++ has no --version: its usage message ends with "Version: 2.00a"."""
    exe = executable()
    if exe is None:
        return None
    out = subprocess.run([exe, "-h"], capture_output=True, text=True)
    for line in (out.stdout + out.stderr).splitlines():
        if line.startswith("Version:"):
            return line.split(":", 1)[1].strip()
    return None


def files_k(files: int) -> int:
    """bonnie++ counts files in units of 1024: the nearest count, at least 1."""
    return max(1, round(files / 1024))


def argv(directory: Path, files_k: int, size_max: int, dirs: int, *, size_min: int = 0, seed: int | None = None) -> list[str]:
    """The bonnie++ command line of the small-file tests in `directory` (which must exist)."""
    exe = executable()
    if exe is None:
        raise BonnieError("bonnie++ is not installed (Debian package bonnie++, nixpkgs bonnie)")
    if files_k < 1:
        raise BonnieError(f"bonnie++ -n: at least 1 (x 1024 files), got {files_k}")
    cmd = [exe, "-s", "0", "-n", f"{files_k}:{size_max}:{size_min}:{dirs}", "-u", "root", "-q"]
    if seed is not None:
        cmd += ["-z", str(seed)]
    return [*cmd, "-d", str(directory)]


def _number(text: str) -> float | None:
    text = text.strip()
    if not text or text.startswith("+"):
        return None
    return float(text)


def _int(text: str) -> int | None:
    value = _number(text)
    return None if value is None else int(value)


def latency_us(text: str) -> float | None:
    """`87us`, `12ms`, `3s` in microseconds; empty or `+++` is None."""
    text = text.strip()
    if not text or text.startswith("+"):
        return None
    m = LATENCY_RE.match(text)
    if m is None:
        raise BonnieError(f"bonnie++ CSV: cannot read the latency {text!r}")
    return float(m["n"]) * UNITS_US[m["unit"]]


def parse_line(line: str) -> dict:
    """One CSV line of bonnie++ (format 1.98) as a dict with its six file tests."""
    fields = next(csv.reader([line.strip()]))
    if not fields or fields[0] not in FORMAT_VERSIONS:
        raise BonnieError(
            f"bonnie++ CSV: format version {fields[0] if fields else ''!r} is not one of {', '.join(FORMAT_VERSIONS)} "
            "(bonnie++ >= 1.90)"
        )
    if len(fields) < FIELDS:
        raise BonnieError(f"bonnie++ CSV: {len(fields)} fields, expected {FIELDS}: {line.strip()!r}")
    tests = []
    for i, (csv_name, test) in enumerate(TESTS):
        value, cpu = fields[FIRST_FILE_TEST + 2 * i], fields[FIRST_FILE_TEST + 2 * i + 1]
        tests.append({
            "test": test,
            "csv_name": csv_name,
            "ops_per_s": _number(value),
            "cpu_pct": _number(cpu),
            "too_fast": value.strip().startswith("+"),
            "latency_max_us": latency_us(fields[FIRST_FILE_LATENCY + i]),
        })
    num_files = _int(fields[21])
    return {
        "format_version": fields[0],
        "bonnie_version": fields[1],
        "name": fields[2],
        "concurrency": _int(fields[3]),
        "seed": _int(fields[4]),
        "num_files_k": num_files,
        "files": None if num_files is None else num_files * 1024,
        "max_size": _int(fields[22]),
        "min_size": _int(fields[23]) or 0,
        # 2.00a: field 24 empty, the directories in 25 (see above); either way, empty is one.
        "num_dirs": _int(fields[25]) or _int(fields[24]) or 1,
        "tests": tests,
    }


def parse_csv(text: str) -> list[dict]:
    """Every result line of bonnie++'s CSV output (`-x N` prints N); `#` lines are comments."""
    out = [parse_line(line) for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if not out:
        raise BonnieError("bonnie++ printed no CSV line")
    return out


def run(directory: Path, files_k_: int, size_max: int, dirs: int, *, size_min: int = 0, seed: int | None = None,
        runner=subprocess.run, timeout: float | None = None) -> dict:
    """Run bonnie++ (through `runner`, e.g. a memory limit's `run`) and parse its CSV.

    Returns {"argv", "returncode", "csv", "text", "result"}; raises BonnieError
    if it failed or printed nothing usable. With an active interference
    monitor, the run is one timed phase."""
    cmd = argv(directory, files_k_, size_max, dirs, size_min=size_min, seed=seed)
    with interference.tool_phase("bonnie++"):
        proc = runner(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=timeout)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-3:]
        raise BonnieError(f"bonnie++ failed (exit {proc.returncode}): {' / '.join(tail)}")
    return {
        "argv": cmd,
        "returncode": proc.returncode,
        "csv": proc.stdout,
        "text": proc.stderr,
        "result": parse_csv(proc.stdout)[-1],
    }
