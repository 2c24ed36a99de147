# The paper, assembled from the notebooks' tables and figures.


rule paper:
    input:
        sources=sorted(glob("paper/*.typ")),
        provenance="results/provenance.json",
        tables=expand("results/tables/{study}.csv", study=ANALYSED),
        summaries=expand("results/tables/{study}-summary.json", study=ANALYSED),
    output:
        "results/paper/paper.pdf",
    shell:
        "boatload paper --out {output:q} --results results"


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
    shell:
        "boatload blog --results results --out results/blog --study {wildcards.study}"
