#!/usr/bin/env bash
# The authenticating proxy's software on Debian 12: nginx (1.22, with Debian's security
# fixes). docker/proxy.Dockerfile runs it; so does tests/deploy/container.test.mjs,
# outside any container. The configuration is docker/nginx.conf.
#
#   docker/install-proxy.sh [--container-logs] [--clean-apt]
#
#   --container-logs  send nginx's access log (/var/log/nginx/access.log) to standard
#                     output, for `docker logs` (its error log already goes to stderr);
#                     on a host nginx keeps writing the file
#   --clean-apt       remove apt's package lists and downloaded archives afterwards
#
# Run as root. Idempotent.
set -euo pipefail

container_logs=0
clean_apt=0
for a in "$@"; do
  case "$a" in
    --container-logs) container_logs=1 ;;
    --clean-apt) clean_apt=1 ;;
    *) echo "install-proxy: unknown argument: $a" >&2; exit 2 ;;
  esac
done
[[ $(id -u) -eq 0 ]] || { echo "install-proxy: run as root" >&2; exit 1; }

if ! dpkg-query -W -f='${Status}' nginx 2>/dev/null | grep -q "install ok installed"; then
  echo "install-proxy: installing nginx" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx >/dev/null
fi
if ((clean_apt)); then
  apt-get clean
  rm -rf /var/lib/apt/lists/*
fi
if ((container_logs)); then
  install -d /var/log/nginx
  ln -sfn /dev/stdout /var/log/nginx/access.log
fi
