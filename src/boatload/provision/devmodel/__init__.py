"""Device models: an image served through nbdkit and the project's
device-model filter (native/devmodel/), attached as a direct-I/O loop device,
so a file system runs on a modelled disk, array or SSD of the originals' era.

presets.py   the presets (data/devmodels.yaml) and checked overrides
native.py    the filter and devmodel-calc binaries, what a model should give
stack.py     nbdkit -> nbdfuse -> loop, recorded in the ledger, torn down
calibrate.py the stack's own cost per request, measured
device.py    a modelled device on its own (calibrated, checked, torn down)
probe.py     timed O_DIRECT requests from Python
leftovers.py what a killed run's stacks left, for `boatload cleanup`
"""
