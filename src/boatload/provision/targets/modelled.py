"""A loop target on modelled hardware (`model: <preset>`, `log: {model: ...}`):
the image is served by nbdkit through the device-model filter and attached
through nbdfuse as a direct-I/O loop device (boatload.provision.devmodel.stack),
instead of being attached directly. The model is checked field by field and
against the stack's measured cost before the image is made.

`failure()` tells a run that failed whether a modelled device's nbdkit died
under it, in one line naming it."""

from __future__ import annotations

import os
import time
from pathlib import Path

from boatload.provision.devmodel import presets
from boatload.provision.devmodel.device import checked_stack_cost
from boatload.provision.devmodel.stack import attach as attach_stack, last_line
from boatload.provision.ledger import Ledger, pid_alive
from boatload.provision.targets.image import Attached, make_image
from boatload.provision.blockdev import loop_backing_file
from boatload.base.targetspec import TargetError, TargetSpec, plain_model


# `boatload target up`: this process exits leaving its target up, so the
# stacks it makes must serve on until `target down` (see serve_after_exit)
_serve_after_exit = False


def serve_after_exit() -> None:
    """From now on, this process's modelled devices keep serving after it
    exits (nbdkit without --exit-with-parent), until cleanup stops them."""
    global _serve_after_exit
    _serve_after_exit = True


class DeviceDied(TargetError):
    """A modelled device's nbdkit died under a run: the run failed, not the config."""


def resolved(model, where: str) -> dict:
    """The model's parameters from a spec's `model` (checked, naming the field)."""
    return presets.resolve(plain_model(model), where)


def attach_modelled(spec: TargetSpec, image: Path, size: int, ledger: Ledger, undo, scratch: Path, model,
                    where: str, prov: dict, key: str, what: str = "image", outlive_parent: bool = False) -> Attached:
    params = resolved(model, where)
    reads_timed = key != "log_model"  # a log is read only at mount (presets.check)
    cost = checked_stack_cost(params, where, size, scratch, reads_timed)
    img_rid, fd = make_image(spec, image, size, ledger, undo, what)
    faults = dict(spec.faults) if spec.faults and key == "model" else None
    stack = attach_stack(image, {**presets.served(params, cost.stack_us, reads_timed), **cost.params()},
                         scratch=Path(scratch), name=spec.name, ledger=ledger,
                         undo=undo, faults=faults, outlive_parent=outlive_parent or _serve_after_exit)
    loop_rid = next(r.id for r in reversed(list(ledger.resources().values()))
                    if r.kind == "loop" and r.facts.get("stack") == str(stack.dir))
    prov[key] = {
        "config": plain_model(model), "parameters": params, "stack_cost_us": cost.params(),
        # measured by this run or reused from a recent one on this host (boatload.provision.devmodel.calibrate)
        "stack_cost_origin": cost.origin(),
        "reads_timed": reads_timed,
        "stack": str(stack.dir), "faults": faults,
        "image": str(image),  # the host's copy (boatload.measure.interference writes it back before timed phases)
        # the model's counts (reads, writes, flushes, FUA writes, modelled
        # time) once attached (nbdfuse makes losetup's close of its file a
        # flush) and over the whole run: the stack's own dict, filled in at teardown
        "counts_at_attach": dict(stack.stats()),
        "counts": stack.final,
    }
    return Attached(image, fd, img_rid, loop_rid, stack.device, backing=stack.dir / "mnt" / "nbd")


def refusals(spec: TargetSpec, fuse: Path = Path("/dev/fuse")) -> list[str]:
    """Why a modelled target cannot run here, one line each (the preflight's):
    its models' fields, FUSE, the built filter. Nothing is made."""
    out = []
    for model, where, size in ((spec.model, f"targets.{spec.name}.model", spec.size_mb),
                               (spec.log_model, f"targets.{spec.name}.log.model", spec.log_size_mb)):
        if model is None:
            continue
        try:
            presets.check(resolved(model, where), where, (size or 1) * 1024 * 1024)
        except (TargetError, ValueError) as e:
            out.append(str(e))
    if (spec.model or spec.log_model) and not fuse.exists():
        out.append(f"targets.{spec.name}.model: a modelled device needs FUSE, and {fuse} does not exist "
                   "(load the fuse module, or run in a container given /dev/fuse)")
    return out


def verify_modelled(spec: TargetSpec, a: Attached) -> None:
    """Right before mkfs: the loop device is on the stack's FUSE file."""
    if loop_backing_file(a.device) != str(a.backing):
        raise TargetError(f"targets.{spec.name}: {a.device} is not backed by {a.backing} any more; refusing to format it")


def failure(scratch: Path, wait_s: float = 2.0) -> str | None:
    """One line if an nbdkit this process started under `scratch` died before
    its teardown (the ledger has it unreleased, its process is gone). The
    I/O error can reach the run while nbdkit is still exiting: wait a moment."""
    daemons = [r for r in Ledger(scratch).resources().values()
               if r.kind == "daemon" and not r.released and r.facts.get("role") == "nbdkit" and r.pid == os.getpid()
               and isinstance(r.facts.get("daemon_pid"), int)]
    deadline = time.monotonic() + wait_s
    while daemons and time.monotonic() < deadline and all(
            pid_alive(r.facts["daemon_pid"], r.facts.get("daemon_start")) for r in daemons):
        time.sleep(0.05)
    for r in daemons:
        pid = r.facts["daemon_pid"]
        if not pid_alive(pid, r.facts.get("daemon_start")):
            stack = Path(r.facts.get("stack", ""))
            return (f"targets.{stack.name.rsplit('-', 2)[0]}: nbdkit (pid {pid}) serving the modelled device "
                    f"died mid-run{last_line(stack / 'nbdkit.log')}")
    return None
