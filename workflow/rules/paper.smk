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
