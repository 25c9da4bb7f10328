-- memoryd schema, version 8: a tenant's own --sensitive mode (PUT /v1/tenants/{t}/limits, "sensitive").
-- SQLite. NULL: the server's --sensitive applies; otherwise the mode's number
-- (include/cmd/md_sensitive.h, enum md_sensitive_mode): 0 reject, 1 redact, 2 off.

ALTER TABLE tenants ADD COLUMN sensitive INTEGER CHECK (sensitive IN (0, 1, 2));
