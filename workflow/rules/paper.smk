# The paper, assembled from the notebooks' tables and figures.

rule paper:
    input:
        sources=sorted(glob("paper/*.typ")),
        provenance="results/provenance.json",
        tables=expand("results/tables/{study}.csv", study=STUDIES),
        summaries=expand("results/tables/{study}-summary.json", study=STUDIES),
        figures=expand("results/figures/{study}-rates.svg", study=STUDIES),
    output:
        "results/paper/paper.pdf",
    shell:
        "boatload paper --out {output:q} --results results"
