#!/usr/bin/env bash
# A clean Debian 12 machine for the repository: debootstrap a minbase root
# (plus make, nothing else), clone the committed HEAD of this repository into
# it at /boatload, and run one command there as root, in a private mount
# namespace with /proc, /sys and /dev, so that every mount made for it (and by
# it) disappears when the command ends, whatever happens.
#
#   scripts/fresh-machine.sh [options] DIR -- COMMAND [ARG...]
#   scripts/fresh-machine.sh /var/tmp/fresh -- make reproduce CONFIG=config/ci.yaml
#
# Everything else the repository needs (python3, a C compiler, the
# file-system tools, uv, the Python environment) must come from the
# repository itself: `make` runs scripts/bootstrap.sh.
#
# After the command, whatever still runs in the namespace is killed, and what
# a run of it could have left on the host is checked: loop devices backed by
# files under DIR (or the run's private /dev/shm), swap files under DIR,
# mounts under DIR/boatload, cgroups the run's ledger records that still
# exist (not any new boatload-* cgroup: other runs on the host make their own). If
# the command failed or anything is left, `boatload cleanup --force` runs in
# the root before the script leaves (and, should that not be enough,
# swapoff/losetup -d from the host for what is under DIR).
#
# Exit status: the command's (128+N if it died of signal N); 70 if the command
# succeeded but left something behind (cleaned up here, and said on stderr);
# 2 for usage errors; 1 if the root could not be made.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: scripts/fresh-machine.sh [--reuse] [--source REPO] [--mirror URL] DIR -- COMMAND [ARG...]

  DIR            where the Debian 12 root is made (must not exist, or be empty)
  COMMAND        runs as root inside the root, in /boatload (the clone)
  --reuse        if DIR already holds a root (DIR/etc/debian_version), use it
                 instead of running debootstrap; the clone is made afresh
  --source REPO  the repository to clone (default: the one this script is in);
                 its committed HEAD is what runs, not the working tree
  --mirror URL   Debian mirror (default: http://deb.debian.org/debian)
EOF
}

say() { echo "fresh-machine: $*" >&2; }
die() { say "$*"; exit "${2:-1}"; }

reuse=no
source_repo=$(cd "$(dirname "$0")/.." && pwd)
mirror=http://deb.debian.org/debian
while [ $# -gt 0 ]; do
    case $1 in
        --reuse) reuse=yes; shift ;;
        --source) [ $# -ge 2 ] || { usage >&2; exit 2; }; source_repo=$2; shift 2 ;;
        --source=*) source_repo=${1#*=}; shift ;;
        --mirror) [ $# -ge 2 ] || { usage >&2; exit 2; }; mirror=$2; shift 2 ;;
        --mirror=*) mirror=${1#*=}; shift ;;
        -h|--help) usage; exit 0 ;;
        --) usage >&2; exit 2 ;;
        -*) say "unknown option $1"; usage >&2; exit 2 ;;
        *) break ;;
    esac
done
if [ $# -lt 3 ] || [ "$2" != -- ]; then usage >&2; exit 2; fi
dir=$1
shift 2

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mounts); running as uid $(id -u)" 2
for tool in debootstrap unshare chroot git losetup mount; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool is not installed on this host" 2
done
dir=$(realpath -m -- "$dir")
case $dir in /) die "refusing to use / as the root" 2 ;; esac
source_repo=$(git -C "$source_repo" rev-parse --show-toplevel) \
    || die "$source_repo is not a git repository" 2
commit=$(git -C "$source_repo" rev-parse --verify HEAD) || die "$source_repo has no commit" 2

# Nothing may be mounted under DIR from the host's view (a leftover of some
# earlier run, e.g. a bind of /dev): we are about to write and delete there.
mounted_under() {
    awk -v d="$1/" 'index($5 "/", d) == 1 { print $5 }' /proc/self/mountinfo
}
if [ -n "$(mounted_under "$dir")" ]; then
    die "something is mounted under $dir: $(mounted_under "$dir" | tr '\n' ' ')" 2
fi

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'; }

# 1. the root
if [ "$reuse" = yes ] && [ -f "$dir/etc/debian_version" ]; then
    say "reusing the root in $dir (Debian $(cat "$dir/etc/debian_version"))"
else
    if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
        die "$dir exists and is not empty (use --reuse to run in a root made before)" 2
    fi
    mkdir -p "$dir"
    say "debootstrap bookworm (minbase, plus make) into $dir from $mirror"
    t0=$(now)
    if ! debootstrap --variant=minbase --include=make bookworm "$dir" "$mirror" >"$dir.debootstrap.log" 2>&1; then
        tail -n 30 "$dir.debootstrap.log" >&2
        die "debootstrap failed (log: $dir.debootstrap.log)"
    fi
    rm -f "$dir.debootstrap.log"
    say "debootstrap took $(secs "$t0" "$(now)") s"
fi

# 2. The machine's network settings, not software: the name server, and the
# CA bundle this host trusts (its outbound TLS may be signed by a local CA,
# which Debian's ca-certificates does not know). A new machine on this
# network would be set up with them too. The bundle also gets a path of its
# own that no package owns, and the TLS variables point there inside:
# installing ca-certificates (python3-pip pulls it in) regenerates
# /etc/ssl/certs/ca-certificates.crt without the local CA.
host_ca=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
inner_ca=/etc/fresh-machine/ca-certificates.crt
cp -L /etc/resolv.conf "$dir/etc/resolv.conf"
have_ca=no
if [ -f "$host_ca" ]; then
    mkdir -p "$dir/etc/fresh-machine" "$dir/etc/ssl/certs"
    cp -L "$host_ca" "$dir$inner_ca"
    cp -L "$host_ca" "$dir/etc/ssl/certs/ca-certificates.crt"
    have_ca=yes
fi

# 3. the clone: the committed HEAD of the source repository
if [ -e "$dir/boatload" ]; then
    [ -z "$(mounted_under "$dir/boatload")" ] || die "something is mounted under $dir/boatload"
    rm -rf --one-file-system "$dir/boatload"
fi
git -c safe.directory='*' clone --quiet --no-checkout "$source_repo" "$dir/boatload"
git -c safe.directory='*' -C "$dir/boatload" checkout --quiet --detach "$commit"
say "cloned $source_repo at $(git -C "$dir/boatload" log -1 --format='%h %s' | cut -c1-100)"

# 4. the environment inside: minimal, plus this network's TLS and proxy settings
env_vars=(
    HOME=/root
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    LANG=C.UTF-8
    TERM="${TERM:-dumb}"
    DEBIAN_FRONTEND=noninteractive
)
for name in SSL_CERT_FILE REQUESTS_CA_BUNDLE CURL_CA_BUNDLE PIP_CERT GIT_SSL_CAINFO NODE_EXTRA_CA_CERTS; do
    # set on the host: the same bundle, at its path inside
    if [ -n "${!name:-}" ] && [ "$have_ca" = yes ]; then env_vars+=("$name=$inner_ca"); fi
done
while IFS= read -r name; do
    case $name in
        PIP_CERT) ;;
        PIP_*|UV_INDEX*|UV_DEFAULT_INDEX|UV_EXTRA_INDEX_URL|UV_NATIVE_TLS|UV_HTTP_TIMEOUT|UV_INSECURE_HOST \
        |http_proxy|https_proxy|no_proxy|all_proxy|HTTP_PROXY|HTTPS_PROXY|NO_PROXY|ALL_PROXY)
            env_vars+=("$name=${!name}") ;;
    esac
done < <(compgen -e)

# 5. the run, in a private mount namespace. The inner shell (outside the
# chroot, inside the namespace) mounts /proc, /sys (recursively: the cgroup
# hierarchies are mounted below it) and /dev (recursively: loop devices; then
# a private tmpfs on /dev/shm, so that nothing the run writes there outlives
# it), runs the command, and checks and cleans up after it.
inner=$(cat <<'INNER'
set -uo pipefail
root=$1; n=$2; shift 2
env_vars=("${@:1:n}"); shift "$n"
say() { echo "fresh-machine: $*" >&2; }

# (unshare made every mount private: nothing mounted here reaches the host)
# shellcheck disable=SC2015
mount -t proc proc "$root/proc" \
    && mount --rbind /sys "$root/sys" \
    && mount --rbind /dev "$root/dev" \
    && mount -t tmpfs -o mode=1777,nosuid,nodev fresh-machine-shm "$root/dev/shm" \
    || { say "could not mount /proc, /sys and /dev in the root"; exit 1; }

ns=$(readlink /proc/$$/ns/mnt)
others_in_ns() {  # every process in this mount namespace but this shell
    local p
    for p in /proc/[0-9]*; do
        p=${p#/proc/}
        [ "$p" != "$$" ] && [ "$p" != "$BASHPID" ] && [ "$(readlink "/proc/$p/ns/mnt" 2>/dev/null)" = "$ns" ] && echo "$p"
    done
}
# The cgroups the run made: its scratch directories' ledgers (results/scratch in
# the clone) record each before it is made, one compact JSON object a line
# (boatload.provision.ledger), its path as the root sees it (/sys is the host's).
cgroups_made() {
    find "$root/boatload/results" -name ledger.jsonl -type f 2>/dev/null | while read -r ledger; do
        grep '"op":"create"' "$ledger" | grep '"kind":"cgroup"' | sed -n 's/.*"path":"\([^"]*\)".*/\1/p'
    done | sort -u
}
leftovers() {
    # loop devices whose image is under the root (its private /dev/shm included)
    losetup --list --noheadings --raw --output NAME,BACK-FILE 2>/dev/null \
        | awk -v r="$root/" 'index($2, r) == 1 { print "loop device " $1 " on " $2 }'
    awk -v r="$root/" 'NR > 1 && index($1, r) == 1 { print "swap " $1 }' /proc/swaps
    awk -v r="$root/boatload/" 'index($5, r) == 1 { print "mount " $5 }' /proc/self/mountinfo
    local c
    for c in $(cgroups_made); do
        [ -d "$c" ] && echo "cgroup $c"
    done
}

got=""
# shellcheck disable=SC2317  # (called by the traps)
forward() { got=$1; [ -n "${cmd:-}" ] && kill -s "$1" "$cmd" 2>/dev/null; }
trap 'forward TERM' TERM
trap 'forward HUP' HUP
trap 'forward INT' INT 2>/dev/null  # (ignored on entry when started in the background)

# env -i: nothing of the host's environment but what is passed; INT and QUIT
# back to their defaults (a background job of a shell starts with them ignored).
chroot "$root" /usr/bin/env -i --default-signal=INT,QUIT "${env_vars[@]}" \
    /bin/sh -c 'cd /boatload && exec "$@"' sh "$@" <&0 &
cmd=$!
while :; do
    wait "$cmd"; status=$?
    kill -0 "$cmd" 2>/dev/null || break
done
cmd=""

# Whatever the command left running in the namespace goes now.
left=$(others_in_ns)
# shellcheck disable=SC2086  # one pid per word
if [ -n "$left" ]; then
    say "killing what the command left running: $(echo "$left" | paste -sd " ")"
    kill -TERM $left 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do [ -z "$(others_in_ns)" ] && break; sleep 1; done
    left=$(others_in_ns); [ -z "$left" ] || kill -KILL $left 2>/dev/null
    sleep 1
fi

found=$(leftovers)
if [ "$status" != 0 ] || [ -n "$found" ]; then
    [ -z "$found" ] || say "the command left on the host: $(echo "$found" | paste -sd ';')"
    if [ -x "$root/boatload/.venv/bin/boatload" ]; then
        say "running boatload cleanup --force in the root"
        chroot "$root" /usr/bin/env -i "${env_vars[@]}" \
            /bin/sh -c 'cd /boatload && exec .venv/bin/boatload cleanup --force' >&2 \
            || say "boatload cleanup --force failed (status $?)"
    fi
    still=$(leftovers)
    if [ -n "$still" ]; then
        # last resort, from the host, and only what is under the root
        say "still left after boatload cleanup: $(echo "$still" | paste -sd ';'); undoing it from the host"
        awk -v r="$root/" 'NR > 1 && index($1, r) == 1 { print $1 }' /proc/swaps | while read -r s; do swapoff "$s"; done
        awk -v r="$root/boatload/" 'index($5, r) == 1 { print $5 }' /proc/self/mountinfo | sort -r \
            | while read -r m; do umount -l "$m"; done
        losetup --list --noheadings --raw --output NAME,BACK-FILE \
            | awk -v r="$root/" 'index($2, r) == 1 { print $1 }' | while read -r l; do losetup -d "$l"; done
        still=$(leftovers)
        [ -z "$still" ] || say "COULD NOT UNDO: $(echo "$still" | paste -sd ';')"
    fi
    if [ "$status" = 0 ] && [ -n "$found" ]; then
        say "the command succeeded but left the above behind"
        status=70
    fi
fi
[ -z "$got" ] || say "stopped by SIG$got"
exit "$status"
INNER
)

t0=$(now)
say "running in $dir/boatload: $*"
unshare --mount --propagation private -- bash -c "$inner" fresh-machine-ns "$dir" "${#env_vars[@]}" "${env_vars[@]}" "$@" <&0 &
ns_pid=$!
# shellcheck disable=SC2317  # (called by the traps)
stop() { kill -s "$1" "$ns_pid" 2>/dev/null || true; }
trap 'stop TERM' TERM INT
trap 'stop HUP' HUP
while :; do
    status=0; wait "$ns_pid" || status=$?
    kill -0 "$ns_pid" 2>/dev/null || break
done
trap - TERM INT HUP
say "the command ended with status $status after $(secs "$t0" "$(now)") s"
if [ -n "$(mounted_under "$dir")" ]; then
    say "STILL MOUNTED under $dir: $(mounted_under "$dir" | tr '\n' ' ')"
    [ "$status" != 0 ] || status=70
fi
exit "$status"
