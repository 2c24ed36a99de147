# From raw runs to tidy tables, provenance, and one executed notebook per study.

rule tidy:
    input:
        runs=lambda w: raw_runs(w.study),
        after=LAST_PENDING_RUN,
    output:
        f"{RUNS}/{{study}}.parquet",
    params:
        runs=lambda w: raw_runs(w.study),  # a run taken out of the config reruns this
    wildcard_constraints:
        study="|".join(STUDIES),
    shell:
        "boatload tidy {wildcards.study} --out {output:q} {input.runs:q}"


rule provenance:
    input:
        [run for name in STUDIES for run in raw_runs(name)],
    output:
        "results/provenance.json",
    params:
        runs=[run for name in STUDIES for run in raw_runs(name)],  # a run taken out reruns this
        config=CONFIGFILE,
        scale=config["scale"],
        seed=config["seed"],
    shell:
        "boatload provenance --out {output:q} --config {params.config:q} --scale {params.scale} --order-seed {params.seed} {input:q}"


# The figures each notebook writes, results/figures/<study>-<name>.{svg,png,pdf,vl.json}:
# the SVGs are declared outputs, so the report (snakemake --report) and the blog
# pages can list them per study.


def figure_files(name, ext="svg"):
    return [f"results/figures/{name}-{fig}.{ext}" for fig in FIGURES.get(name, [])]


# One papermill notebook per study (rule notebook_<study>); it writes the
# study's table, its summary (the numbers the paper quotes) and its figures.
# One rule per study because a report caption is a file named when the rule is
# parsed (workflow/report/<study>.rst) and each study has its own figures.
for _study in ANALYSED:

    rule:
        name:
            f"notebook_{_study}"
        input:
            notebook=f"notebooks/{_study}.ipynb",
            data=f"{RUNS}/{_study}.parquet",
            reference=f"data/reference/{_study}.csv",
            provenance="results/provenance.json",
        output:
            notebook=f"results/notebooks/{_study}.ipynb",
            table=report(
                f"results/tables/{_study}.csv", caption=f"../report/{_study}.rst", category=_study, subcategory="table"
            ),
            summary=f"results/tables/{_study}-summary.json",
            figures=[
                report(path, caption=f"../report/{_study}.rst", category=_study, subcategory="figures")
                for path in figure_files(_study)
            ],
        log:
            f"results/logs/notebook_{_study}.log",
        shell:
            "papermill {input.notebook:q} {output.notebook:q} -k python3 --cwd . "
            "-p data {input.data:q} -p reference {input.reference:q} -p out_dir results "
            "> {log:q} 2>&1"
