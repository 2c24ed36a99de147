# Every measurement of every study: one job per (study, target, point, repetition).
# The study modules (boatload.studies.*) turn the config into jobs; this rule
# only runs them, so all studies share provisioning, teardown and provenance.

import random

JOBS = {
    name: {(job["target"]["name"], job["point"], job["rep"]): job for job in study(name).jobs(config)}
    for name in STUDIES
}


# Run order: shuffled with the config's seed, so that no target or study is
# always measured first (warm caches, a filling disk, a heating CPU). With one
# `bench` resource per host the scheduler starts the highest priority first.
ORDER = sorted((name, *key) for name in STUDIES for key in JOBS[name])
random.Random(config["seed"]).shuffle(ORDER)
PRIORITY = {key: len(ORDER) - i for i, key in enumerate(ORDER)}


def raw_runs(name):
    return [f"{RUNS}/{name}/{target}/{point}/rep{rep}.json" for (target, point, rep) in JOBS[name]]


rule measure:
    input:
        **PINNED,
    output:
        f"{RUNS}/{{study}}/{{target}}/{{point}}/rep{{rep}}.json",
    params:
        job=lambda w: json.dumps(JOBS[w.study][(w.target, w.point, int(w.rep))], sort_keys=True),
        runs=RUNS,
    wildcard_constraints:
        study="|".join(STUDIES),
        target="[a-z0-9-]+",
        point="[A-Za-z0-9._-]+",
        rep=r"\d+",
    priority: lambda w: PRIORITY[(w.study, w.target, w.point, int(w.rep))]
    resources:
        bench=1,
    shell:
        "boatload run {wildcards.study} --job {params.job:q} --out {output:q} --runs-dir {params.runs:q}"
