"""The stack's cost is reused across processes from the scratch directory's
record (boatload.provision.devmodel.calibrate.reused_or_measured) while it holds:
same host, kernel, boot and builds, and young enough; else measured again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from targetlib import IS_ROOT, SSD_ABOVE_FLOOR, scratch, wait_clean  # noqa: F401 - scratch is a fixture

from boatload.provision.devmodel import calibrate
from boatload.provision.devmodel.calibrate import RECORD, StackCost, reused_or_measured

TOOLS = {"nbdkit": "/usr/bin/nbdkit"}


class Measurer:
    def __init__(self):
        self.calls = 0

    def __call__(self) -> StackCost:
        self.calls += 1
        return StackCost(40.0 + self.calls, 300.0, 600.0)


def test_a_recent_record_is_reused_and_says_so(tmp_path):
    measure = Measurer()
    first = reused_or_measured(tmp_path, TOOLS, measure)
    assert measure.calls == 1 and not first.reused
    second = reused_or_measured(tmp_path, TOOLS, measure)
    assert measure.calls == 1 and second.reused
    assert second.params() == first.params() == {"stack_us": 41.0, "overhead_us": 300.0, "overhead_us_per_mib": 600.0}
    assert second.origin()["measured_by_pid"] == os.getpid()
    assert calibrate.stated(second)["reused"] is True


def test_an_old_record_is_measured_again(tmp_path):
    measure = Measurer()
    reused_or_measured(tmp_path, TOOLS, measure)
    path = tmp_path / RECORD
    doc = json.loads(path.read_text())
    doc["measured_at"] = time.time() - calibrate.MAX_AGE_S - 1
    path.write_text(json.dumps(doc))
    again = reused_or_measured(tmp_path, TOOLS, measure)
    assert measure.calls == 2 and not again.reused and again.stack_us == 42.0
    # and the new measurement is what the next process reuses
    assert reused_or_measured(tmp_path, TOOLS, measure).stack_us == 42.0 and measure.calls == 2


def test_other_conditions_or_a_broken_record_are_measured_again(tmp_path):
    measure = Measurer()
    reused_or_measured(tmp_path, TOOLS, measure)
    assert not reused_or_measured(tmp_path, {"nbdkit": "/opt/other/nbdkit"}, measure).reused
    assert measure.calls == 2
    doc = json.loads((tmp_path / RECORD).read_text())
    doc["conditions"]["filter_sha256"] = "0" * 64  # another build of the filter
    (tmp_path / RECORD).write_text(json.dumps(doc))
    assert not reused_or_measured(tmp_path, {"nbdkit": "/opt/other/nbdkit"}, measure).reused
    assert measure.calls == 3
    (tmp_path / RECORD).write_text("{not json")
    assert not reused_or_measured(tmp_path, TOOLS, measure).reused and measure.calls == 4
    assert reused_or_measured(tmp_path, TOOLS, measure, max_age_s=0).reused is False and measure.calls == 5


@pytest.mark.skipif(not IS_ROOT or not os.path.exists("/dev/fuse"), reason="needs root and /dev/fuse")
def test_a_second_process_reuses_the_first_ones_calibration(scratch):
    code = textwrap.dedent("""
        import json, sys
        from pathlib import Path
        from boatload.provision.devmodel.device import stack_cost
        cost = stack_cost(Path(sys.argv[1]))
        print(json.dumps({**cost.params(), **cost.origin()}))
    """)

    def one() -> tuple[dict, float]:
        start = time.monotonic()
        out = subprocess.run([sys.executable, "-c", code, str(scratch)], capture_output=True, text=True, check=True)
        return json.loads(out.stdout), time.monotonic() - start

    (first, _), (second, _) = one(), one()
    assert not first["reused"] and second["reused"]
    assert first["measured_by_pid"] == second["measured_by_pid"]  # measured by the first process
    assert {k: second[k] for k in ("stack_us", "overhead_us", "overhead_us_per_mib")} == \
        {k: first[k] for k in ("stack_us", "overhead_us", "overhead_us_per_mib")}
    assert first["stack_us"] > 0
    assert wait_clean(scratch) == {}


@pytest.mark.skipif(not IS_ROOT, reason="needs root: a real stack")
def test_a_cost_kept_from_a_busy_moment_is_measured_again_before_a_model_is_refused(scratch):
    """CI: a stack cost measured earlier in the pytest process, in a busy moment, refused
    ssd-2008 (its 100-us read more than 15 % cheaper than the cost kept) in every later test.
    Before refusing, the stack is measured again and the lower cost kept. (The model here
    reads in 204 us: a real stack under the tests' own load stays below its 234-us limit.)"""
    from boatload.provision.devmodel import device, presets

    device.forget_stack_cost()
    device._measured = StackCost(400.0, 300.0, 600.0)  # as if measured while the machine was busy
    try:
        params = presets.resolve(SSD_ABOVE_FLOOR, "m")
        cost = device.checked_stack_cost(params, "targets.m.model", 16 << 20, scratch)
        assert cost.stack_us <= (200.0 + 512 / 130) * 1.15 and device._measured is cost
        # a model that the stack really is too slow for is still refused, in one line naming it
        with pytest.raises(presets.ModelError, match="targets.fast.model"):
            device.checked_stack_cost({**params, "read_latency_us": 1}, "targets.fast.model", 16 << 20, scratch)
    finally:
        device.forget_stack_cost()
    assert wait_clean(scratch) == {}


def test_a_model_is_refused_only_when_too_fast_for_the_lowest_of_several_fresh_stacks(tmp_path, monkeypatch):
    """The least a request costs differs from one attached stack to the next (79-150 us over 13
    stacks on one machine, against ssd-2008's 103.9-us read that allows 122): a quick run was
    refused when the kept cost and one fresh stack were both above it. Now fresh stacks are
    measured until one is low enough, at most device.REMEASURES, the lowest kept and saved."""
    from boatload.provision.devmodel import device, presets

    params = presets.resolve("ssd-2008", "m")
    fresh = iter([150.0, 140.0, 145.0, 90.0, 80.0])
    measured, saved = [], []

    def measure_now(_scratch):
        measured.append(StackCost(next(fresh), 200.0, 900.0))
        return measured[-1]

    monkeypatch.setattr(device, "_measure_now", measure_now)
    monkeypatch.setattr(device, "save_cost", lambda _scratch, _tools, cost: saved.append(cost.stack_us))
    monkeypatch.setattr(device, "_measured", StackCost(160.0, 200.0, 900.0))
    cost = device.checked_stack_cost(params, "targets.m.model", 16 << 20, tmp_path)
    # the fourth fresh stack is the first low enough: no fifth measured; each lower one saved
    assert [c.stack_us for c in measured] == [150.0, 140.0, 145.0, 90.0]
    assert cost.stack_us == 90.0 and device._measured is cost and saved == [150.0, 140.0, 90.0]

    # a model too fast for every stack: refused in one line after REMEASURES fresh ones, the lowest kept
    fresh = iter([100.0 + i for i in range(device.REMEASURES + 1)])
    measured.clear()
    with pytest.raises(presets.ModelError, match=r"^targets\.fast\.model.*\(stack_us\)$"):
        device.checked_stack_cost({**params, "read_latency_us": 1}, "targets.fast.model", 16 << 20, tmp_path)
    assert len(measured) == device.REMEASURES and device._measured.stack_us == 90.0
    # a log's reads are left out (read only at mount): ssd-2008 as a log at a floor of 125 us, not as data
    fresh = iter([125.0] * (2 * device.REMEASURES))
    monkeypatch.setattr(device, "_measured", StackCost(125.0, 200.0, 900.0))
    measured.clear()
    assert device.checked_stack_cost(params, "targets.j.log.model", 16 << 20, tmp_path, reads_timed=False).stack_us == 125.0
    assert measured == []  # accepted as it stood
    with pytest.raises(presets.ModelError, match=r"^targets\.j\.model\.read_latency_us .*\(stack_us\)$"):
        device.checked_stack_cost(params, "targets.j.model", 16 << 20, tmp_path)
    # its writes still count: a log whose writes the stack cannot serve is refused
    with pytest.raises(presets.ModelError, match=r"^targets\.j\.log\.model\.write_latency_us .*\(stack_us\)$"):
        device.checked_stack_cost({**params, "write_latency_us": 1}, "targets.j.log.model", 16 << 20, tmp_path,
                                  reads_timed=False)
    # a model wrong in itself is refused at once, nothing measured
    measured.clear()
    with pytest.raises(presets.ModelError, match="targets.bad.model"):
        device.checked_stack_cost({**params, "read_latency_us": -5}, "targets.bad.model", 16 << 20, tmp_path)
    assert measured == []
