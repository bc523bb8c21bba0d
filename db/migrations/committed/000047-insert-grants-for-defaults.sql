--! Previous: sha1:a0b908bfeab924ba417673cb627b408327ba8415
--! Hash: sha1:b2e69b1b8d57e9e70851e350ca19e9b9a7069818
--! Message: insert grants for defaults

--! split: 01-current.sql
-- Column grants Citus can use (docs/citus.md, "Grants"). The internal roles insert into some
-- tables through column grants: pressroom_api may insert a user's name and email, not its id or
-- created_at, which their defaults fill. On a single PostgreSQL a default needs no privilege.
-- Citus evaluates the defaults on the coordinator and sends the shard (on a worker) an INSERT
-- that names every column, so the shard refuses it:
--   permission denied for table api_keys_102008
--   (INSERT INTO app.api_keys_102008 (id, organization_id, ..., created_at) VALUES (...))
-- A role that may insert some columns of a table may therefore insert each column that has a
-- default too. The functions that insert name only the columns they set, as before, and the
-- defaults fill the rest; tests/db/10-distributable.test.sql fails on a table granted the old
-- way.
grant insert (id, created_at) on app.api_keys to pressroom_api;
grant insert (body_version, created_at, updated_at) on app.articles to pressroom_api;
grant insert (id, attachments, reactions, has_original, moderation, attempts, occurred_at, created_at, updated_at) on app.inbox_messages to pressroom_api;
grant insert (id, created_at, updated_at, connection_state) on app.integrations to pressroom_api;
grant insert (id, created_at) on app.post_metric_snapshots to pressroom_api;
grant insert (id, created_at, updated_at) on app.users to pressroom_api;
grant insert (id, seq, state, attempts, next_attempt_at, created_at) on app.webhook_deliveries to pressroom_api;
grant insert (id, seq, created_at) on app.webhook_delivery_log to pressroom_api;
grant insert (id, seq, occurred_at) on app.webhook_events to pressroom_api;
grant insert (consecutive_failures, created_at, updated_at) on app.webhook_subscriptions to pressroom_api;
grant insert (created_at, updated_at) on app.workspace_members to pressroom_api;
