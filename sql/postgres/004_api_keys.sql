-- memoryd schema, version 4: memoryd's own API keys. PostgreSQL. The same model as
-- sql/sqlite/004_api_keys.sql (read there what the columns are).

CREATE TABLE api_keys (
    id         text   PRIMARY KEY,
    hash       bytea  NOT NULL UNIQUE,
    tenant     text   NOT NULL,
    scope      text   NOT NULL CHECK (scope IN ('read', 'write', 'admin')),
    name       text   NOT NULL DEFAULT '',
    created_at bigint NOT NULL,
    revoked_at bigint
);

CREATE INDEX api_keys_tenant ON api_keys (tenant, id);
