#!/usr/bin/env bash
# Install what memoryd needs on Debian 12 (run as root; uses apt-get).
#   scripts/setup.sh          build dependencies
#   scripts/setup.sh --test   also what the test suite needs (Node.js, npm, ..., and what
#                             the benchmark smoke needs)
#   scripts/setup.sh --bench  build dependencies and what bench/run.sh needs (wrk, Node.js,
#                             the sqlite3 CLI)
# Packages already installed are left alone; nothing is installed twice.
set -euo pipefail

pkgs=(build-essential cmake pkg-config libmicrohttpd-dev libjansson-dev libsqlite3-dev libutf8proc-dev libpq-dev
  libssl-dev libsodium-dev libarchive-dev libcurl4-openssl-dev libpcre2-dev libzstd-dev curl help2man)
mode="${1:-}"
node_needed=0
if [[ "$mode" == "--test" || "$mode" == "--bench" ]]; then
  # wrk: the HTTP load generator of bench/ (ctest runs a short smoke of it); sqlite3: the
  # benchmark writes its 100,000-file database with the CLI.
  pkgs+=(wrk sqlite3)
  node_needed=1
fi
if [[ "$mode" == "--test" || "$mode" == "--bench" ]]; then
  # PostgreSQL 15: the suite and the benchmark start servers of their own (tests/lib/pg.mjs,
  # bench/); psql creates their databases; pgbench is the benchmark's reference.
  pkgs+=(postgresql-15 postgresql-client-15)
fi
if [[ "$mode" == "--test" ]]; then
  # valgrind: memcheck runs (scripts/valgrind.sh); the rest: static checks (scripts/lint.sh).
  # (sqlite3, above, also checks integrity after the crash tests.)
  pkgs+=(valgrind clang-format clang-tidy cppcheck)
  # clang and its runtime: the libFuzzer targets (scripts/build.sh --fuzz).
  pkgs+=(clang libclang-rt-14-dev)
  # The deployment tests (tests/deploy): nginx runs docker/nginx.conf for real,
  # systemd's systemd-analyze checks docker/memoryd.service and strace memoryd's system
  # calls against its filter, shellcheck lints docker/*.sh.
  pkgs+=(nginx systemd strace shellcheck)
  # python3: runs the plain-HTTP example of docs/deploy.md (tests/deploy/readme-examples.test.mjs).
  pkgs+=(python3)
  # The Python client's tests (clients/python, run by tests/clients/python.test.mjs): pytest runs
  # them with Debian's python3; python3-venv, python3-pip and python3-setuptools install the
  # package offline into a virtual environment (pip install --no-build-isolation --no-index).
  pkgs+=(python3-pytest python3-venv python3-pip python3-setuptools)
  # prometheus: its promtool checks GET /metrics, and a Prometheus server of the test's own
  # scrapes a live memoryd (tests/integration/metrics.test.mjs); the package's system
  # service is not used.
  pkgs+=(prometheus)
fi
# Node.js >= 18.20 and npm run the HTTP, conformance and OpenAPI tests and the benchmark
# (the locked tools of tests/ and docker/ need 18.20; see their package.json "engines").
# Use the machine's own when it is recent enough; else Debian 12's nodejs (18.20) and npm
# (9.2), installed or upgraded.
node_min=18.20.0
node_ok() {
  command -v node >/dev/null && command -v npm >/dev/null &&
    node -e 'const [h, w] = [process.versions.node, process.argv[1]].map((v) => v.split(".").map(Number));
      const d = h[0] - w[0] || h[1] - w[1] || h[2] - w[2]; process.exit(d >= 0 ? 0 : 1);' "$node_min"
}
node_upgrade=()
if ((node_needed)) && ! node_ok; then
  node_upgrade=(nodejs npm)
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
missing+=("${node_upgrade[@]}")
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  # Debian's postgresql package makes and starts a cluster of its own ("main"), which nothing
  # here uses: not that one.
  if [[ " ${missing[*]} " == *" postgresql-15 "* && ! -e /etc/postgresql-common/createcluster.d/memoryd.conf ]]; then
    mkdir -p /etc/postgresql-common/createcluster.d
    echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.d/memoryd.conf
  fi
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if ((node_needed)) && ! node_ok; then
  echo "setup: the tests need Node.js >= $node_min and npm; found node $(node --version 2>/dev/null || echo none)," \
    "npm $(npm --version 2>/dev/null || echo none). Install a newer Node.js (Debian 12's nodejs package is 18.20)." >&2
  exit 1
fi
