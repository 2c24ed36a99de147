"""The paper on a run whose targets include the user's own hardware: the
targets appendix and the threats section name the device (its sysfs facts)
and the mounted file system, and do not call them loop images."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from boatload.publish import paper
from boatload.publish.provenance import placed_on
from notebook_checks import pdf_text

REPO = Path(__file__).resolve().parents[1]

DEVICE = {"name": "sdb", "identity": "ata-WDC_WD40EFRX-68N32N0_WD-XXXX", "model": "WDC WD40EFRX-68N", "vendor": "ATA",
          "firmware_rev": "0A82", "serial_hash": "sha256:0123456789ab", "size_bytes": 4000787030016,
          "logical_block_size": 512, "physical_block_size": 4096, "rotational": True, "scheduler": "mq-deadline",
          "queue_depth": 32, "nr_requests": 64, "write_cache": "write back", "discard": False, "backing_file": None}


def test_targets_and_threats_name_the_users_hardware(forest_fixture_run, tmp_path):
    results = tmp_path / "results"
    shutil.copytree(forest_fixture_run["results"], results)
    prov = json.loads((results / "provenance.json").read_text())
    prov["targets"] += [
        {"name": "mydisk", "kind": "device", "fs": "xfs", "size_mb": None, "mkfs": ["mkfs.xfs", "-f", "/dev/sdb"],
         "mount_options": "rw,relatime", "backing_fs": "ext2/ext3", "substituted": None, "hardware": DEVICE,
         "log_hardware": None, "on": placed_on("device", {"device": DEVICE})},
        {"name": "srv", "kind": "mount", "fs": "mount", "size_mb": None, "mkfs": [], "mount_options": "rw",
         "backing_fs": "ext2/ext3", "substituted": None, "hardware": None, "log_hardware": None,
         "on": placed_on("mount", {"kernel_fs": "ext4", "mount_source": "/dev/sdc1", "mount_path": "/srv/scratch"})},
    ]
    (results / "provenance.json").write_text(json.dumps(prov))
    text = " ".join(pdf_text(paper.build_paper(REPO, tmp_path / "paper.pdf", results)).split())
    assert "The user’s own hardware." in text or "The user's own hardware." in text
    assert "2 of the 4 targets are file systems on hardware named in the config, not loop images" in text
    assert "mydisk: device WDC WD40EFRX-68N, 3,815,448 MiB, rotational, write cache write back" in text
    assert "srv: mounted ext4 from /dev/sdc1 at /srv/scratch" in text
    # the appendix: firmware, scheduler, queue depth, discard; the serial only as its hash
    assert "ATA 0A82 scheduler mq-deadline, queue depth 32, discard false, serial sha256:0123456789ab" in text
    assert "WD-XXXX" not in text
