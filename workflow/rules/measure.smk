# Every measurement of every study: one job per (study, target, point, repetition).
# The study modules (boatload.studies.*) turn the config into jobs; this rule
# only runs them, so all studies share provisioning, teardown and provenance.

from boatload import plan

# Every run, in the order shuffled with the config's seed, so that no target or
# study is always measured first (warm caches, a filling disk, a heating CPU).
# A study whose settings cannot make runs is named in PLAN_ERRORS, which the
# preflight lists with every other problem.
PLAN_ERRORS = []
RUN_LIST = plan.runs(config, PLAN_ERRORS)
JOBS = {run.key: {**run.job, "interference": INTERFERENCE} for run in RUN_LIST}


def raw_run(name, target, point, rep):
    return plan.raw_run(RUNS, name, target, point, rep)


def raw_runs(name):
    """A study's raw runs, in a fixed order (not the run order, which follows the seed)."""
    return sorted(run.raw(RUNS) for run in RUN_LIST if run.study == name)


# The runs still to measure form one chain in that order: each waits for the
# pending run before it. So exactly one measurement is ever ready, it is
# running, and Snakemake's scheduler has nothing to select and sleeps until
# it ends (with many ready jobs it wakes every second and re-evaluates all of
# them, using CPU beside the measurement). Only runs whose raw result is
# missing are linked: a run that exists is never made to wait or to rerun
# because another one is measured again (a link to a run that will be made
# counts as an updated input, `ancient` or not). A run measured again while
# its result exists (changed params, --forcerun) is not in the chain.
PENDING = [run.key for run in plan.pending(RUN_LIST, RUNS)]
PREVIOUS_PENDING = dict(zip(PENDING[1:], PENDING))


def previous_run(w):
    key = (w.study, w.target, w.point, int(w.rep))
    return raw_run(*PREVIOUS_PENDING[key]) if key in PREVIOUS_PENDING else []


# While any run is still to measure, the analysis (every tidy table, and so
# every notebook) waits for the last of them, so nothing of ours runs beside a
# measurement; with nothing to measure it waits for nothing.
LAST_PENDING_RUN = raw_run(*PENDING[-1]) if PENDING else []


rule measure:
    input:
        **PINNED,
        previous=previous_run,
    output:
        f"{RUNS}/{{study}}/{{target}}/{{point}}/rep{{rep}}.json",
    params:
        job=lambda w: json.dumps(JOBS[(w.study, w.target, w.point, int(w.rep))], sort_keys=True),
        runs=RUNS,
    wildcard_constraints:
        study="|".join(STUDIES),
        target="[a-z0-9-]+",
        point="[A-Za-z0-9._-]+",
        rep=r"\d+",
    resources:
        bench=1,
    log:
        f"results/logs/measure/{{study}}/{{target}}/{{point}}/rep{{rep}}.log",
    shell:
        "boatload run {wildcards.study} --job {params.job:q} --out {output:q} --runs-dir {params.runs:q} "
        "2> >(tee {log:q} >&2)"
