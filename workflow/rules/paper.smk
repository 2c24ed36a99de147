# The paper, assembled from the notebooks' tables and figures.

# Studies whose notebook exists: each brings a table, a summary and a figure.
ANALYSED = [name for name in STUDIES if os.path.exists(f"notebooks/{name}.ipynb")]

rule paper:
    input:
        sources=sorted(glob("paper/*.typ")),
        provenance="results/provenance.json",
        tables=expand("results/tables/{study}.csv", study=ANALYSED),
        summaries=expand("results/tables/{study}-summary.json", study=ANALYSED),
        figures=expand("results/figures/{study}-rates.svg", study=ANALYSED),
    output:
        "results/paper/paper.pdf",
    shell:
        "boatload paper --out {output:q} --results results"
