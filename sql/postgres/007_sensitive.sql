-- memoryd schema, version 7: a tenant's own --sensitive mode. PostgreSQL. The same column as
-- sql/sqlite/008_sensitive.sql (read there what it holds).

ALTER TABLE tenants ADD COLUMN sensitive smallint CHECK (sensitive IN (0, 1, 2));
