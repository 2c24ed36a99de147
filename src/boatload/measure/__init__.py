"""Measuring: one job on a provisioned target, provisioned, measured and torn
down (runner); the measuring worker (worker), the peer tools (peers/: fio,
bonnie++) and fio checked against a device model (fiocheck); the billion-file
study's other ways of creating files (creators); and what else the machine
did around each timed phase, and whether that disturbed it (interference,
procfs, schedstat, disturbance, machineload). It knows no study by name.

It may import: boatload.base, boatload.provision.
"""
