"""Provisioning: making what a run measures on, and undoing it. The host as
provisioning sees it (hostops, blockdev, cgroups) and the ledger of what was
created (ledger); targets made for one run and torn down (targets/); modelled
devices served by nbdkit (devmodel/); memory limits and swap files (memlimit,
swapfiles); the measuring runs' CPU weight (shield); what a target can hold
(capacity); the machine's block devices and whether one may be a target
(devices); and undoing what killed runs left behind (cleanup). Nothing here
measures a workload or knows a study.

It may import: boatload.base.
"""
