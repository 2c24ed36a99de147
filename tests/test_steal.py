"""The hypervisor's steal as a disturbance (boatload.measure.disturbance): a phase in which the
machine's CPU went to other guests beyond `max_steal` is disturbed, always passing, said in one
line; the wait for it to pass reads /proc/stat's steal; the tidy table keeps each run's worst; the
stack's calibration waits for it to pass and is measured again after a spell."""

import pytest

from boatload.analysis.tidy import run_columns
from boatload.base import hostcpu
from boatload.measure import disturbance
from boatload.provision.devmodel import calibrate
from boatload.measure.interference import DEFAULTS
from boatload.base.hostcpu import wait_steal  # its /proc/stat, clock and sleep replaced below

QUIET_DISK = {"others_io_mb": {"read": 0.0, "write": 0.0}, "disk": {}}


def phase(steal_share: float, seconds: float = 2.0, **more) -> dict:
    """A one-thread phase that lost nothing to other processes, with the steal it saw (2 CPUs)."""
    return {"measured": True, "seconds": seconds, "cores": 2, "ran_s": seconds, "run_delay_s": 0.0,
            "competing_cpu_s": 0.0, "steal_share": steal_share, "cpu_s": {"steal": steal_share * seconds * 2},
            "before": {"seconds": 0.3, "competing_cores": 0.0, "others_io_mb": {"read": 0.0, "write": 0.0}},
            "new_competing_cores": 0.0, "max_steal": DEFAULTS["max_steal"], "threads": 1, **QUIET_DISK, **more}


@pytest.mark.parametrize("share, disturbed", [(0.0, False), (0.19, False), (0.21, True), (0.45, True)])
def test_a_phase_is_disturbed_by_steal_beyond_the_limit(share, disturbed):
    assert disturbance.judge(phase(share), DEFAULTS, disk_bound=False) == (["steal"] if disturbed else [])


def test_steal_below_the_clock_grain_disturbs_nothing():
    # 30 % of a 0.02-s phase is 12 ms of steal: about one tick, not a measurement of it
    short = phase(0.3, seconds=0.02)
    assert disturbance.judge(short, DEFAULTS, disk_bound=False) == []


def test_a_record_without_steal_is_judged_as_before():
    old = phase(0.0)
    del old["steal_share"]
    assert disturbance.judge(old, DEFAULTS, disk_bound=False) == []


def test_steal_is_passing_even_when_other_load_was_there_before():
    rec = phase(0.4)
    assert disturbance.persistence(rec, ["steal"], DEFAULTS) == "passing"
    rec = {**rec, "disturbed_by": ["steal"], "disturbance": "passing", "tool": "boatload-worker", "phase": "io"}
    line = disturbance.why(rec)
    assert "40 % of the machine's CPU time" in line and "limit 20 %" in line and "another guest" in line


def test_the_wait_for_steal_reads_proc_stat_and_stops_when_it_falls(monkeypatch):
    # 2 CPUs, 100 ticks a second: 60 ticks of steal in the first 1-s window (30 %), then 4 (2 %)
    ticks = iter([0, 60, 60, 64])
    monkeypatch.setattr(hostcpu, "cpu_jiffies", lambda: {"steal": next(ticks)})
    monkeypatch.setattr(hostcpu, "TICK_S", 0.01)
    monkeypatch.setattr(hostcpu.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(hostcpu.time, "sleep", lambda s: None)
    found = wait_steal(30, 0.2)
    assert found["calm"] and found["steal_share"] == pytest.approx(0.02) and found["for"] == "steal"


def test_the_wait_for_steal_gives_up_at_its_limit(monkeypatch):
    steal = iter(range(0, 10_000, 60))  # 30 % in every window
    clock = iter(range(0, 100, 5))
    monkeypatch.setattr(hostcpu, "cpu_jiffies", lambda: {"steal": next(steal)})
    monkeypatch.setattr(hostcpu, "TICK_S", 0.01)
    monkeypatch.setattr(hostcpu.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(hostcpu.time, "sleep", lambda s: None)
    monkeypatch.setattr(hostcpu.time, "monotonic", lambda: next(clock))
    found = wait_steal(20, 0.2)
    assert not found["calm"] and found["waited_s"] >= 20 and found["steal_share"] == pytest.approx(0.3)


def test_the_tidy_table_keeps_the_worst_steal_of_a_run():
    phases = [{**phase(share), "phase": name, "tool": "w", "other_cpu_s": 0.0, "run_queue": {"mean": 1.0},
               "run_delay_share": 0.0,
               "cache": {"state": "cold"}} for name, share in (("a", 0.05), ("b", 0.31))]
    doc = {"interference": {"phases": phases, "redone": [], "disturbed": False, "disturbance": None}}
    assert run_columns(doc)["steal_max"] == pytest.approx(0.31)


def test_a_steal_window_reads_the_share_of_its_own_seconds(monkeypatch):
    # 2 CPUs, 100 ticks a second: 50 ticks of steal over 0.5 s is half the machine's CPU time
    ticks, clock = iter([1000, 1050]), iter([10.0, 10.5])
    monkeypatch.setattr(hostcpu, "cpu_jiffies", lambda: {"steal": next(ticks)})
    monkeypatch.setattr(hostcpu, "TICK_S", 0.01)
    monkeypatch.setattr(hostcpu.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(hostcpu.time, "monotonic", lambda: next(clock))
    assert hostcpu.StealWindow().share() == pytest.approx(0.5)


class ScriptedWindows:
    """Steal windows, each made seeing the next of `shares`."""

    def __init__(self, shares):
        self.shares = iter(shares)

    def __call__(self):
        seen = next(self.shares)
        return type("Window", (), {"share": lambda _: seen})()


@pytest.mark.parametrize("shares, attempts, kept", [
    ([0.05], 1, 0.05),  # calm: measured once
    ([0.35, 0.1], 2, 0.1),  # a spell while measuring: measured again after the wait
    ([0.4, 0.3, 0.5], 3, 0.5),  # a spell that stays: the last of ATTEMPTS kept, with the steal it saw
])
def test_the_calibration_waits_for_the_steal_and_is_measured_again_after_a_spell(monkeypatch, shares, attempts,
                                                                                  kept):
    waits, measured = [], []
    monkeypatch.setattr(calibrate, "wait_steal", lambda limit_s, max_steal, window_s: waits.append(max_steal))
    monkeypatch.setattr(calibrate, "StealWindow", ScriptedWindows(shares))
    monkeypatch.setattr(calibrate, "_measured_once",
                        lambda device: measured.append(device) or calibrate.StackCost(100.0 + len(measured), 250, 900))
    cost = calibrate.measure("/dev/loopX")
    assert calibrate.ATTEMPTS == 3 and len(measured) == attempts and waits == [hostcpu.MAX_STEAL] * attempts
    assert cost.stack_us == 100.0 + attempts and cost.steal_share == kept
    assert calibrate.stated(cost)["steal_share"] == kept and "steal_share" not in cost.params()
