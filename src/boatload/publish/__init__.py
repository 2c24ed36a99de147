"""Publishing: what a reader sees. The paper compiled from results/ (paper),
the benchmarking-crimes audit and the threats' numbers (audit), one blog page
per study (blog), the fleet section (fleet), the provenance document
(provenance) and the comparison's page (compare_page).

It may import: boatload.base, boatload.provision, boatload.measure, boatload.studies, boatload.analysis.
"""
