# Every measurement of every study: one job per (study, target, point, repetition).
# The study records (boatload.studies) turn the config into jobs (common.smk's
# RUN_LIST); this rule only runs them, so all studies share provisioning,
# teardown and provenance.


rule measure:
    input:
        **PINNED,
        previous=previous_run,
    output:
        f"data/runs/{HOST_PART}/{{study}}/{{target}}/{{point}}/rep{{rep}}.json",
    params:
        job=measure_job,
        runs=lambda w: runs_dir(host_of(w)),
        # the fleet: each node's node-local scratch (cluster.scratch)
        **FLEET_PARAMS,
    wildcard_constraints:
        study="|".join(STUDIES),
        target="[a-z0-9-]+",
        point="[A-Za-z0-9._-]+",
        rep=r"\d+",
        **FLEET_CONSTRAINTS,
    resources:
        bench=1,
        **FLEET_RESOURCES,
    log:
        f"{logs('measure')}/{{study}}/{{target}}/{{point}}/rep{{rep}}.log",
    shell:
        ("BOATLOAD_SCRATCH={params.scratch:q} " if FLEET else "")
        + "boatload run {wildcards.study} --job {params.job:q} --out {output:q} --runs-dir {params.runs:q} "
        "2> >(tee {log:q} >&2)"
