"""One provenance document for the paper, gathered from the raw runs."""

from __future__ import annotations

import json
import os
from pathlib import Path


def _steal_only(attempt: dict) -> bool:
    """A redone attempt whose disturbed phases were disturbed by the hypervisor's steal alone."""
    return all(p.get("disturbed_by") == ["steal"] for p in attempt["interference"] if p.get("disturbed"))


def conditions(docs: list[dict]) -> dict:
    """Per study: how quiet its measured phases were, what was redone, and its cache state
    (the study module's CACHE: ours and the original's)."""
    from boatload.studies import registry

    out = {}
    for name in sorted({d["study"] for d in docs}):
        runs = [d for d in docs if d["study"] == name]
        records = [d["interference"] for d in runs if d.get("interference")]
        phases = [p for r in records for p in r["phases"] if p.get("measured", True)]
        seconds = sum(p["seconds"] for p in phases)
        ours = sum(p["cpu_s"]["orchestrator"] + p["cpu_s"]["monitor"] for p in phases)
        competing = [p["competing_cpu_s"] / p["seconds"] for p in phases if p["seconds"] >= 0.1]
        timed = [p for p in phases if "run_delay_s" in p]
        waited = sum(p["run_delay_s"] for p in timed)
        timed_s = sum(p["seconds"] for p in timed)
        # run delay is summed over the measured threads: per thread it is a share of the phase a reader can read
        per_thread = [p for p in timed if p.get("threads")]
        thread_s = sum(p["seconds"] * p["threads"] for p in per_thread)
        cache = registry()[name].cache if name in registry() else None
        out[name] = {
            "runs": len(runs),
            "runs_with_record": len(records),
            "measured_phases": len(phases),
            "phase_seconds": seconds,
            "redone_runs": sum(1 for r in records if r["redone"]),
            # of those, the runs measured again only because the hypervisor gave the CPU to other guests
            "redone_for_steal": sum(1 for r in records if r["redone"] and all(_steal_only(a) for a in r["redone"])),
            # the machine's CPU time the hypervisor gave other guests: over the phases, and in the worst one
            "steal_share": (sum((p.get("steal_share") or 0.0) * p["seconds"] for p in phases) / seconds
                            if seconds else None),
            "steal_max": max((p["steal_share"] for p in phases if p.get("steal_share") is not None
                              and p["seconds"] >= 0.1), default=None),
            "redone_attempts": sum(len(r["redone"]) for r in records),
            "still_disturbed": sum(1 for r in records if r["disturbed"]),
            "constant_runs": sum(1 for r in records if r.get("disturbance") == "constant"),
            # the measured threads' waiting for a CPU (run delay, summed over threads), share of the phases' time
            "waiting_share": waited / timed_s if timed_s else None,
            "waiting_max": max((p["run_delay_s"] / p["seconds"] for p in timed if p["seconds"] >= 0.1), default=None),
            "waiting_per_thread": sum(p["run_delay_s"] for p in per_thread) / thread_s if thread_s else None,
            "waiting_per_thread_max": max((p["run_delay_s"] / (p["seconds"] * p["threads"])
                                           for p in per_thread if p["seconds"] >= 0.1), default=None),
            "max_run_delay": records[0]["settings"].get("max_run_delay") if records else None,
            "before_s": records[0]["settings"].get("before_s") if records else None,
            "shielded_runs": sum(1 for r in records if (r.get("shield") or {}).get("cgroup")),
            "max_other_cpu": records[0]["settings"]["max_other_cpu"] if records else None,
            "ours_share": ours / seconds if seconds else None,
            "competing_max": max(competing, default=None),
            "cache": cache,
        }
    return out


def hardware_words(facts: dict | None) -> str | None:
    """"QEMU HARDDISK, 256 MiB, rotational, write cache write back, 512/4096-byte blocks"."""
    if not facts:
        return None
    words = [facts.get("model") or ("loop device on " + facts["backing_file"] if facts.get("backing_file") else "disk")]
    words.append(f"{facts.get('size_bytes', 0) / 2**20:,.0f} MiB")
    if facts.get("rotational") is not None:
        words.append("rotational" if facts["rotational"] else "non-rotational")
    if facts.get("write_cache"):
        words.append(f"write cache {facts['write_cache']}")
    if facts.get("logical_block_size"):
        words.append(f"{facts['logical_block_size']}/{facts.get('physical_block_size')}-byte blocks")
    return ", ".join(words)


def placed_on(kind: str, p: dict) -> str | None:
    """What the target's file system sat on, in words (for the targets tables and the threats section)."""
    if kind == "device":
        log = hardware_words(p.get("log_device_facts"))
        return f"device {hardware_words(p.get('device'))}" + (f"; log on {log}" if log else "")
    if kind == "mount":
        return f"mounted {p.get('kernel_fs')} from {p.get('mount_source')} at {p.get('mount_path')}"
    if kind == "loop":
        return f"loop image on the host's {p.get('backing_fs_mount') or p.get('backing_fs')}"
    return None


def gather(raw: list[Path], config_path: str, scale: str, order_seed: int | None = None) -> dict:
    docs = [json.loads(Path(p).read_text()) for p in sorted(map(str, raw))]
    if not docs:
        raise ValueError("provenance: no raw results to gather from")
    machine, worker = docs[0]["machine"], docs[0]["worker"]
    build = (docs[0]["result"].get("worker_result") or {}).get("worker", {})
    for doc in docs:
        if doc["worker"].get("sha256") != worker.get("sha256"):
            raise ValueError(f"provenance: runs were made with different worker builds ({doc['job']})")
    targets = {}
    for doc in docs:
        t, p = doc["target"], doc.get("target_provenance") or {}
        targets[doc["job"]["target"]["name"]] = {
            "name": doc["job"]["target"]["name"],
            "kind": t["kind"],
            "fs": t["fs"],
            "size_mb": t.get("size_mb"),
            "mkfs": [os.path.basename(a) if i == 0 else a for i, a in enumerate(p.get("mkfs_command") or [])],
            "mount_options": ",".join(p.get("mount_options") or []),
            "backing_fs": p.get("backing_fs_mount") or p.get("backing_fs"),
            "substituted": t.get("substituted"),
            # the user's own hardware: a device's sysfs facts (serial only hashed), a mount's source
            "hardware": p.get("device"),
            "log_hardware": p.get("log_device_facts"),
            "on": placed_on(t["kind"], p),
        }
    for doc in docs:
        build = build or (doc["result"].get("worker_result") or {}).get("worker", {})
    return {
        "host": machine["host"],
        "kernel": machine["kernel"],
        "os": machine.get("os"),
        "cpu_model": machine["cpu_model"],
        "cpus": machine["cpus"],
        # the hypervisor ("kvm", ...), None on bare metal, absent in runs made before it was recorded
        "virtualization": machine.get("virtualization", "not recorded"),
        "memory_bytes": machine["memory_bytes"],
        "uid": machine.get("uid"),
        "python": machine["python"],
        "lock_sha256": machine["lock_sha256"],
        "worker": {"version": worker["version"], "sha256": worker["sha256"], "cc": build.get("cc"), "cflags": build.get("cflags")},
        "targets": [targets[k] for k in sorted(targets)],
        "config": config_path,
        "scale": scale,
        "runs": len(docs),
        # The measurements ran in random.Random(order_seed).shuffle(sorted(jobs)) order.
        "order_seed": order_seed,
        "conditions": conditions(docs),
    }
