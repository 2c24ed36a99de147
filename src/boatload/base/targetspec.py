"""A target as the config names it: its kinds, file systems, sizes and options,
checked field by field (`parse_target`), and the errors provisioning raises.
It imports nothing of boatload, so every layer may use it."""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path


class TargetError(Exception):
    """A bad target spec, a missing tool, or provisioning/teardown that failed.

    The message is one line and names the config field when there is one."""


class NeedsRoot(TargetError):
    """The target (or the cleanup) needs root and we are not root."""


# --------------------------------------------------------------------------
# specs

KINDS = ("tmpfs", "loop", "device", "mount", "dir")
LOOP_FS = ("ext2", "ext3", "ext4", "xfs", "btrfs")
FS_BY_KIND = {"tmpfs": ("tmpfs",), "loop": LOOP_FS, "device": LOOP_FS, "mount": ("mount",), "dir": ("dir",)}
FILESYSTEMS = ("tmpfs", *LOOP_FS, "mount", "dir")
FIELDS = ("kind", "fs", "size_mb", "mkfs_options", "mount_options", "write_cache", "log", "device", "wipe", "path",
          "model", "faults")
# faults: nbdkit's error filter on a modelled loop target (boatload.provision.devmodel.stack)
FAULT_FIELDS = ("read_rate", "write_rate", "trigger", "error")
FAULT_ERRORS = ("EIO", "ENOSPC", "EPERM", "ENOMEM", "ESHUTDOWN")
# the kinds that make a file system (mkfs) and the fields only some kinds take
FORMATTED = ("loop", "device")
SIZED = ("tmpfs", "loop")
# model: a loop target's disk, or the disk a tmpfs target's pages are swapped to
MODELLED = ("loop", "tmpfs")
SWAP_DISK_FS = "ext4"  # the file system holding a modelled tmpfs's swap files  # a device has its own size, a mount its own free space
WRITE_CACHE = ("write back", "write through")
LOG_FS = ("xfs", "ext4")  # file systems that take an external log / journal here
# external log sizes: mkfs.xfs (xfsprogs >= 5.19) wants at least 64 MB and at most
# 2038 MB (XFS_MAX_LOG_BYTES); an ext4 journal device at least 1024 4k blocks
MIN_LOG_MB = {"xfs": 64, "ext4": 8}
MAX_LOG_MB = {"xfs": 2038, "ext4": 100 * 1024}
EXT_JOURNAL_BLOCK_SIZE = "4096"  # data and journal device must have the same block size
SHM = Path("/dev/shm")
MiB = 1024 * 1024
DEFAULT_SIZE_MB = 1024
# smallest sizes the mkfs tools accept (xfsprogs >= 5.19 refuses < 300 MB)
MIN_SIZE_MB = {"tmpfs": 1, "ext2": 8, "ext3": 8, "ext4": 8, "xfs": 300, "btrfs": 128}
MAX_SIZE_MB = 16 * 1024 * 1024  # 16 TiB: anything above is a typo
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")

# mkfs command and the flags that make it non-interactive and quiet
MKFS = {
    "ext2": ("mkfs.ext2", ("-F", "-q")),
    "ext3": ("mkfs.ext3", ("-F", "-q")),
    "ext4": ("mkfs.ext4", ("-F", "-q")),
    "xfs": ("mkfs.xfs", ("-f", "-q")),
    "btrfs": ("mkfs.btrfs", ("-f", "-q")),
}
MKFS_VERSION_FLAG = {"mkfs.xfs": "-V", "mkfs.btrfs": "--version"}  # e2fsprogs: -V


@dataclass(frozen=True)
class TargetSpec:
    name: str  # config key, e.g. "ext4"
    kind: str  # "tmpfs" | "loop" | "device" | "mount" | "dir"
    fs: str  # "tmpfs", "ext2", "ext3", "ext4", "xfs", "btrfs", "mount" or "dir"
    size_mb: int | None = DEFAULT_SIZE_MB  # None for device and mount: theirs
    mkfs_options: tuple[str, ...] = ()
    mount_options: tuple[str, ...] = ()
    write_cache: str | None = None  # "write back" | "write through"; None: "write back"
    log_size_mb: int | None = None  # external log / journal on /dev/shm
    device: str | None = None  # kind device: the block device to format
    wipe: str | None = None  # its identity (boatload.provision.blockdev.identity): leave to erase what is on it
    log_device: str | None = None  # kind device: the external log / journal's device
    log_wipe: str | None = None
    path: str | None = None  # kind mount: the root of a mounted file system
    # kind loop: the device model (a preset name, or (("preset", ...), (field, value) ...)),
    # checked field by field by boatload.provision.devmodel.presets; the log's own model; faults
    model: str | tuple | None = None
    log_model: str | tuple | None = None
    faults: tuple | None = None

    def to_dict(self) -> dict:
        """Plain data (lists, not tuples); `parse_target(d["name"], d)` gives the spec back.

        `write_cache` and `log` appear only when set, so specs without them
        look as they always did."""
        d = {"name": self.name, "kind": self.kind, "fs": self.fs}
        if self.size_mb is not None:
            d["size_mb"] = self.size_mb
        d["mkfs_options"] = list(self.mkfs_options)
        d["mount_options"] = list(self.mount_options)
        for key in ("device", "wipe", "path", "write_cache"):
            if getattr(self, key) is not None:
                d[key] = getattr(self, key)
        if self.log_size_mb is not None:
            d["log"] = {"size_mb": self.log_size_mb}
        if self.log_device is not None:
            d["log"] = {"device": self.log_device, **({"wipe": self.log_wipe} if self.log_wipe is not None else {})}
        if self.log_model is not None:
            d["log"]["model"] = plain_model(self.log_model)
        if self.model is not None:
            d["model"] = plain_model(self.model)
        if self.faults is not None:
            d["faults"] = dict(self.faults)
        return d


def plain_model(model):
    """A model as the config gives it: a preset name or a mapping."""
    return model if isinstance(model, str) else dict(model)


def _model(where: str, model) -> str | tuple:
    """`model:` in a hashable form; its fields are checked by boatload.provision.devmodel.presets."""
    if isinstance(model, str):
        return model
    if isinstance(model, dict) and all(isinstance(k, str) for k in model):
        return tuple(sorted(model.items()))
    raise TargetError(f"{where}: expected a preset name or a mapping with 'preset', got {model!r}")


def _faults(where: str, faults, model) -> tuple:
    if model is None:
        raise TargetError(f"{where}: only a modelled target (with model:) takes faults")
    if not isinstance(faults, dict):
        raise TargetError(f"{where}: expected a mapping with {', '.join(FAULT_FIELDS)}, got {faults!r}")
    for key, value in faults.items():
        if key not in FAULT_FIELDS:
            raise TargetError(f"{where}.{key}: unknown field (expected one of {', '.join(FAULT_FIELDS)})")
        if key.endswith("_rate") and (isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1):
            raise TargetError(f"{where}.{key}: expected a number from 0 to 1, got {value!r}")
        if key == "trigger" and not isinstance(value, bool):
            raise TargetError(f"{where}.trigger: expected true or false, got {value!r}")
        if key == "error" and value not in FAULT_ERRORS:
            raise TargetError(f"{where}.error: expected one of {', '.join(FAULT_ERRORS)}, got {value!r}")
    if not faults.get("read_rate") and not faults.get("write_rate"):
        raise TargetError(f"{where}: read_rate or write_rate must be above 0")
    return tuple(sorted(faults.items()))


def _options(where: str, value, *, mount: bool) -> tuple[str, ...]:
    """A list of strings, or one string (shell-split for mkfs, comma-split for mount)."""
    if isinstance(value, str):
        try:
            items = [o for o in value.split(",")] if mount else shlex.split(value)
        except ValueError as e:
            raise TargetError(f"{where}: cannot split {value!r}: {e}") from None
        items = [o.strip() for o in items] if mount else items
        if mount:
            items = [o for o in items if o]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise TargetError(f"{where}: expected a list of strings, got {value!r}")
    for i, item in enumerate(items):
        if not isinstance(item, str) or not item:
            raise TargetError(f"{where}[{i}]: expected a non-empty string, got {item!r}")
        if "\0" in item or "\n" in item:
            raise TargetError(f"{where}[{i}]: control characters are not allowed, got {item!r}")
        if mount and item != item.strip():
            raise TargetError(f"{where}[{i}]: stray whitespace in mount option {item!r}")
    return tuple(items)


def parse_target(name: str, mapping: dict) -> TargetSpec:
    """Validate one `targets.<name>` entry of the config.

    `kind` may be left out when `fs` says it (tmpfs, dir, or a loop fs);
    `fs` may be left out for kinds tmpfs and dir. Errors name the field:
    "targets.ext4.size_mb: expected a positive integer, got -3".
    """
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise TargetError(
            f"targets.{name}: a target name is 1-64 letters, digits, '.', '_' or '-', "
            f"starting with a letter or digit; got {name!r}"
        )
    where = f"targets.{name}"
    if mapping is None:
        mapping = {}
    if not isinstance(mapping, dict):
        raise TargetError(f"{where}: expected a mapping with {', '.join(FIELDS)}; got {mapping!r}")
    for key in mapping:
        if key == "name":
            if mapping[key] != name:
                raise TargetError(f"{where}.name: does not match the key {name!r}, got {mapping[key]!r}")
            continue
        if key not in FIELDS:
            raise TargetError(f"{where}.{key}: unknown field (expected one of {', '.join(FIELDS)})")

    kind = mapping.get("kind")
    fs = mapping.get("fs")
    if kind is not None and kind not in KINDS:
        raise TargetError(f"{where}.kind: expected one of {', '.join(KINDS)}, got {kind!r}")
    if fs is not None and fs not in FILESYSTEMS:
        raise TargetError(f"{where}.fs: expected one of {', '.join(FILESYSTEMS)}, got {fs!r}")
    if kind is None and fs is None:
        raise TargetError(f"{where}.kind: missing (one of {', '.join(KINDS)}; or give fs)")
    if kind is None:
        kind = fs if fs in ("tmpfs", "dir") else "loop"
    if fs is None:
        if kind in FORMATTED:
            raise TargetError(f"{where}.fs: missing; a {kind} target needs one of {', '.join(LOOP_FS)}")
        fs = kind
    if fs not in FS_BY_KIND[kind]:
        raise TargetError(
            f"{where}.fs: kind {kind!r} takes {' or '.join(FS_BY_KIND[kind])}, got {fs!r}"
        )

    size_mb = _size(where, kind, fs, mapping)
    mkfs_options = _options(f"{where}.mkfs_options", mapping.get("mkfs_options", ()), mount=False)
    if mkfs_options and kind not in FORMATTED:
        raise TargetError(f"{where}.mkfs_options: not used by kind {kind!r} (only loop and device targets are formatted)")
    mount_options = _options(f"{where}.mount_options", mapping.get("mount_options", ()), mount=True)
    if mount_options and kind in ("dir", "mount"):
        raise TargetError(f"{where}.mount_options: not used by kind {kind!r} (boatload mounts nothing)")
    if kind == "tmpfs":
        for i, opt in enumerate(mount_options):
            if opt.split("=", 1)[0] == "size":
                raise TargetError(f"{where}.mount_options[{i}]: set the size with size_mb, not {opt!r}")

    write_cache = mapping.get("write_cache")
    if write_cache is not None:
        if write_cache not in WRITE_CACHE:
            raise TargetError(f"{where}.write_cache: expected \"write back\" or \"write through\", got {write_cache!r}")
        if kind not in FORMATTED:
            raise TargetError(f"{where}.write_cache: only loop and device targets have a write cache to set, not kind {kind!r}")

    device = _device_field(where, "device", mapping, kind == "device")
    wipe = _wipe_field(where, "wipe", mapping, kind)
    path = mapping.get("path")
    if kind == "mount":
        if not isinstance(path, str) or not path.startswith("/") or "\0" in path or "\n" in path:
            raise TargetError(f"{where}.path: expected the absolute path of a mounted file system, got {path!r}")
        path = os.path.normpath(path)
    elif path is not None:
        raise TargetError(f"{where}.path: only kind 'mount' takes a path, not kind {kind!r}")
    log_size_mb, log_device, log_wipe = _log(where, kind, fs, mapping.get("log"), mkfs_options)
    if log_device is not None and log_device == device:
        raise TargetError(f"{where}.log.device: the log must be on another device than {device}")
    model = mapping.get("model")
    if model is not None:
        if kind not in MODELLED:
            raise TargetError(f"{where}.model: only loop targets (their disk) and tmpfs targets (the disk they swap to) "
                              f"are modelled, not kind {kind!r}")
        model = _model(f"{where}.model", model)
    log = mapping.get("log")
    log_model = _model(f"{where}.log.model", log["model"]) if isinstance(log, dict) and log.get("model") is not None else None
    faults = _faults(f"{where}.faults", mapping["faults"], model) if mapping.get("faults") is not None else None
    return TargetSpec(name, kind, fs, size_mb, mkfs_options, mount_options, write_cache, log_size_mb,
                      device, wipe, log_device, log_wipe, path, model, log_model, faults)


def _size(where: str, kind: str, fs: str, mapping: dict) -> int | None:
    if kind not in SIZED and kind != "dir":
        if "size_mb" in mapping:
            raise TargetError(f"{where}.size_mb: not used by kind {kind!r} (its size is the {'device' if kind == 'device' else 'mount'}'s)")
        return None
    size_mb = mapping.get("size_mb", DEFAULT_SIZE_MB)
    if type(size_mb) is not int or size_mb <= 0:  # bool is not a size
        raise TargetError(f"{where}.size_mb: expected a positive integer, got {size_mb!r}")
    if kind == "dir":
        if size_mb != DEFAULT_SIZE_MB:
            raise TargetError(f"{where}.size_mb: not used by kind 'dir' (a plain directory has no size)")
        return size_mb
    if size_mb < MIN_SIZE_MB[fs]:
        raise TargetError(f"{where}.size_mb: {fs} needs at least {MIN_SIZE_MB[fs]} MB, got {size_mb}")
    if size_mb > MAX_SIZE_MB:
        raise TargetError(f"{where}.size_mb: at most {MAX_SIZE_MB} MB (16 TiB), got {size_mb}")
    return size_mb


def _device_field(where: str, key: str, mapping: dict, wanted: bool) -> str | None:
    """`device`: an absolute path under /dev (the guard checks the rest)."""
    value = mapping.get(key)
    if value is None:
        if wanted:
            raise TargetError(f"{where}.{key}: missing (the block device to format, e.g. /dev/sdb)")
        return None
    if not wanted:
        raise TargetError(f"{where}.{key}: only kind 'device' takes a device")
    if not isinstance(value, str) or not value.startswith("/dev/") or "\0" in value or "\n" in value:
        raise TargetError(f"{where}.{key}: expected a block device under /dev, got {value!r}")
    return value


def _wipe_field(where: str, key: str, mapping: dict, kind: str) -> str | None:
    value = mapping.get(key)
    if value is None:
        return None
    if kind != "device":
        raise TargetError(f"{where}.{key}: only kind 'device' takes wipe")
    if not isinstance(value, str) or not value.strip() or "\n" in value:
        raise TargetError(f"{where}.{key}: expected the device's identity as `boatload devices` prints it, got {value!r}")
    return value


def _log(where: str, kind: str, fs: str, log, mkfs_options) -> tuple[int | None, str | None, str | None]:
    """`log: {size_mb: N}` (loop: an image in /dev/shm) or `log: {device, wipe}` (device)."""
    if log is None:
        return None, None, None
    keys = ("device", "wipe") if kind == "device" else ("size_mb", "model")
    if not isinstance(log, dict):
        raise TargetError(f"{where}.log: expected a mapping {{{', '.join(f'{k}: ...' for k in keys) if kind == 'device' else 'size_mb: N'}}}, got {log!r}")
    for key in log:
        if key not in keys:
            raise TargetError(f"{where}.log.{key}: unknown field (expected {' or '.join(keys)})")
    if kind not in FORMATTED or fs not in LOG_FS:
        raise TargetError(
            f"{where}.log: an external log is supported for loop and device targets of fs {' or '.join(LOG_FS)}, "
            f"not {kind} {fs}"
        )
    if fs == "ext4":
        bs = option_value(mkfs_options, "-b")
        if bs is not None and bs != EXT_JOURNAL_BLOCK_SIZE:
            raise TargetError(
                f"{where}.mkfs_options: with an external journal the block size is {EXT_JOURNAL_BLOCK_SIZE} "
                f"(the journal device's), got -b {bs}"
            )
    if kind == "device":
        return None, _device_field(f"{where}.log", "device", log, True), _wipe_field(f"{where}.log", "wipe", log, kind)
    if "size_mb" not in log:
        raise TargetError(f"{where}.log.size_mb: missing (the size of the log image in MB)")
    log_size_mb = log["size_mb"]
    if type(log_size_mb) is not int or log_size_mb <= 0:
        raise TargetError(f"{where}.log.size_mb: expected a positive integer, got {log_size_mb!r}")
    if not MIN_LOG_MB[fs] <= log_size_mb <= MAX_LOG_MB[fs]:
        raise TargetError(
            f"{where}.log.size_mb: an external {fs} log takes {MIN_LOG_MB[fs]} to {MAX_LOG_MB[fs]} MB, got {log_size_mb}"
        )
    return log_size_mb, None, None


def option_value(options: tuple[str, ...], flag: str) -> str | None:
    """The value of a short option in an argv-like tuple ("-b 4096" or "-b4096"); the last one wins."""
    value = None
    for i, o in enumerate(options):
        if o == flag and i + 1 < len(options):
            value = options[i + 1]
        elif o.startswith(flag) and len(o) > len(flag) and not o.startswith("--"):
            value = o[len(flag):]
    return value


def needs_root(spec: TargetSpec) -> bool:
    """tmpfs, loop and device targets mount things; "dir" and "mount" work without root."""
    return spec.kind in ("tmpfs", "loop", "device")


def validated(spec: TargetSpec) -> TargetSpec:
    if not isinstance(spec, TargetSpec):
        raise TargetError(f"provision: expected a TargetSpec, got {type(spec).__name__}")
    d = spec.to_dict()
    return parse_target(d.pop("name"), d)
