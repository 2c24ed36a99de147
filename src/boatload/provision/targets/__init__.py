"""Targets: the file systems under test, provisioned for one run and torn down.

A target is a named spec in the config (`targets: {ext4: {kind: loop, fs: ext4,
size_mb: 1024, mkfs_options: [...], mount_options: [...]}}`, checked by
boatload.base.targetspec), provisioned by the module of its kind:

* "tmpfs" (boatload.provision.targets.tmpfs): a fresh tmpfs
* "loop"  (boatload.provision.targets.loop): an image of ours on a loop device, mkfs, mount
* "device" (boatload.provision.targets.device): a block device of the user's behind the
  guard (boatload.provision.targets.guard), mkfs, mount
* "mount" (boatload.provision.targets.mount): a mounted file system of the user's, never
  formatted: a fresh `boatload-<run id>` directory in it, removed after
* "dir"   (boatload.provision.targets.standin): a plain directory standing in, no root needed

`provision(spec, scratch)` is a context manager yielding a `Provisioned`
(the directory to run in, plus provenance). Teardown (one `Teardown` stack,
steps from boatload.provision.targets.teardown) runs in reverse order on success,
exception, KeyboardInterrupt and SIGTERM/SIGHUP, and one failing step does
not skip the others.

Safety: every resource is recorded in `<scratch>/ledger.jsonl` before it is
created (see boatload.provision.ledger); only what we created is touched.
`boatload.provision.cleanup.cleanup(scratch)` undoes leftovers of killed runs.

Sizes are in MiB (`size_mb: 1024` is a 1 GiB image / tmpfs).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from boatload.provision.hostops import Teardown, is_root, plain_dir, resolve_tools, subdir
from boatload.provision.ledger import Ledger
from boatload.base.signals import deferred_signals, signals_as_exceptions
from boatload.provision.targets import device, guard, loop, modelled, mount, standin, tmpfs
from boatload.provision.targets.base import Provisioned, base_provenance
from boatload.provision.targets.loop import set_loop_direct_io
from boatload.provision.targets.teardown import unmount
from boatload.provision.targets.writecache import loop_write_cache, restore_write_cache
from boatload.base.targetspec import NeedsRoot, TargetError, TargetSpec, needs_root, validated

__all__ = [
    "Provisioned", "TargetError", "provision", "refusals", "set_loop_direct_io", "unmount", "loop_write_cache",
    "restore_write_cache",
]

# kind -> (module that sets it up, the scratch subdirectories it uses)
KINDS = {
    "tmpfs": (tmpfs, ("mnt", "images")),
    "loop": (loop, ("images", "mnt")),
    "device": (device, ("mnt",)),
    "mount": (mount, ()),
    "dir": (standin, ("dirs",)),
}


def needs_root_message(spec: TargetSpec) -> str:
    uid = os.geteuid()
    if spec.kind == "tmpfs":
        return f"tmpfs target '{spec.name}' needs root to mount (running as uid {uid})"
    if spec.kind == "device":
        return guard.needs_root_message(spec, uid)
    return (
        f"{spec.kind} target '{spec.name}' ({spec.fs}) needs root to attach a loop device and mount "
        f"(running as uid {uid}); kind 'dir' runs without root"
    )


def refusals(spec: TargetSpec, scratch: Path | None, euid: int | None = None) -> list[str]:
    """Every reason the user's own hardware named by `spec` may not be used: a
    device target's guard, a mount target's checks, a modelled target's models
    and FUSE; none for the other kinds."""
    return guard.refusals(spec, scratch, euid=euid) + mount.refusals(spec, scratch) + modelled.refusals(spec)


@contextmanager
def provision(spec: TargetSpec, scratch: Path) -> Iterator[Provisioned]:
    """Create the target, yield it, tear it down whatever happens.

    Nothing is touched before the checks pass: spec valid, root if needed
    (else NeedsRoot), tools installed (else TargetError naming the Debian
    package). While the block runs, SIGTERM and SIGHUP raise
    boatload.base.signals.Terminated if they would otherwise kill the process, so
    teardown runs; signals arriving while a resource is being created or torn
    down are held until that step is done.
    """
    checked = validated(spec)
    if needs_root(checked) and not is_root():
        raise NeedsRoot(needs_root_message(checked))
    tools = resolve_tools(checked)
    scratch = Path(scratch).resolve()
    kind, subdirs = KINDS[checked.kind]

    with signals_as_exceptions(only_if_default=True), Teardown(f"target '{checked.name}'") as undo:
        with deferred_signals():
            plain_dir(scratch)
            for sub in subdirs:
                subdir(scratch, sub)
            ledger = Ledger(scratch)
        prov = base_provenance(checked, scratch)
        path = kind.setup(checked, scratch, ledger, undo, prov, tools)
        try:
            yield Provisioned(spec=spec, path=path, provenance=prov)
        except Exception:
            if checked.model or checked.log_model:
                dead = modelled.failure(scratch)  # the device died under the run: say that, in one line
                if dead:
                    raise modelled.DeviceDied(dead) from None
            raise
