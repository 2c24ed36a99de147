"""Analysis: from raw runs to verdicts. Raw documents to tidy tables (tidy);
the verdict rule (verdict) on exact ratio intervals (intervals), bootstrap
intervals (stats), the settle design (sequential) and what settle decided
(settle_record); each verdict word's error rate by simulation (error_rates);
one verdict per original statement (statements); where noise comes from
(spread); two result sets compared (compare, compare_sets, compare_report);
and what every study notebook does around its analysis (notebook, plotting).
Nothing here provisions or measures.

It may import: boatload.base, boatload.provision, boatload.measure, boatload.studies.
"""
