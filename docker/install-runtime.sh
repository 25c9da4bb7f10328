#!/usr/bin/env bash
# What memoryd needs to run on Debian 12, and nothing to build it: its shared libraries,
# and a system user `memoryd` (no login, no password) owning the state directory
# /var/lib/memoryd, where the database lives. The runtime stage of docker/Dockerfile runs
# it; so does tests/deploy/container.test.mjs, outside any container.
#
#   docker/install-runtime.sh [--uid N] [--clean-apt]
#
#   --uid N      give the user and its group the id N. An image wants a fixed number:
#                a volume keeps its owner across rebuilds, and Kubernetes can check
#                runAsNonRoot against a numeric USER. Without it: the next free system id.
#   --clean-apt  remove apt's package lists and downloaded archives afterwards (they
#                would only make the image layer bigger).
#
# Run as root. Idempotent: installed packages and an existing user are left alone (an
# existing user with another id than --uid is an error); the directory's owner and mode
# are set every time.
set -euo pipefail

uid=""
clean_apt=0
while (($#)); do
  case "$1" in
    --uid)
      [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || { echo "install-runtime: --uid needs a number" >&2; exit 2; }
      uid=$2
      shift 2
      ;;
    --clean-apt) clean_apt=1; shift ;;
    *) echo "install-runtime: unknown argument: $1" >&2; exit 2 ;;
  esac
done
[[ $(id -u) -eq 0 ]] || { echo "install-runtime: run as root" >&2; exit 1; }

# The libraries memoryd links (readelf -d build/memoryd: NEEDED), libc6 aside, which every
# Debian has. No ca-certificates: memoryd makes no outgoing connections (libcurl serves
# `memoryd admin`, which talks to the memoryd beside it over plain HTTP). No curl: see
# docker/healthcheck.sh.
pkgs=(libmicrohttpd12 libjansson4 libsqlite3-0 libutf8proc2 libpq5 libssl3 libsodium23 libarchive13 libcurl4 libpcre2-8-0 libzstd1)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-runtime: installing ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if ((clean_apt)); then
  apt-get clean
  rm -rf /var/lib/apt/lists/*
fi

home=/var/lib/memoryd
if existing=$(getent passwd memoryd); then
  have=$(cut -d: -f3 <<<"$existing")
  if [[ -n "$uid" && "$have" != "$uid" ]]; then
    echo "install-runtime: user memoryd exists with uid $have, not $uid" >&2
    exit 1
  fi
else
  if [[ -n "$uid" ]]; then
    getent group memoryd >/dev/null || groupadd --system -K SYS_GID_MAX="$uid" --gid "$uid" memoryd
    # -K: a fixed id is usually above the system range (SYS_UID_MAX, 999); say so.
    useradd --system -K SYS_UID_MAX="$uid" --uid "$uid" --gid memoryd --home-dir "$home" \
      --no-create-home --shell /usr/sbin/nologin --comment memoryd memoryd
  else
    useradd --system --user-group --home-dir "$home" --no-create-home \
      --shell /usr/sbin/nologin --comment memoryd memoryd
  fi
  echo "install-runtime: created user memoryd ($(id memoryd))" >&2
fi
install -d -o memoryd -g memoryd -m 0750 "$home"
