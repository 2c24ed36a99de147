"""The device model's native parts: the nbdkit filter and devmodel-calc,
which says what a model's parameters give (one implementation of the model,
in native/devmodel/model.c)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from boatload.base.paths import repo_root
from boatload.base.targetspec import TargetError


def build_dir() -> Path:
    """$BOATLOAD_DEVMODEL_DIR (set by Nix), else the local build of native/."""
    env = os.environ.get("BOATLOAD_DEVMODEL_DIR")
    return Path(env) if env else repo_root() / "native" / "build"


def filter_path() -> Path:
    return build_dir() / "devmodel.so"


def calc_path() -> Path:
    return build_dir() / "devmodel-calc"


def require_built() -> None:
    for p in (filter_path(), calc_path()):
        if not p.is_file():
            raise TargetError(f"device model: {p} is not built (run `make worker`, which builds native/ with the filter)")


def param_args(params: dict) -> list[str]:
    """KEY=VALUE for every model parameter (the C names)."""
    return [f"{k}={v}" for k, v in params.items()]


def calc(params: dict, size: int, *command: str) -> str:
    """Run devmodel-calc; its one-line refusal becomes a ValueError."""
    require_built()
    r = subprocess.run(
        [str(calc_path()), *param_args(params), f"size={size}", *command],
        capture_output=True, text=True, timeout=60,
    )
    if r.returncode != 0:
        raise ValueError(r.stderr.strip().removeprefix("devmodel-calc: "))
    return r.stdout.strip()


def expect_random_read_us(params: dict, size: int, span: float = 1.0, length: int = 4096) -> float:
    """Mean service time of random reads of `length` bytes over the first `span` of the device."""
    return float(calc(params, size, "random-read", repr(span), str(length)))


def expect_seq_read_mbps(params: dict, size: int, offset: int = 0, length: int = 1 << 20) -> float:
    return float(calc(params, size, "seq-read", str(offset), str(length)))


def expect_writeout_us(params: dict, size: int, length: int, offsets: list[int], rot: str = "none") -> float:
    """How long a flush takes after writes of `length` bytes at `offsets`;
    rot "none" gives the least the model can take, "full" the most."""
    return float(calc({**params, "rot": rot}, size, "writeout", str(length), *map(str, offsets)))
