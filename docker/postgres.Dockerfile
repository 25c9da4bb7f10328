# syntax=docker/dockerfile:1
# The PostgreSQL of compose.yaml's postgres profile: Debian 12's postgresql-15 on
# debian:12-slim. Built by docker/compose.yaml (context: docker/); alone:
#   docker build -f docker/postgres.Dockerfile -t memoryd-postgres docker
# On its first start (an empty volume) docker/postgres-entrypoint.sh makes the cluster, a
# role memoryd (password: MEMORYD_PG_PASSWORD) and its database memoryd.
#
# Debian's package rather than the postgres:15 image, for the reasons the proxy uses
# Debian's nginx: the major version the tests run (tests/lib/pg.mjs, Debian's postgresql-15),
# Debian's security fixes, and a first start the tests carry out for real
# (tests/deploy/container.test.mjs runs install-postgres.sh and the entrypoint; it cannot
# run another base image). docker/README.md says more.
#
# Pinned by tag; for reproducible builds pin the digest too (see docker/Dockerfile).

FROM debian:12-slim
COPY install-postgres.sh postgres-entrypoint.sh /usr/local/lib/memoryd/
RUN /usr/local/lib/memoryd/install-postgres.sh --clean-apt
ENV PGDATA=/var/lib/postgresql/data
VOLUME ["/var/lib/postgresql/data"]
WORKDIR /var/lib/postgresql
USER postgres
EXPOSE 5432
# PostgreSQL's fast shutdown: open transactions are rolled back, the server checkpoints
# and exits (SIGTERM, its "smart" shutdown, would wait for memoryd's connections to end).
STOPSIGNAL SIGINT
# Ready when it answers on TCP, which it does only once the first start's set-up is done.
HEALTHCHECK --interval=5s --timeout=3s --start-period=60s --retries=3 \
    CMD ["/usr/lib/postgresql/15/bin/pg_isready", "-q", "-h", "127.0.0.1", "-p", "5432"]
ENTRYPOINT ["/usr/local/lib/memoryd/postgres-entrypoint.sh"]
