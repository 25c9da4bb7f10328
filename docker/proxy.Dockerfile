# syntax=docker/dockerfile:1
# The authenticating proxy in front of memoryd: Debian 12's nginx with docker/nginx.conf.
# Built by docker/compose.yaml (context: docker/); alone:
#   docker build -f docker/proxy.Dockerfile -t memoryd-proxy docker
# The API keys are not in the image: mount them at /etc/nginx/tenants.map (nginx.conf
# includes it; nginx does not start without it).
#
# Debian's nginx 1.22 rather than the nginx:1.22 image: the same version as the one the
# tests run (tests/deploy/nginx.test.mjs), and it still gets Debian's security fixes; the
# 1.22 branch of the nginx image is no longer updated.
#
# Pinned by tag; for reproducible builds pin the digest too (see docker/Dockerfile).

FROM debian:12-slim
COPY install-proxy.sh healthcheck.sh /usr/local/lib/memoryd/
RUN /usr/local/lib/memoryd/install-proxy.sh --container-logs --clean-apt
COPY nginx.conf /etc/nginx/nginx.conf
EXPOSE 8080
# nginx finishes the requests in flight on SIGQUIT (SIGTERM would cut them off).
STOPSIGNAL SIGQUIT
# GET /healthz through nginx to memoryd: healthy only when both are.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["/usr/local/lib/memoryd/healthcheck.sh", "127.0.0.1", "8080"]
CMD ["nginx", "-g", "daemon off;"]
