#!/bin/sh
# fuzz/run.sh TOTAL_SECONDS TARGET... - run the libFuzzer targets built in
# build/fuzz/ one after another, one process each, within TOTAL_SECONDS of
# wall-clock time: each target gets an equal share of what is left, less
# about a second for libFuzzer's start and exit (at least 1 s each). Run
# from native/ (make fuzz and make fuzz-smoke do).
#
# Each target reads its committed seeds (fuzz/corpus/TARGET, never written)
# and its working corpus (build/fuzz/corpus/TARGET, where new inputs go),
# uses fuzz/TARGET.dict if there is one, and writes any crash, leak or
# timeout input to build/fuzz/artifacts/TARGET/. Its whole output is in
# build/fuzz/TARGET.log. One summary line per target: executions,
# executions per second, coverage (libFuzzer's cov: and ft:), corpus size.
# Exit status 1 when any target found something (its report is printed),
# else 0.
set -u
[ $# -ge 2 ] || { echo "usage: fuzz/run.sh TOTAL_SECONDS TARGET..." >&2; exit 2; }
total=$1
shift
targets=$#
left=$#
start=$(date +%s)
out=build/fuzz
failed=""
for t in "$@"; do
    per=$(( (total - ($(date +%s) - start)) / left - 1 ))
    [ "$per" -ge 1 ] || per=1
    left=$((left - 1))
    bin="$out/fuzz_$t"
    [ -x "$bin" ] || { echo "fuzz: $bin is not built (make fuzz-build)" >&2; exit 2; }
    mkdir -p "$out/corpus/$t" "$out/artifacts/$t"
    # no spaces in these paths: $opts is split into words on purpose
    opts="-max_total_time=$per -timeout=10 -rss_limit_mb=2048 -close_fd_mask=1 -print_final_stats=1"
    opts="$opts -artifact_prefix=$out/artifacts/$t/"
    [ -f "fuzz/$t.dict" ] && opts="$opts -dict=fuzz/$t.dict"
    log="$out/$t.log"
    echo "fuzz: $t: $bin $opts $out/corpus/$t fuzz/corpus/$t" >"$log"
    # shellcheck disable=SC2086
    "$bin" $opts "$out/corpus/$t" "fuzz/corpus/$t" >>"$log" 2>&1
    rc=$?
    # "#123456 DONE cov: 612 ft: 2345 corp: 345/12Kb lim: 4096 exec/s: 102880 rss: 60Mb"
    status=$(grep -a -E '^#[0-9]+[[:space:]]' "$log" | tail -n 1)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    cov=$(echo "$status" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
    ft=$(echo "$status" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
    corp=$(echo "$status" | sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p')
    if [ "$rc" -eq 0 ]; then
        echo "fuzz: $t: ok, ${per} s, ${execs:-?} execs (${rate:-?}/s), cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?} inputs"
    else
        artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
        echo "fuzz: $t: FAILED (exit $rc) after ${execs:-?} execs; input ${artifact:-none written}; log $log" >&2
        what=$(grep -a -m 1 -E 'FUZZ PROPERTY VIOLATED|runtime error:|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)' "$log" | cut -c 1-300)
        [ -n "$what" ] && echo "fuzz: $t: $what" >&2
        echo "fuzz: $t: the end of its report:" >&2
        tail -n 40 "$log" >&2
        [ -n "$artifact" ] && echo "fuzz: $t: reproduce with: make -C native fuzz-build && native/$bin native/$artifact" >&2
        failed="$failed $t"
    fi
done
echo "fuzz: $targets targets in $(( $(date +%s) - start )) s"
if [ -n "$failed" ]; then
    echo "fuzz: FAILED:$failed" >&2
    exit 1
fi
exit 0
