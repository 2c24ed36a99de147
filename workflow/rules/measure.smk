# Every measurement of every study: one job per (study, target, point, repetition).
# The study records (boatload.studies) turn the config into jobs (common.smk's
# RUN_LIST); this rule only runs them, so all studies share provisioning,
# teardown and provenance.


rule measure:
    input:
        **PINNED,
        previous=previous_run,
    output:
        f"{RUNS}/{{study}}/{{target}}/{{point}}/rep{{rep}}.json",
    params:
        job=measure_job,
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
