-- memoryd schema: expiry of unused files (--expire-after; docs/behaviour.md, "Expiry of unused
-- files").
-- PostgreSQL. A file's last use is the later of its last change (entries.mtime) and `used`, the
-- last use written back by any instance (views, kept in memory and written at most once per
-- file per --expire-granularity, only ever forward: GREATEST). Not an indexed column, so that
-- the write-back is a HOT update; the content is stored out of line (EXTERNAL), so the update
-- does not copy it. `expire_ms` is the tenant's own window (PUT /v1/tenants/{t}/limits
-- "expire_after"): NULL, --expire-after applies; 0, off; else milliseconds.

ALTER TABLE entries ADD COLUMN used bigint NOT NULL DEFAULT 0;
ALTER TABLE tenants ADD COLUMN expire_ms bigint;
