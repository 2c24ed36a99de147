# The billion-file study: creation methods x file systems.

FOREST = config["studies"].get("forest")


def forest_runs():
    return expand(
        f"{RUNS}/forest/{{target}}/{{method}}/rep{{rep}}.json",
        target=FOREST["targets"],
        method=FOREST["methods"],
        rep=range(1, config["repetitions"] + 1),
    )


def forest_job(wildcards):
    return json.dumps(
        {
            "study": "forest",
            "scale": config["scale"],
            "target": target_spec(wildcards.target),
            "method": wildcards.method,
            "rep": int(wildcards.rep),
            "shape": FOREST["shape"],
            "time_cap_s": FOREST["time_cap_s"],
            "seed": config["seed"] + int(wildcards.rep),
        },
        sort_keys=True,
    )


rule forest_run:
    input:
        **PINNED,
    output:
        f"{RUNS}/forest/{{target}}/{{method}}/rep{{rep}}.json",
    params:
        job=forest_job,
        runs=RUNS,
    wildcard_constraints:
        target="[a-z0-9-]+",
        method="[a-z0-9-]+",
        rep=r"\d+",
    resources:
        bench=1,
    shell:
        "boatload run forest --job {params.job:q} --out {output:q} --runs-dir {params.runs:q}"
