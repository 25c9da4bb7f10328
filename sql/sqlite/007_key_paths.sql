-- memoryd schema, version 7: API keys that see one subtree (README, "API keys";
-- docs/behaviour.md 15.3). `path` is the canonical directory below /memories a key may see and
-- change (`memoryd keys create --path`); NULL: the whole tenant, as every key made before.
ALTER TABLE api_keys ADD COLUMN path TEXT;
