"""The workflow, at the top: the `boatload` command (cli); every run a config
asks for, in its order (plan); whether this machine can run it (preflight);
`boatload reproduce` and its time budget (reproduce, budget); what every
study notebook is given (notebooks); more runs of the claims left undecided
(settle); and the fleet on SLURM (cluster). No module of boatload imports it;
the Snakefile, the workflow rules, tests, bench and scripts do.

It may import: boatload.base, boatload.provision, boatload.measure, boatload.studies, boatload.analysis, boatload.publish.
"""
