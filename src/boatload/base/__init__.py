"""The base layer: what every other layer may use. The errors every layer
raises (errors), where things live (paths), signals as exceptions so that
teardown runs (signals), the external programs and where each comes from
(tools), a target as the config names it (targetspec), the tidy tables' column
types named without importing polars (dtypes), raw results written
atomically and archived (results), facts about the machine, the
environment and the worker for provenance (system), and the machine's CPU time
by state with the hypervisor's steal in it (hostcpu). Its modules import only
each other and `boatload.__version__`.

It may import: nothing above it.
"""
