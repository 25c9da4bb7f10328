-- memoryd schema, version 4: memoryd's own API keys (README, "API keys").
-- SQLite. A key is "mdk_" and 43 base64url characters (32 random bytes); only its
-- BLAKE2b-256 hash is stored (`hash`, looked up by its unique index). `id` is a short,
-- random, non-secret name of the key for listing, revoking and the request log. `tenant`
-- is the tenant's name (a key may exist before its tenant has data). `revoked_at`: unix
-- time in seconds, NULL while the key is valid.

CREATE TABLE api_keys (
    id         TEXT    PRIMARY KEY,
    hash       BLOB    NOT NULL UNIQUE,
    tenant     TEXT    NOT NULL,
    scope      TEXT    NOT NULL CHECK (scope IN ('read', 'write', 'admin')),
    name       TEXT    NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);

CREATE INDEX api_keys_tenant ON api_keys (tenant, id);
