"""A modelled device on its own (tests, bench, calibration): an image, the
stack's measured cost added to the model and checked, the stack attached,
all torn down on leaving, whatever signal arrives."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from boatload.provision.devmodel import presets
from boatload.provision.devmodel.calibrate import CALIBRATION_MB, CALIBRATION_MODEL, StackCost, measure, reused_or_measured
from boatload.provision.devmodel.calibrate import save as save_cost  # noqa: I001
from boatload.provision.devmodel.stack import Stack, attach, resolve_stack_tools
from boatload.provision.hostops import Teardown, read_sys, remove_file, subdir, token, write_sys
from boatload.provision.ledger import Ledger
from boatload.base.signals import deferred_signals, signals_as_exceptions
from boatload.base.targetspec import TargetError

MiB = 1024 * 1024


def _make_image(d: Path, name: str, size: int, ledger: Ledger, undo: Teardown) -> Path:
    image = d / f"{name}-{token()}.img"
    with deferred_signals():
        rid = ledger.record("image", image, size_bytes=size)
        fd = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        undo.step(f"close {image}", lambda: os.close(fd))
        undo.step(f"delete {image}", lambda: remove_file(image, fd), release=(ledger, rid))
        st = os.fstat(fd)
        ledger.note(rid, inode=st.st_ino, dev=st.st_dev)
        os.ftruncate(fd, size)
    return image


_measured: StackCost | None = None


def stack_cost(scratch: Path) -> StackCost:
    """The stack's cost on this machine (boatload.provision.devmodel.calibrate): once per
    process, reused from the scratch directory's recent record if it holds."""
    global _measured
    if _measured is None:
        _measured = reused_or_measured(scratch, resolve_stack_tools(), lambda: _measure_now(scratch))
    return _measured


def _measure_now(scratch: Path) -> StackCost:
    with modelled_image(None, CALIBRATION_MB, CALIBRATION_MODEL, scratch=scratch, name="calibration",
                        calibrated=False) as stack:
        return measure(stack.device)


#: fresh stacks measured, at most, before a model is refused: the least a request costs differs
#: from one attached stack to the next (bench/README.md "The stack's floor differs stack to stack")
REMEASURES = 4


def checked_stack_cost(params: dict, where: str, size: int, scratch: Path, reads_timed: bool = True) -> StackCost:
    """The stack's cost for a model, the model refused in one line if any request of it
    would be more than 15 % cheaper than the stack. A cost kept from earlier (this process,
    or the scratch record) may come from a busy moment or a slow stack: before refusing,
    up to REMEASURES fresh stacks are measured, the lowest cost kept, and the model is
    refused only if it is too fast for that one too. `reads_timed`: presets.check."""
    global _measured
    cost = stack_cost(scratch)
    for _ in range(REMEASURES):
        try:
            presets.check(params, where, size, cost.stack_us, reads_timed)
            return cost
        except presets.ModelError as refused:
            if "(stack_us)" not in str(refused):
                raise  # the model itself is wrong: nothing to measure
        fresh = _measure_now(scratch)
        if fresh.stack_us < cost.stack_us:
            cost = _measured = fresh
            save_cost(scratch, resolve_stack_tools(), fresh)
    presets.check(params, where, size, cost.stack_us, reads_timed)  # too fast for the lowest cost too: refused
    return cost


def forget_stack_cost() -> None:
    """Measure again next time (tests)."""
    global _measured
    _measured = None


def model_params(params: dict, where: str, size: int, scratch: Path) -> dict:
    """`params` with the stack's measured cost, refused in one line if any
    request of the model would be more than 15 % cheaper than the stack."""
    cost = checked_stack_cost(params, where, size, scratch)
    return {**params, **cost.params()}


def _write_back(stack: Stack, ledger: Ledger, undo: Teardown) -> None:
    """The loop driver keeps a device's write cache setting after detaching, so
    a device found in "write through" would keep every flush from the model:
    set "write back" (a run's target sets its own, boatload.provision.targets.loop), and
    put back what was found."""
    sysfile = Path("/sys/block") / Path(stack.device).name / "queue" / "write_cache"
    before = read_sys(sysfile)
    if before is not None and before != "write back":
        with deferred_signals():
            loop = next(r for r in reversed(list(ledger.resources().values()))
                        if r.kind == "loop" and r.facts.get("stack") == str(stack.dir))
            ledger.note(loop.id, write_cache_before=before)
            write_sys(sysfile, "write back")
            undo.step(f"restore write cache of {stack.device}", lambda: write_sys(sysfile, before))


@contextmanager
def modelled_image(image: Path | None, size_mb: int, params: dict, *, scratch: Path, name: str,
                   faults: dict | None = None, calibrated: bool = True) -> Iterator[Stack]:
    """Serve `image` (or a new sparse image of size_mb in <scratch>/nbd) through
    the model and yield the running Stack. If nbdkit dies on the way, the
    error raised is one line naming it."""
    scratch = Path(scratch).resolve()
    tools = resolve_stack_tools()
    size = size_mb * MiB if image is None else os.path.getsize(image)
    full = model_params(params, f"model of '{name}'", size, scratch) if calibrated else params
    with signals_as_exceptions(only_if_default=True), Teardown(f"modelled device '{name}'") as undo:
        ledger = Ledger(subdir(scratch, "nbd").parent)
        if image is None:
            image = _make_image(scratch / "nbd", name, size, ledger, undo)
        stack = attach(image, full, scratch=scratch, name=name, ledger=ledger, undo=undo, faults=faults, tools=tools)
        _write_back(stack, ledger, undo)
        try:
            yield stack
        except BaseException:
            dead = stack.nbdkit_failure()
            if dead:
                raise TargetError(dead) from None
            raise
        stack.check_alive()
