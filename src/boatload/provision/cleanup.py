"""Undo what killed runs left behind: mounts, loop devices, images, memory
limits' cgroups and swap files under one scratch directory.

It builds on both boatload.provision.targets (mounts, loop devices, images) and
boatload.provision.memlimit (cgroups, swap), which do not import it: `boatload cleanup`
and `make clean-mounts` call it.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

from boatload.provision.devmodel import leftovers as devmodel_leftovers
from boatload.provision.hostops import (
    DIR_RE, IMAGE_RE, MOUNT_RE, is_root, loop_devices, mount_at, mountinfo, not_installed, own_private_dir, rmdir_if_empty,
    run, shm_dir, why,
)
from boatload.provision.ledger import Ledger, pid_alive
from boatload.provision.memlimit import Leftovers, find_leftovers
from boatload.base.signals import deferred_signals
from boatload.provision.targets import handover, loop_write_cache, restore_write_cache, unmount
from boatload.base.targetspec import WRITE_CACHE, NeedsRoot, TargetError
from boatload.base.tools import find as find_tool


def cleanup(scratch: Path, force: bool = False, only_pid: int | None = None) -> list[str]:
    """Undo what killed runs left under `scratch`; one human line per action.

    Finds leftovers in the ledger (not released, and the creating process is
    gone) and by scanning /proc/self/mountinfo (mount points in
    `<scratch>/mnt/`), `losetup` (loop devices backed by files in
    `<scratch>/images/` or in this scratch's `/dev/shm/boatload-<hash>/`) and
    the scratch directory itself (our image files, mount points and
    directories whose pid, in their name, is gone). Memory limits' cgroups and
    swap files are found and undone first (see boatload.provision.memlimit), since
    processes left in a cgroup may hold a mount busy. A loop device whose write
    cache we changed gets its old setting back before it is detached. With
    `force=True` live processes' resources go too. Never touches anything
    outside the scratch directory except our cgroups and log images. Raises
    NeedsRoot if mounts, loop devices, cgroups or swap need undoing and we are
    not root (before doing anything), and TargetError (with `.done`, the lines
    of what did succeed) if some step failed. `only_pid`: undo just what that
    (exited) process made, e.g. a `boatload target up` (its memory limits are none).
    """
    scratch = Path(scratch).resolve()
    mnt_dir, img_dir, dirs_dir = scratch / "mnt", scratch / "images", scratch / "dirs"
    shm = shm_dir(scratch)
    shm_ours = own_private_dir(shm)
    # a /dev/shm directory of that name that is not our private one: touch nothing in it
    shm_foreign = os.path.lexists(shm) and not shm_ours
    image_dirs = (img_dir,) if shm_foreign else (img_dir, shm)
    ledger = Ledger(scratch)
    resources = {rid: r for rid, r in ledger.resources().items() if not r.released}

    def dead(pid, start=None) -> bool:
        if only_pid is not None:
            return pid == only_pid
        return force or not pid_alive(pid, start)

    # pid start times the ledger knows, by path (for the scan)
    starts = {}
    for r in ledger.resources().values():
        starts.setdefault(r.path, (r.pid, r.pid_start))

    def dead_by_name(name: str, regex, path: str) -> bool:
        if only_pid is not None:
            m = regex.match(name)
            return bool(m) and int(m["pid"]) == only_pid
        if force:
            return True
        m = regex.match(name)
        if not m:
            return False  # not our naming: only with force
        pid = int(m["pid"])
        lpid, lstart = starts.get(path, (None, None))
        return not pid_alive(pid, lstart if lpid == pid else None)

    mounts: dict[str, list[str]] = {}  # mount point -> ledger ids
    images: dict[str, list[str]] = {}  # image path -> ledger ids (loop ids included)
    mountdirs: dict[str, list[str]] = {}
    dirs: dict[str, list[str]] = {}
    inodes: dict[str, tuple[int, int]] = {}
    live: set[str] = set()

    write_caches: dict[str, str] = {}  # image backing a loop device -> write cache to put back
    for rid, r in resources.items():
        p = Path(r.path)
        expected = {"image": image_dirs, "loop": image_dirs, "mount": (mnt_dir,), "dir": (dirs_dir,)}.get(r.kind)
        if expected is None or p.parent not in expected:
            continue  # another kind (memlimit's), or not under this scratch directory: never ours to touch
        if not dead(r.pid, r.pid_start):
            live.add(r.path)
            continue
        if r.kind in ("image", "loop"):
            images.setdefault(r.path, []).append(rid)
            if r.kind == "loop" and r.facts.get("write_cache_before") in WRITE_CACHE:
                write_caches[r.path] = r.facts["write_cache_before"]
        elif r.kind == "mount":
            mounts.setdefault(r.path, []).append(rid)
            mountdirs.setdefault(r.path, []).append(rid)
        else:
            dirs.setdefault(r.path, []).append(rid)
        if isinstance(r.facts.get("inode"), int) and isinstance(r.facts.get("dev"), int):
            inodes[r.path] = (r.facts["inode"], r.facts["dev"])

    # the scan: what exists, whatever the ledger says
    for e in mountinfo():
        p = Path(e.mount_point)
        if p.parent == mnt_dir and e.mount_point not in live and dead_by_name(p.name, MOUNT_RE, e.mount_point):
            mounts.setdefault(e.mount_point, [])
            mountdirs.setdefault(e.mount_point, [])
    losetup = find_tool("losetup")
    loops = {}  # device -> image
    for d in loop_devices(losetup):
        back = d["back-file"]
        if not back or Path(back).parent not in image_dirs or back in live:
            continue
        if back in images or dead_by_name(Path(back).name, IMAGE_RE, back):
            loops[d["name"]] = back
            images.setdefault(back, [])
    scans = [(img_dir, IMAGE_RE, images), (mnt_dir, MOUNT_RE, mountdirs), (dirs_dir, DIR_RE, dirs)]
    if shm_ours:
        scans.append((shm, IMAGE_RE, images))
    for sub, regex, table in scans:
        try:
            names = sorted(os.listdir(sub))
        except OSError:
            continue
        for n in names:
            p = str(sub / n)
            if p not in live and p not in table and regex.match(n) and dead_by_name(n, regex, p):
                table.setdefault(p, [])

    mem = find_leftovers(scratch, ledger, force) if only_pid is None else Leftovers(ledger)
    mounted = [mp for mp in mounts if mount_at(mp) is not None]
    privileged = mem.privileged() + devmodel_leftovers.privileged(scratch, force, only_pid)
    if (mounted or loops or privileged) and not is_root():
        what = f"{len(mounted)} mount(s) and {len(loops)} loop device(s)"
        if privileged:
            what = f"{len(mounted)} mount(s), {len(loops)} loop device(s) and " + " and ".join(privileged)
        raise NeedsRoot(f"cleanup of {what} under {scratch} needs root (running as uid {os.geteuid()})")

    done: list[str] = []
    failed: list[str] = []
    umount = find_tool("umount")

    with deferred_signals():
        # 0. memory limits: kill what is left in our cgroups, remove them, swapoff, delete swap files
        mem_done, mem_failed = mem.undo()
        done += mem_done
        failed += mem_failed
        # 1. unmount (deepest first)
        for mp in sorted(mounted, key=lambda s: -s.count("/")):
            e = mount_at(mp)
            try:
                if umount is None:
                    raise TargetError(not_installed("umount"))
                how = unmount(Path(mp), umount)
                if how:
                    done.append(f"{how} {mp} ({e.fstype} from {e.source})" if e else f"{how} {mp}")
            except TargetError as err:
                failed.append(f"unmount {mp}: {err}")
        # 1b. what the config handed over: a user's device (write cache, our file system), a run's
        # directory under a mount target
        handed_done, handed_failed = handover.undo(ledger, resources, dead, scratch)
        done += handed_done
        failed += handed_failed
        # 1c. modelled devices' stacks (loop on FUSE, nbdfuse, nbdkit), under the file systems just unmounted
        nbd_done, nbd_failed = devmodel_leftovers.undo(scratch, force, only_pid)
        done += nbd_done
        failed += nbd_failed
        # 2. detach loop devices backed by our images
        current = {d["name"]: d["back-file"] for d in loop_devices(losetup)}
        for dev, back in loops.items():
            if current.get(dev) != back:
                continue
            # the kernel keeps a loop device's write cache setting after detaching: put
            # back what the ledger says we found, or else the loop driver's default
            wc, now = write_caches.get(back), loop_write_cache(dev)
            if wc is None and now == "write through":
                wc = "write back"
            if wc is not None and now != wc:
                try:
                    restore_write_cache(dev, Path(back), wc)
                    done.append(f"set the write cache of {dev} back to {wc!r}")
                except OSError as err:
                    failed.append(f"write cache of {dev}: {err.strerror}")
            r = run([losetup, "-d", dev], timeout=120)
            if r.returncode == 0:
                done.append(f"detached loop device {dev} (backed by {back})")
            else:
                failed.append(f"detach {dev}: {why(r)}")
        # 3. delete image files
        for img in images:
            try:
                st = os.lstat(img)
            except FileNotFoundError:
                continue
            want = inodes.get(img)
            if not stat.S_ISREG(st.st_mode) or (want and (st.st_ino, st.st_dev) != want):
                print(f"boatload: cleanup: {img} is not the file boatload created; leaving it", file=sys.stderr)
                continue
            try:
                os.unlink(img)
                done.append(f"deleted image {img} ({st.st_size // (1024 * 1024)} MB)")
            except OSError as err:
                failed.append(f"delete {img}: {err.strerror}")
        if shm_ours and not any(Path(p).parent == shm for p in live) and not os.listdir(shm):
            try:
                if rmdir_if_empty(shm):
                    done.append(f"removed {shm}")
            except OSError as err:
                failed.append(f"remove {shm}: {err.strerror}")
        # 4. remove (empty, unmounted) mount points
        for mp in mountdirs:
            if mount_at(mp) is not None:
                continue
            try:
                if stat.S_ISDIR(os.lstat(mp).st_mode):
                    os.rmdir(mp)
                    done.append(f"removed mount point {mp}")
            except FileNotFoundError:
                pass
            except OSError as err:
                failed.append(f"remove mount point {mp}: {err.strerror}")
        # 5. remove plain directories
        for d in dirs:
            try:
                if stat.S_ISDIR(os.lstat(d).st_mode):
                    shutil.rmtree(d)
                    done.append(f"removed directory {d}")
            except FileNotFoundError:
                pass
            except OSError as err:
                failed.append(f"remove {d}: {err.strerror}")

        # 6. mark ledger entries whose resource is gone as released
        if resources:
            backed = {d["back-file"] for d in loop_devices(losetup)}
            for rid, r in resources.items():
                if r.path in live or not dead(r.pid, r.pid_start):
                    continue
                if r.kind not in ("image", "loop", "mount", "dir"):
                    continue  # memlimit's kinds: released by mem.undo()
                if Path(r.path).parent not in (*image_dirs, mnt_dir, dirs_dir):
                    continue
                if r.kind == "image":
                    gone = not os.path.lexists(r.path)
                elif r.kind == "loop":
                    gone = r.path not in backed
                elif r.kind == "mount":
                    gone = mount_at(r.path) is None and not os.path.lexists(r.path)
                else:
                    gone = not os.path.lexists(r.path)
                if gone:
                    ledger.release(rid, by="cleanup")

    if failed:
        err = TargetError(f"cleanup of {scratch}: {len(failed)} step(s) failed: " + "; ".join(failed))
        err.done = done
        raise err
    return done
