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


rule notebook_forest:
    input:
        notebook="notebooks/forest.ipynb",
        data=f"{RUNS}/forest.parquet",
        reference="data/reference/forest.csv",
        provenance="results/provenance.json",
    output:
        notebook="results/notebooks/forest.ipynb",
        table="results/tables/forest.csv",
        summary="results/tables/forest-summary.json",
        figures=expand("results/figures/forest-rates.{ext}", ext=["svg", "png", "pdf", "vl.json"]),
    log:
        "results/logs/notebook_forest.log",
    shell:
        "papermill {input.notebook:q} {output.notebook:q} -k python3 --cwd . "
        "-p data {input.data:q} -p reference {input.reference:q} -p out_dir results "
        "> {log:q} 2>&1"
