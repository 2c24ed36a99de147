# The paper and the blog pages, assembled from the notebooks' tables, summaries and figures.


rule paper:
    input:
        sources=sorted(glob("paper/*.typ")),
        # the bibliography (boatload paper also writes results/tables/audit.json, boatload.audit)
        bibliography="paper/references.yml",
        provenance="results/provenance.json",
        tables=expand("results/tables/{study}.csv", study=ANALYSED),
        summaries=expand("results/tables/{study}-summary.json", study=ANALYSED),
        # the figures each study's section embeds (paper/<study>.typ, common.typ's figure-path)
        figures=all_figure_files("svg"),
    output:
        "results/paper/paper.pdf",
    log:
        "results/logs/paper.log",
    shell:
        "boatload paper --out {output:q} --results results > {log:q} 2>&1"


rule blog:
    # One self-contained HTML page per study: question, verdicts, the measured
    # table, the figures inline, and where it was measured.
    input:
        summary="results/tables/{study}-summary.json",
        table="results/tables/{study}.csv",
        figures=lambda w: figure_files(w.study),
        provenance="results/provenance.json",
    output:
        "results/blog/{study}.html",
    wildcard_constraints:
        study="|".join(ANALYSED) or "none",
    log:
        "results/logs/blog/{study}.log",
    shell:
        "boatload blog --results results --out results/blog --study {wildcards.study} > {log:q} 2>&1"
