"""Facts about the machine, the environment and the worker, for provenance."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import socket
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

from boatload import __version__
from boatload.base.paths import repo_root, worker_binary


def hostname() -> str:
    return socket.gethostname().split(".")[0] or "localhost"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def virtualization() -> str | None:
    """The hypervisor this host runs under ("kvm", ...; "yes" when the CPU
    says there is one but not which), or None on bare metal. A container's
    runtime is not what is meant: its disks and CPUs are the host's."""
    try:
        flags = next((line for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("flags")), "")
    except OSError:
        flags = ""
    if " hypervisor" not in flags:
        return None
    try:
        out = subprocess.run(["systemd-detect-virt", "--vm"], capture_output=True, text=True, timeout=5)
        name = out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        name = ""
    return name if name and name != "none" else "yes"


def memory_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("MemTotal not found in /proc/meminfo")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fs_type(path: Path) -> str:
    """The kernel's name for the file system holding `path` (ext4, tmpfs, ...)."""
    out = subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


@lru_cache(maxsize=None)
def worker_info(binary: str | None = None) -> dict:
    """Version and build flags the worker reports, plus the hash of its binary."""
    path = Path(binary) if binary else worker_binary()
    if not path.is_file():
        raise FileNotFoundError(f"worker binary not found at {path}: run 'make -C native'")
    version = subprocess.run([str(path), "--version"], capture_output=True, text=True, check=True)
    return {"path": str(path), "version": version.stdout.strip().split()[-1], "sha256": sha256_file(path)}


def lock_sha256() -> str | None:
    lock = repo_root() / "uv.lock"
    return sha256_file(lock) if lock.is_file() else None


def machine() -> dict:
    """Everything about this host that a result depends on."""
    return {
        "host": hostname(),
        "kernel": platform.release(),
        "os": _os_release(),
        "cpu_model": cpu_model(),
        "cpus": os.cpu_count(),
        "memory_bytes": memory_bytes(),
        "python": sys.version.split()[0],
        "boatload": __version__,
        "lock_sha256": lock_sha256(),
        "uid": os.geteuid(),
        "virtualization": virtualization(),
    }


def _os_release() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return json.loads(line.split("=", 1)[1]) if line.split("=", 1)[1].startswith('"') else line.split("=", 1)[1]
    except OSError:
        pass
    return platform.platform()
