"""The shield: a real cgroup with the highest CPU weight around the measurement, nothing else changed."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from boatload.provision import memlimit, shield
from boatload.provision.ledger import Ledger

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shield.where() is None,
                                reason="the shield needs root and a cgroup hierarchy with the cpu controller")

# In a process of its own: busy on one core for `seconds`, shielded or not,
# then its run delay as a share of that time (its one thread's schedstat).
BUSY = textwrap.dedent("""
    import json, os, sys, time
    from contextlib import nullcontext
    from boatload.provision.shield import shielded

    scratch, on, seconds = sys.argv[1], sys.argv[2] == "on", float(sys.argv[3])
    with (shielded(scratch) if on else nullcontext({})) as how:
        cgroup = open("/proc/self/cgroup").read()
        d0 = int(open("/proc/thread-self/schedstat").read().split()[1])
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            pass
        d1 = int(open("/proc/thread-self/schedstat").read().split()[1])
    print(json.dumps({"share": (d1 - d0) / 1e9 / seconds, "how": how, "cgroup": cgroup,
                      "after": open("/proc/self/cgroup").read()}))
""")


def busy(tmp_path: Path, on: bool, core: int, seconds: float = 1.0) -> dict:
    out = subprocess.run(["taskset", "-c", str(core), sys.executable, "-c", BUSY, str(tmp_path / "scratch"),
                          "on" if on else "off", str(seconds)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_shielded_process_waits_far_less_beside_a_hog_on_its_core_and_the_hog_is_untouched(tmp_path):
    core = sorted(os.sched_getaffinity(0))[0]
    hog = subprocess.Popen(["taskset", "-c", str(core), "sh", "-c", "while :; do :; done"])
    try:
        time.sleep(0.2)
        seen = {k: Path(f"/proc/{hog.pid}/{k}").read_text() for k in ("cgroup", "stat")}
        bare = busy(tmp_path, False, core)
        shielded = busy(tmp_path, True, core)
        after = {k: Path(f"/proc/{hog.pid}/{k}").read_text() for k in ("cgroup", "stat")}
    finally:
        hog.kill()
        hog.wait()
    # sharing one core with a busy loop, unshielded: waiting about half the time (more with others' load)
    assert bare["share"] >= 0.3, bare
    assert shielded["share"] <= 0.1 and shielded["share"] <= bare["share"] / 3, (bare["share"], shielded["share"])
    how = shielded["how"]
    assert how["cgroup"] and how["cgroup"].split("/")[-1] in shielded["cgroup"]
    assert how["cpu_weight"] in ({"cpu.shares": 262144, "others": 1024}, {"cpu.weight": 10000, "others": 100})
    assert how["cpuset"] is None and how["cpuset_why"]
    assert how["cgroup"].split("/")[-1] not in shielded["after"] and not Path(how["cgroup"]).exists()
    # nothing of the other process changed: its cgroups, its nice value (field 19) and affinity
    assert after["cgroup"] == seen["cgroup"]
    assert after["stat"].rsplit(")", 1)[1].split()[16] == seen["stat"].rsplit(")", 1)[1].split()[16]
    released = [r for r in Ledger((tmp_path / "scratch").resolve()).resources().values() if r.path == how["cgroup"]]
    assert released and all(r.released for r in released)


def test_a_sigkilled_runs_shield_and_what_it_started_are_removed_by_cleanup(tmp_path):
    scratch = tmp_path / "scratch"
    script = textwrap.dedent("""
        import subprocess, sys, time
        from boatload.provision.shield import shielded
        with shielded(sys.argv[1]) as how:
            child = subprocess.Popen(["sleep", "600"])
            print(how["cgroup"], child.pid, flush=True)
            time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script, str(scratch)], stdout=subprocess.PIPE, text=True)
    cgroup, child = proc.stdout.readline().split()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert Path(cgroup).is_dir() and int(child) in memlimit.procs(Path(cgroup))
    leftovers = memlimit.find_leftovers(scratch)
    assert cgroup in leftovers.cgroups
    done, failed = leftovers.undo()
    assert failed == [] and any(cgroup in d for d in done)
    assert not Path(cgroup).exists()
    time.sleep(0.1)
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split(")")[1][:3]


def test_without_the_shield_setting_nothing_is_made(tmp_path):
    with shield.shielded(tmp_path / "scratch", enabled=False) as how:
        assert how["cgroup"] is None and how["why_not"] == "interference.shield is false"
    assert not (tmp_path / "scratch").exists()
