"""Do two runs give the same verdicts? Compares two results directories
claim by claim.

Reads every `tables/<study>-summary.json` in each directory, pairs the
claims by study and claim text, and prints the claims whose verdict differs,
then two lines: how many claims agree word for word and how many pairs are in
conflict (one
run settles a direction, a size or an equivalence the other settles the opposite way:
reproduced or same direction against contradicted, reproduced or larger against
not reproduced or smaller, equivalent against not equivalent), and how many
give the same answer to "does it hold here" (boatload.analysis.verdict.ANSWERS:
holds, holds at another size, does not hold, open; not reproduced and
contradicted are both "does not hold"). A claim only one run has counts as a
difference.

    uv run python bench/verdicts.py RESULTS_A RESULTS_B [MORE_RESULTS ...] [--min-agree 27] [--rates]

Given more than two results directories, it also prints what one pair cannot
show: over every pair of them, the share of the claims tested that give the
same answer, its mean (what two runs may be expected to agree on) and range,
and each claim that splits some pair with the share of pairs it splits.

Exit status 1 when fewer than --min-agree claims agree or any pair conflicts
(A and B).
With --rates, the runs behind the two results (data/runs/<host> of each
checkout) are also compared point by point, as `boatload compare` does.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections import Counter
from pathlib import Path

from boatload.analysis.verdict import ANSWERS, UNTESTABLE

SAME_WAY = {"reproduced", "same direction, smaller effect", "same direction, larger effect", "same direction, size open"}
#: verdict pairs that settle a claim in opposite ways: the direction, the size against the band, equivalence
OPPOSITE = [(SAME_WAY, {"contradicted"}), ({"equivalent"}, {"not equivalent"}),
            ({"reproduced", "same direction, larger effect"}, {"not reproduced", "same direction, smaller effect"}),
            ({"reproduced"}, {"same direction, larger effect"})]


def claims(results: Path) -> dict[tuple[str, str], dict]:
    """(study, claim) -> the claim's verdict entry, from a results directory."""
    out = {}
    for path in sorted((Path(results) / "tables").glob("*-summary.json")):
        study = path.name.removesuffix("-summary.json")
        for v in json.loads(path.read_text()).get("verdicts") or []:
            out[(study, v["claim"])] = v
    if not out:
        raise SystemExit(f"{results}: no claims (no tables/<study>-summary.json with verdicts)")
    return out


def conflict(a: str | None, b: str | None) -> bool:
    return any((a in x and b in y) or (b in x and a in y) for x, y in OPPOSITE)


def compare(a: dict, b: dict) -> dict:
    """Every claim of either run with both verdicts; the counts of agreement and conflict."""
    rows = []
    for key in sorted(set(a) | set(b)):
        va, vb = (a.get(key) or {}).get("verdict"), (b.get(key) or {}).get("verdict")
        rows.append({"study": key[0], "claim": key[1], "a": va, "b": vb, "agree": va == vb,
                     "same_answer": va is not None and vb is not None and ANSWERS.get(va, va) == ANSWERS.get(vb, vb),
                     "conflict": conflict(va, vb),
                     "ours_a": (a.get(key) or {}).get("ours"), "ours_b": (b.get(key) or {}).get("ours")})
    return {"claims": len(rows), "agree": sum(r["agree"] for r in rows),
            "same_answer": sum(r["same_answer"] for r in rows),
            # claims tested here by either run (not exercised and not applicable are out of every count of tests)
            "tested": sum(not (r["a"] in UNTESTABLE and r["b"] in UNTESTABLE) for r in rows),
            "tested_agree": sum(r["agree"] and r["a"] not in UNTESTABLE for r in rows),
            "tested_same_answer": sum(r["same_answer"] and r["a"] not in UNTESTABLE for r in rows),
            "conflicts": sum(r["conflict"] for r in rows), "rows": rows}


def _ratio(x) -> str:
    return "–" if x is None else f"{x:.3g}"


def report(result: dict) -> str:
    lines = []
    for r in result["rows"]:
        if r["agree"]:
            continue
        mark = "CONFLICT " if r["conflict"] else "" if r["same_answer"] else "ANSWER "
        lines.append(f"{mark}{r['study']}: {r['claim']}\n    A: {r['a'] or 'absent'} ({_ratio(r['ours_a'])})"
                     f"\n    B: {r['b'] or 'absent'} ({_ratio(r['ours_b'])})")
    lines.append(f"{result['agree']} of {result['claims']} claims agree; {result['conflicts']} in conflict")
    lines.append(f"of the {result['tested']} claims tested: {result['tested_agree']} agree word for word, "
                 f"{result['tested_same_answer']} give the same answer to \"does it hold here\" (holds, holds at "
                 "another size, does not hold, open; ANSWER marks a different one above)")
    return "\n".join(lines)


def over_pairs(runs: list[dict]) -> dict:
    """Over every pair of `runs` (each a claims() of one results directory): each pair's share of
    the claims tested that give the same answer, and the share of pairs each claim splits."""
    pairs = list(itertools.combinations(runs, 2))
    shares, splits = [], Counter()
    for a, b in pairs:
        result = compare(a, b)
        shares.append(result["tested_same_answer"] / result["tested"])
        splits.update((r["study"], r["claim"]) for r in result["rows"]
                      if not r["same_answer"] and not (r["a"] in UNTESTABLE and r["b"] in UNTESTABLE))
    return {"runs": len(runs), "pairs": len(pairs), "shares": shares,
            "splits": {key: n / len(pairs) for key, n in splits.most_common()}}


def pairs_report(result: dict) -> str:
    shares = result["shares"]
    lines = [f"over {result['runs']} runs ({result['pairs']} pairs): {100 * sum(shares) / len(shares):.1f} % of the "
             f"claims tested give the same answer on average (pairs {100 * min(shares):.1f}-{100 * max(shares):.1f} %)"]
    lines += [f"  {100 * share:3.0f} % of pairs split {study}: {claim}" for (study, claim), share in
              result["splits"].items()]
    return "\n".join(lines)


def rates(a: Path, b: Path) -> str:
    """The two results' runs compared point by point: boatload compare's table."""
    from boatload.analysis.compare_report import build, settings_from, terminal
    from boatload.analysis.compare_sets import SetError, open_set

    try:
        doc = build(open_set(str(a), arg="RESULTS_A"), open_set(str(b), arg="RESULTS_B"),
                    settings_from(None, None, None))
    except SetError as exc:
        raise SystemExit(f"--rates: {exc}") from None
    return terminal(doc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path, help="a results directory")
    parser.add_argument("b", type=Path, help="another results directory")
    parser.add_argument("more", type=Path, nargs="*",
                        help="more results directories: the agreement over every pair of them all too")
    parser.add_argument("--min-agree", type=int, default=None, help="exit 1 when fewer claims agree")
    parser.add_argument("--rates", action="store_true",
                        help="also compare the measurements point by point (boatload compare)")
    args = parser.parse_args(argv)
    for d in (args.a, args.b, *args.more):
        if not (d / "tables").is_dir():
            parser.error(f"{d}: not a results directory (no tables/)")
    result = compare(claims(args.a), claims(args.b))
    print(report(result))
    if args.more:
        print(pairs_report(over_pairs([claims(d) for d in (args.a, args.b, *args.more)])))
    if args.rates:
        print(rates(args.a, args.b))
    too_few = args.min_agree is not None and result["agree"] < args.min_agree
    return 1 if too_few or result["conflicts"] else 0


if __name__ == "__main__":
    sys.exit(main())
