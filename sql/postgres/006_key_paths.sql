-- memoryd schema, version 6: API keys that see one subtree. PostgreSQL. The same model as
-- sql/sqlite/007_key_paths.sql (read there what the column is).
ALTER TABLE api_keys ADD COLUMN path text;
