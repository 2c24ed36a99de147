# From raw runs to tidy tables, provenance, and one executed notebook per study.


rule tidy:
    input:
        runs=lambda w: raw_runs(w.study, host_of(w)),
        after=last_pending_run,
    output:
        f"data/runs/{HOST_PART}/{{study}}.parquet",
    params:
        runs=lambda w: raw_runs(w.study, host_of(w)),  # a run taken out of the config reruns this
    wildcard_constraints:
        study="|".join(STUDIES),
        **FLEET_CONSTRAINTS,
    localrule: True
    log:
        f"{logs('tidy')}/{{study}}.log",
    shell:
        "boatload tidy {wildcards.study} --out {output:q} {input.runs:q} > {log:q} 2>&1"


rule provenance:
    input:
        all_raw_runs(),
    output:
        "results/provenance.json",
    params:
        runs=all_raw_runs(),  # a run taken out reruns this
        config=CONFIGFILE,
        scale=config["scale"],
        seed=config["seed"],
    localrule: True
    log:
        "results/logs/provenance.log",
    shell:
        "boatload provenance --out {output:q} --config {params.config:q} --scale {params.scale} "
        "--order-seed {params.seed} {input:q} > {log:q} 2>&1"


if OTHER_HOSTS:

    # The fleet: the provenance of each other node, beside its results.
    rule provenance_host:
        input:
            lambda w: all_raw_runs(w.host),
        output:
            "results/hosts/{host}/provenance.json",
        params:
            runs=lambda w: all_raw_runs(w.host),
            config=CONFIGFILE,
            scale=config["scale"],
            seed=config["seed"],
        wildcard_constraints:
            host="|".join(map(re.escape, OTHER_HOSTS)),
        localrule: True
        log:
            "results/logs/{host}/provenance.log",
        shell:
            "boatload provenance --out {output:q} --config {params.config:q} --scale {params.scale} "
            "--order-seed {params.seed} {input:q} > {log:q} 2>&1"


# One papermill notebook per study (rule notebook_<study>); it writes the
# study's table, its summary (the numbers the paper quotes) and its figures
# (results/figures/<study>-<figure>.{svg,png,pdf,vl.json}, the SVGs declared
# here, so the report and the blog pages list them per study). One rule per
# study because each study has its own figures; the report's caption is the
# study record's (workflow/report/study.rst renders params.caption). A
# notebook reads its study's table and the published numbers, nothing else
# (provenance.json is the paper's and the blog's).
for _study in ANALYSED:

    rule:
        name:
            f"notebook_{_study}"
        input:
            notebook=f"notebooks/{_study}.ipynb",
            data=f"{RUNS}/{_study}.parquet",
            reference=f"data/reference/{_study}.csv",
        output:
            notebook=f"results/notebooks/{_study}.ipynb",
            table=report(
                f"results/tables/{_study}.csv", caption="../report/study.rst", category=_study, subcategory="table"
            ),
            summary=f"results/tables/{_study}-summary.json",
            figures=[
                report(path, caption="../report/study.rst", category=_study, subcategory="figures")
                for path in figure_files(_study)
            ],
        params:
            caption=registry()[_study].caption,
            settings=NOTEBOOK_PARAMS,
        localrule: True
        log:
            f"results/logs/notebook_{_study}.log",
        shell:
            "papermill {input.notebook:q} {output.notebook:q} -k python3 --cwd . "
            "-p data {input.data:q} -p reference {input.reference:q} -p out_dir results {params.settings} "
            "> {log:q} 2>&1"


# The fleet: every other node's notebooks, on its own data, into results/hosts/<host>/
# (the summaries the fleet section compares; the paper's study sections show the first node).
for _study in ANALYSED if OTHER_HOSTS else []:

    rule:
        name:
            f"notebook_{_study}_host"
        input:
            notebook=f"notebooks/{_study}.ipynb",
            data=f"data/runs/{{host}}/{_study}.parquet",
            reference=f"data/reference/{_study}.csv",
        output:
            notebook=f"results/hosts/{{host}}/notebooks/{_study}.ipynb",
            table=f"results/hosts/{{host}}/tables/{_study}.csv",
            summary=f"results/hosts/{{host}}/tables/{_study}-summary.json",
        params:
            out="results/hosts/{host}",
            settings=NOTEBOOK_PARAMS,
        wildcard_constraints:
            host="|".join(map(re.escape, OTHER_HOSTS)),
        localrule: True
        log:
            f"results/logs/{{host}}/notebook_{_study}.log",
        shell:
            "papermill {input.notebook:q} {output.notebook:q} -k python3 --cwd . "
            "-p data {input.data:q} -p reference {input.reference:q} -p out_dir {params.out:q} {params.settings} "
            "> {log:q} 2>&1"
