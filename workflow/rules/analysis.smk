# From raw runs to tidy tables, provenance, and one executed notebook per study.

rule tidy:
    input:
        lambda w: raw_runs(w.study),
    output:
        f"{RUNS}/{{study}}.parquet",
    wildcard_constraints:
        study="|".join(STUDIES),
    shell:
        "boatload tidy {wildcards.study} --out {output:q} {input:q}"


rule provenance:
    input:
        [run for name in STUDIES for run in raw_runs(name)],
    output:
        "results/provenance.json",
    params:
        config=CONFIGFILE,
        scale=config["scale"],
        seed=config["seed"],
    shell:
        "boatload provenance --out {output:q} --config {params.config:q} --scale {params.scale} --order-seed {params.seed} {input:q}"


rule notebook:
    # One papermill notebook per study; it writes the study's table, its
    # summary (the numbers the paper quotes) and its figures
    # results/figures/<study>-<name>.{svg,png,pdf,vl.json}.
    input:
        notebook="notebooks/{study}.ipynb",
        data=f"{RUNS}/{{study}}.parquet",
        reference="data/reference/{study}.csv",
        provenance="results/provenance.json",
    output:
        notebook="results/notebooks/{study}.ipynb",
        table="results/tables/{study}.csv",
        summary="results/tables/{study}-summary.json",
    log:
        "results/logs/notebook_{study}.log",
    wildcard_constraints:
        study="|".join(ANALYSED) or "none",
    shell:
        "papermill {input.notebook:q} {output.notebook:q} -k python3 --cwd . "
        "-p data {input.data:q} -p reference {input.reference:q} -p out_dir results "
        "> {log:q} 2>&1"
