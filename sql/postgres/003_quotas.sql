-- memoryd schema, version 3: quotas. PostgreSQL. The same model as sql/sqlite/003_quotas.sql
-- (read there what the columns are). The file count is kept by statement triggers, one
-- update of the tenant's row per statement (a subtree's delete is one statement), under the
-- tenant's advisory lock that every writer holds.

ALTER TABLE tenants ADD COLUMN files bigint NOT NULL DEFAULT 0;
ALTER TABLE tenants ADD COLUMN max_bytes bigint;
ALTER TABLE tenants ADD COLUMN max_files bigint;

UPDATE tenants t SET files = c.n
    FROM (SELECT tenant, count(*) AS n FROM entries WHERE kind = 0 GROUP BY tenant) c
    WHERE t.id = c.tenant;

CREATE FUNCTION memoryd_files_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE tenants t SET files = t.files + c.n
        FROM (SELECT tenant, count(*) AS n FROM memoryd_new WHERE kind = 0 GROUP BY tenant) c
        WHERE t.id = c.tenant;
    RETURN NULL;
END
$$;

CREATE FUNCTION memoryd_files_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE tenants t SET files = t.files - c.n
        FROM (SELECT tenant, count(*) AS n FROM memoryd_old WHERE kind = 0 GROUP BY tenant) c
        WHERE t.id = c.tenant;
    RETURN NULL;
END
$$;

CREATE TRIGGER entries_files_insert AFTER INSERT ON entries
    REFERENCING NEW TABLE AS memoryd_new FOR EACH STATEMENT
    EXECUTE FUNCTION memoryd_files_inserted();
CREATE TRIGGER entries_files_delete AFTER DELETE ON entries
    REFERENCING OLD TABLE AS memoryd_old FOR EACH STATEMENT
    EXECUTE FUNCTION memoryd_files_deleted();
