"""The `boatload` command: what Snakemake rules and people call."""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
from pathlib import Path

from boatload.studies.config import ConfigError
from boatload.studies import names


def _cmd_run(args: argparse.Namespace) -> int:
    from boatload.base.results import archive_path, save_result
    from boatload.studies import study

    # A job started in the background inherits SIGINT ignored; a measurement
    # must still stop on Ctrl-C and tear its target down.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        job = json.loads(args.job)
    except json.JSONDecodeError as exc:
        raise SystemExit(f"boatload run: --job: not valid JSON ({exc})") from None
    result = study(args.study).run(job)
    # Measured and torn down: a signal from here on could only lose a complete result, or leave
    # it published by a process that died of the signal (a mask would not do: any thread may take it)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    out = Path(args.out)
    runs_dir = Path(args.runs_dir)
    status = result["result"]["status"]
    if status == "error":
        # Keep the failed run for the record, but do not publish it as a result.
        keep = archive_path(runs_dir, Path("failed") / out.name)
        keep.parent.mkdir(parents=True, exist_ok=True)
        keep.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
        print(f"boatload run: {args.study} {out} failed: {result['result']['reason']} (kept in {keep})", file=sys.stderr)
        return 1
    save_result(result, out, runs_dir)
    summary = study(args.study).summary(result) if status == "ok" else f"skipped: {result['result']['reason']}"
    print(f"{args.study} {out.parent.name} rep{job.get('rep')}: {summary}")
    return 0


def _cmd_tidy(args: argparse.Namespace) -> int:
    from boatload.analysis.tidy import tidy

    frame = tidy(args.study, [Path(p) for p in args.raw], Path(args.out))
    print(f"{args.out}: {frame.height} rows")
    return 0


def _cmd_provenance(args: argparse.Namespace) -> int:
    from boatload.publish.provenance import gather
    from boatload.base.results import write_atomic

    doc = gather([Path(p) for p in args.raw], args.config, args.scale, args.order_seed)
    write_atomic(Path(args.out), json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return 0


def _cmd_cleanup_nodes(args: argparse.Namespace) -> int:
    """`make clean-mounts PROFILE=slurm`: `boatload cleanup` on every node of the fleet, through srun."""
    from boatload.workflow import cluster
    from boatload.studies.config import load

    config = load(Path(args.configfile))
    config["executor"] = "slurm"
    names = cluster.nodes(config)
    status = 0
    for node, code, text in cluster.cleanup_nodes(config, names, force=args.force):
        for line in text.splitlines() or ["(no output)"]:
            print(f"{node}: {line}")
        if code != 0:
            print(f"{node}: boatload cleanup did not run there or failed (exit {code})", file=sys.stderr)
            status = 1
    return status


def _cmd_cleanup(args: argparse.Namespace) -> int:
    from boatload.base.paths import scratch_dir
    from boatload.provision.cleanup import cleanup

    if args.profile == "slurm":
        return _cmd_cleanup_nodes(args)

    scratch = Path(args.scratch) if args.scratch else scratch_dir()
    if not scratch.exists():
        print(f"boatload cleanup: nothing to do ({scratch} does not exist)")
        return 0
    from boatload.provision.targets import TargetError

    try:
        actions = cleanup(scratch, force=args.force)
    except TargetError as exc:  # NeedsRoot included: one line, what was done before it
        for line in getattr(exc, "done", []):
            print(f"boatload cleanup: {line}")
        print(f"boatload cleanup: could not finish: {exc}", file=sys.stderr)
        return 1
    for line in actions:
        print(f"boatload cleanup: {line}")
    if not actions:
        print(f"boatload cleanup: nothing left over under {scratch}")
    return 0


def _cmd_devices(args: argparse.Namespace) -> int:
    from boatload.provision.devices import render, survey
    from boatload.base.paths import scratch_dir

    rows = survey(Path(args.scratch) if args.scratch else scratch_dir())
    print(json.dumps(rows, indent=2) if args.json else "\n".join(render(rows)))
    return 0


def _cmd_target(args: argparse.Namespace) -> int:
    from boatload.provision.cleanup import cleanup
    from boatload.studies.config import load
    from boatload.base.paths import scratch_dir
    from boatload.provision.targets import TargetError, refusals, updown
    from boatload.base.targetspec import parse_target

    scratch = Path(args.scratch) if args.scratch else scratch_dir()
    try:
        if args.action == "down":
            for line in updown.down(args.name, scratch, cleanup):
                print(f"boatload target down: {line}")
            return 0
        config = load(Path(args.configfile))
        if args.name not in config["targets"]:
            raise TargetError(f"targets.{args.name}: not in {args.configfile} (it has {', '.join(sorted(config['targets']))})")
        spec = parse_target(args.name, config["targets"][args.name])
        updown.ensure_down(spec.name, scratch)
        problems = refusals(spec, scratch)
        if problems:
            raise TargetError("; ".join(problems) if len(problems) == 1 else "\n  - ".join(["refused:", *problems]))
        updown.up(spec, scratch)
    except (TargetError, ConfigError) as exc:
        print(f"boatload target {args.action}: {exc}", file=sys.stderr)
        return 1
    return 0


def _cmd_paper(args: argparse.Namespace) -> int:
    from boatload.publish.paper import build_paper
    from boatload.base.paths import repo_root

    build_paper(repo_root(), Path(args.out), Path(args.results), fleet=args.fleet)
    print(args.out)
    return 0


def _cmd_blog(args: argparse.Namespace) -> int:
    from boatload.publish.blog import build_blog

    try:
        pages = build_blog(Path(args.results), Path(args.out), args.study or None, fleet=args.fleet)
    except FileNotFoundError as err:
        print(f"boatload blog: {err}", file=sys.stderr)
        return 1
    for page in pages:
        print(page)
    return 0


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from boatload.workflow.budget import main as reproduce  # the budgeted run where the config sets one

    extra = args.snakemake_args[1:] if args.snakemake_args[:1] == ["--"] else args.snakemake_args
    studies = [name for part in args.studies or [] for name in part.replace(",", " ").split()]
    if args.settle is not None:
        from boatload.workflow.settle import main as settle

        if args.dry_run or extra:
            raise SystemExit("boatload reproduce: --settle takes neither --dry-run nor snakemake arguments")
        return settle(args.configfile, args.settle, profile=args.profile, studies=studies)
    return reproduce(args.configfile, extra, dry_run=args.dry_run, profile=args.profile, studies=studies)


def _cmd_fleet(args: argparse.Namespace) -> int:
    from boatload.publish.fleet import write

    doc = write(Path(args.results), Path(args.out), args.hosts)
    print(f"{args.out}: {len(doc['hosts'])} hosts, {len(doc['claims'])} claims, "
          f"{doc['agreeing_claims']} with one verdict on every host")
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from boatload.publish.compare_page import run
    from boatload.analysis.compare_report import settings_from, terminal
    from boatload.analysis.compare_sets import SetError

    try:
        settings = settings_from(args.margin, args.level, Path(args.configfile) if args.configfile else None)
        doc = run(args.a, args.b, Path(args.out), settings, Path(args.runs_root))
    except (SetError, ValueError) as exc:
        print(f"boatload compare: {exc}", file=sys.stderr)
        return 2
    print(terminal(doc))
    print(f"{args.out}/compare.json, {args.out}/compare.html")
    if args.fail_on == "slower" and doc["counts"]["slower"]:
        print(f"boatload compare: {doc['counts']['slower']} points slower (--fail-on slower)", file=sys.stderr)
        return 1
    return 0


def _cmd_figure(args: argparse.Namespace) -> int:
    """Rerun one study's notebook, its blog page and the paper from the data already measured."""
    configfile = args.configfile or _measured_config()
    argv = [
        "snakemake", "--cores", "2", "--configfile", configfile,
        "--forcerun", f"results/tables/{args.study}-summary.json",
        "--allowed-rules", f"notebook_{args.study}", "blog", "paper",
        "--", "results/paper/paper.pdf", f"results/blog/{args.study}.html",
    ]
    return subprocess.call(argv)


def _measured_config() -> str:
    """The config the existing results were measured with (recorded in results/provenance.json)."""
    from boatload.base.paths import repo_root

    provenance = repo_root() / "results" / "provenance.json"
    if provenance.is_file():
        return json.loads(provenance.read_text()).get("config") or "config/config.yaml"
    return "config/config.yaml"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="boatload", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="provision a target, run one measurement, tear down")
    run.add_argument("study", choices=names())
    run.add_argument("--job", required=True, help="the job as JSON (Snakemake passes it)")
    run.add_argument("--out", required=True)
    run.add_argument("--runs-dir", required=True, help="data/runs/<host>: the archive lives below it")
    run.set_defaults(func=_cmd_run)

    repro = sub.add_parser("reproduce", help="run the whole workflow with a progress line (make reproduce)")
    repro.add_argument("--configfile", default="config/config.yaml", help="the scale (default: %(default)s)")
    repro.add_argument("--dry-run", action="store_true", help="print the preflight, the plan and the jobs; run nothing")
    repro.add_argument("--profile", help="a profile of profiles/ (slurm: the fleet; default: profiles/default, this host)")
    repro.add_argument("--studies", action="append",
                       help="only these of the config's studies (names, space- or comma-separated; repeatable)")
    repro.add_argument("--settle", type=float, metavar="MINUTES",
                       help="after a run: more repetitions of the points behind undecided claims, by the sequential "
                            "design (config: settle), until each is decided or MINUTES are spent (make settle)")
    repro.add_argument("snakemake_args", nargs=argparse.REMAINDER, help="after --: passed on to snakemake")
    repro.set_defaults(func=_cmd_reproduce)

    tidy = sub.add_parser("tidy", help="raw JSON results to one Parquet table")
    tidy.add_argument("study", choices=names())
    tidy.add_argument("--out", required=True)
    tidy.add_argument("raw", nargs="+")
    tidy.set_defaults(func=_cmd_tidy)

    prov = sub.add_parser("provenance", help="gather the provenance of the raw results")
    prov.add_argument("--out", required=True)
    prov.add_argument("--config", required=True)
    prov.add_argument("--scale", required=True)
    prov.add_argument("--order-seed", type=int, help="the seed that shuffled the run order")
    prov.add_argument("raw", nargs="+")
    prov.set_defaults(func=_cmd_provenance)

    clean = sub.add_parser("cleanup", help="unmount, detach and delete whatever an interrupted run left")
    clean.add_argument("--scratch", help="scratch directory (default: $BOATLOAD_SCRATCH or results/scratch)")
    clean.add_argument("--force", action="store_true", help="also undo resources of runs that still seem alive")
    clean.add_argument("--profile", help="slurm: clean up on every node of the config's cluster, through srun")
    clean.add_argument("--configfile", default="config/config.yaml", help="with --profile slurm: the config naming the nodes")
    clean.set_defaults(func=_cmd_cleanup)

    devices = sub.add_parser("devices", help="every block device, what uses it, and whether boatload would format it")
    devices.add_argument("--json", action="store_true", help="a JSON list of {path, identity, accepted, reason, ...}")
    devices.add_argument("--scratch", help="scratch directory (default: $BOATLOAD_SCRATCH or results/scratch)")
    devices.set_defaults(func=_cmd_devices)

    target = sub.add_parser("target", help="bring one configured target up for your own tools, or down again")
    target.add_argument("action", choices=["up", "down"])
    target.add_argument("name", help="a target of the config (targets.<name>)")
    target.add_argument("--configfile", default="config/config.yaml", help="(up) the config naming it (default: %(default)s)")
    target.add_argument("--scratch", help="scratch directory (default: $BOATLOAD_SCRATCH or results/scratch)")
    target.set_defaults(func=_cmd_target)

    paper = sub.add_parser("paper", help="compile the paper from results/")
    paper.add_argument("--out", default="results/paper/paper.pdf")
    paper.add_argument("--results", default="results")
    paper.add_argument("--fleet", action="store_true", help="with the fleet section (results/tables/fleet-summary.json)")
    paper.set_defaults(func=_cmd_paper)

    blog = sub.add_parser("blog", help="one self-contained HTML page per study from results/")
    blog.add_argument("--results", default="results")
    blog.add_argument("--out", default="results/blog", help="folder for <study>.html")
    blog.add_argument("--fleet", action="store_true", help="with each host's verdicts (results/tables/fleet-summary.json)")
    blog.add_argument("--study", action="append", choices=names(), help="only this study (repeatable; default: every study with a summary)")
    blog.set_defaults(func=_cmd_blog)

    fleet = sub.add_parser("fleet", help="the fleet summary: every host's verdicts, provenance and spread")
    fleet.add_argument("--results", default="results")
    fleet.add_argument("--out", default="results/tables/fleet-summary.json")
    fleet.add_argument("hosts", nargs="+", help="the hosts, the first one's results in RESULTS, the others' in RESULTS/hosts/<host>")
    fleet.set_defaults(func=_cmd_fleet)

    compare = sub.add_parser("compare", help="B's runs against A's: faster, slower or the same at every point")
    compare.add_argument("a", help="A: data/runs/<host>, a results directory, or a host of the runs root")
    compare.add_argument("b", help="B: as A")
    compare.add_argument("--out", default="results/compare", help="folder for compare.json and compare.html")
    compare.add_argument("--runs-root", default="data/runs", help="where host names are looked up (default: %(default)s)")
    compare.add_argument("--configfile", help="read compare.margin from this config")
    compare.add_argument("--margin", type=float, help="x/÷ this counts as the same (default: compare.margin, 1.05)")
    compare.add_argument("--level", type=float, help="the intervals' level (default: the verdict rule's, 0.95)")
    compare.add_argument("--fail-on", choices=["slower"], help="exit 1 when any point is slower (a CI gate)")
    compare.set_defaults(func=_cmd_compare)

    figure = sub.add_parser("figure", help="rerun one study's notebook and the paper from existing data")
    figure.add_argument("study", choices=names())
    figure.add_argument("--configfile", help="default: the config the existing results were measured with")
    figure.set_defaults(func=_cmd_figure)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as exc:
        print(f"boatload: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
