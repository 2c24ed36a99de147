#!/bin/sh
# Install the system tools `make reproduce` (or, with "test", `make test`)
# needs and this machine lacks. As root on Debian or Ubuntu: apt-get, with one
# line saying what. Otherwise: one message listing every missing tool and the
# command that installs them here; what a run then cannot do, the workflow's
# preflight names before anything is mounted.
#
# The studies' tools come from the one table, src/boatload/base/tools.py, read
# with sed because python3 itself may be among the missing.
set -eu
purpose=${1:-reproduce}
cd "$(dirname "$0")/.."

missing_commands=""
missing_packages=""
want() {  # want COMMAND DEBIAN-PACKAGE
    if ! command -v "$1" >/dev/null 2>&1; then
        missing_commands="$missing_commands $1"
        case " $missing_packages " in *" $2 "*) ;; *) missing_packages="$missing_packages $2" ;; esac
    fi
}

want python3 python3
want cc build-essential
want make make
# uv comes from pip when it is missing (the Makefile's env target).
if ! command -v uv >/dev/null 2>&1 && ! python3 -m uv --version >/dev/null 2>&1 \
    && ! python3 -m pip --version >/dev/null 2>&1; then
    missing_commands="$missing_commands pip"
    missing_packages="$missing_packages python3-pip"
fi
table=$(sed -n 's/^ *Tool("\([^"]*\)", "\([^"]*\)".*/\1 \2/p' src/boatload/base/tools.py)
[ -n "$table" ] || { echo "boatload bootstrap: no tools found in src/boatload/base/tools.py" >&2; exit 2; }
while read -r command package; do want "$command" "$package"; done <<EOF
$table
EOF
# the device-model filter (native/devmodel/) builds against nbdkit's filter API
if [ ! -e /usr/include/nbdkit-filter.h ] && ! command -v nix >/dev/null 2>&1; then
    missing_commands="$missing_commands nbdkit-filter.h"
    missing_packages="$missing_packages nbdkit-plugin-dev"
fi
if [ "$purpose" = test ]; then
    want pdftotext poppler-utils      # the paper tests read the PDF's text
    want chromium chromium            # the blog pages rendered headless at 1280 and 420 px
    want nix-instantiate nix-bin      # the flake parse check
    want debootstrap debootstrap      # the fresh-machine test
    want git git                      # the tests clone the repository
    # tests/test_slurm.py: a real SLURM cluster on this machine (scripts/slurm-cluster.sh)
    want slurmctld slurmctld
    want slurmd slurmd
    want sinfo slurm-client
    want munged munge
    want clang "clang libclang-rt-14-dev"  # make -C native fuzz-smoke; the runtimes (libclang_rt.fuzzer, asan, ubsan) have no command
fi
[ -z "$missing_packages" ] && exit 0

distro=""
os_release=${BOATLOAD_OS_RELEASE:-/etc/os-release}  # another file only in tests/test_bootstrap.py
if [ -r "$os_release" ]; then
    # shellcheck source=/dev/null
    distro=$(. "$os_release"; echo "${ID:-} ${ID_LIKE:-}")
fi
case " $distro " in *" debian "*|*" ubuntu "*) apt_like=yes ;; *) apt_like=no ;; esac

if [ "$apt_like" = yes ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "boatload: installing the missing tools with apt-get:$missing_packages"
    export DEBIAN_FRONTEND=noninteractive
    log=$(mktemp)
    # shellcheck disable=SC2086  # one word per package
    if apt-get update -qq >"$log" 2>&1 \
        && apt-get install -y -qq --no-install-recommends $missing_packages >>"$log" 2>&1; then
        rm -f "$log"
        exit 0
    fi
    cat "$log" >&2
    echo "boatload: apt-get could not install:$missing_packages (its output is above)" >&2
    rm -f "$log"
    exit 1
fi

if [ "$apt_like" = yes ]; then
    how="sudo apt-get install$missing_packages"
else
    # Other distributions: the same names except for these.
    other=$(echo "$missing_packages" | sed 's/build-essential/gcc make/; s/ mount / util-linux /')
    case " $distro " in
        *" fedora "*|*" rhel "*|*" centos "*) how="sudo dnf install$other" ;;
        *" arch "*) how="sudo pacman -S$other" ;;
        *" suse "*|*" opensuse "*) how="sudo zypper install$other" ;;
        *) how="install them with your package manager (Debian names:$missing_packages), or run 'nix run .#reproduce'" ;;
    esac
fi
echo "boatload: missing tools:$missing_commands; to install them: $how" >&2
# Without an interpreter, a compiler, make or a way to get uv nothing can run;
# any other tool only limits what can be measured (the preflight says what).
for essential in python3 cc make pip; do
    case " $missing_commands " in *" $essential "*) exit 1 ;; esac
done
exit 0
