#!/bin/bash
# Container health check for memoryd (and for the nginx proxy in front of it):
# GET /healthz and exit 0 only for a 200 with memoryd's body {"status":"ok"}.
#
#   healthcheck.sh [HOST [PORT]]
#
# HOST defaults to MEMORYD_LISTEN (0.0.0.0 -> 127.0.0.1, :: -> ::1), PORT to
# MEMORYD_PORT, else 127.0.0.1 and 8080. Answers must come within 2 seconds
# (HEALTHCHECK_READ_TIMEOUT).
#
# Uses bash's /dev/tcp, so the image needs no HTTP client: debian:12-slim has
# bash but no curl or wget, and installing curl would add libcurl, OpenSSL,
# LDAP, SSH and Kerberos libraries to an image that never makes a request of
# its own. memoryd itself has no client mode.
set -u

host=${1:-${MEMORYD_LISTEN:-127.0.0.1}}
port=${2:-${MEMORYD_PORT:-8080}}
read_timeout=${HEALTHCHECK_READ_TIMEOUT:-2}
case "$host" in
  0.0.0.0) host=127.0.0.1 ;;
  :: | "[::]") host=::1 ;;
esac
host=${host#[}
host=${host%]}

fail() {
  echo "unhealthy: $*"
  exit 1
}

{ exec 3<>"/dev/tcp/$host/$port"; } 2>/dev/null || fail "cannot connect to $host port $port"
printf 'GET /healthz HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n' "$host" >&3 ||
  fail "cannot send the request"

IFS= read -r -t "$read_timeout" status <&3 || fail "no answer within ${read_timeout}s"
status=${status%$'\r'}
case "$status" in
  "HTTP/1."[01]" 200"*) ;;
  *) fail "status line: $status" ;;
esac
while IFS= read -r -t "$read_timeout" line <&3; do
  line=${line%$'\r'}
  [[ -z "$line" ]] && break
done
body=""
IFS= read -r -t "$read_timeout" body <&3
exec 3<&-
[[ "$body" == '{"status":"ok"}' ]] || fail "body: $body"
echo "healthy: $body"
