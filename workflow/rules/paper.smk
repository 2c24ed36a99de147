# The paper and the blog pages, assembled from the notebooks' tables, summaries and figures.


# The fleet: every node's verdicts, provenance and the spread of each ratio
# across nodes (boatload.publish.fleet), for the paper's fleet section and the blog.
FLEET_SUMMARY = ["results/tables/fleet-summary.json"] if OTHER_HOSTS else []

if OTHER_HOSTS:

    rule fleet:
        input:
            summaries=[f"{results_of(h)}/tables/{st}-summary.json" for h in HOSTS for st in ANALYSED],
            provenance=[f"{results_of(h)}/provenance.json" for h in HOSTS],
        output:
            "results/tables/fleet-summary.json",
        params:
            hosts=HOSTS,
        localrule: True
        log:
            "results/logs/fleet.log",
        shell:
            "boatload fleet --results results --out {output:q} {params.hosts} > {log:q} 2>&1"


rule paper:
    input:
        sources=sorted(glob("paper/*.typ")),
        # the bibliography (boatload paper also writes results/tables/audit.json, boatload.publish.audit)
        bibliography="paper/references.yml",
        provenance="results/provenance.json",
        tables=expand("results/tables/{study}.csv", study=ANALYSED),
        summaries=expand("results/tables/{study}-summary.json", study=ANALYSED),
        # the figures each study's section embeds (paper/<study>.typ, common.typ's figure-path)
        figures=all_figure_files("svg"),
        fleet=FLEET_SUMMARY,
    output:
        "results/paper/paper.pdf",
    localrule: True
    log:
        "results/logs/paper.log",
    shell:
        "boatload paper --out {output:q} --results results" + (" --fleet" if OTHER_HOSTS else "") + " > {log:q} 2>&1"


rule blog:
    # One self-contained HTML page per study: question, verdicts, the measured
    # table, the figures inline, and where it was measured; in the fleet, each
    # node's verdicts beside the others'.
    input:
        summary="results/tables/{study}-summary.json",
        table="results/tables/{study}.csv",
        figures=lambda w: figure_files(w.study),
        provenance="results/provenance.json",
        fleet=FLEET_SUMMARY,
    output:
        "results/blog/{study}.html",
    wildcard_constraints:
        study="|".join(ANALYSED) or "none",
    localrule: True
    log:
        "results/logs/blog/{study}.log",
    shell:
        "boatload blog --results results --out results/blog --study {wildcards.study}"
        + (" --fleet" if OTHER_HOSTS else "")
        + " > {log:q} 2>&1"
