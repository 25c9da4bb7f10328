-- memoryd schema, version 2: content hashes, history, the change feed, idempotent retries.
-- PostgreSQL. The same model as sql/sqlite/002_history.sql (read there what each table is).

-- The SHA-256 of every file's content (NULL for directories).
ALTER TABLE entries ADD COLUMN sha256 bytea;
UPDATE entries SET sha256 = sha256(content) WHERE kind = 0;

-- Per-tenant counters, written under the tenant's advisory lock.
ALTER TABLE tenants ADD COLUMN last_version bigint NOT NULL DEFAULT 0;
ALTER TABLE tenants ADD COLUMN last_seq bigint NOT NULL DEFAULT 0;

CREATE TABLE versions (
    tenant         bigint   NOT NULL,
    version        bigint   NOT NULL,
    path           text     COLLATE "C" NOT NULL,
    existed        boolean  NOT NULL,
    sha256         bytea,
    size           bigint,
    time           bigint   NOT NULL,            -- unix time, milliseconds
    command        text     NOT NULL,
    actor          text,
    redacted       boolean  NOT NULL DEFAULT false,
    pruned_through bigint   NOT NULL DEFAULT 0,
    content        bytea,
    PRIMARY KEY (tenant, version)
);
ALTER TABLE versions ALTER COLUMN content SET STORAGE EXTERNAL;
CREATE INDEX versions_path ON versions (tenant, path, version);

CREATE TABLE changes (
    tenant        bigint NOT NULL,
    seq           bigint NOT NULL,
    version       bigint,
    versions      bigint NOT NULL,
    history_bytes bigint NOT NULL,
    time          bigint NOT NULL,
    command       text   NOT NULL,
    paths         text   COLLATE "C" NOT NULL,   -- one per line
    actor         text,
    PRIMARY KEY (tenant, seq)
);

CREATE TABLE idempotency (
    tenant      bigint NOT NULL,
    key         text   COLLATE "C" NOT NULL,
    fingerprint bytea  NOT NULL,
    err         integer NOT NULL,
    body        text   NOT NULL,
    path        text   COLLATE "C",
    time        bigint NOT NULL,
    PRIMARY KEY (tenant, key)
);
CREATE INDEX idempotency_time ON idempotency (time);
