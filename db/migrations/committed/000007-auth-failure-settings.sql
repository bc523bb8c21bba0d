--! Previous: sha1:779c588b4a2bf66d88404356ff213b71f1fe29e7
--! Hash: sha1:d6ec861ba907e9f589b4440353c2d57e4b2dcd8e
--! Message: auth failure settings

--! split: 10-auth-failure-settings.sql
-- The failed-credential limits are settings too (app.settings), like the
-- rate limits they sit beside: api.gate_guarded read them as arguments,
-- which the rest of the rulebook no longer does (db/README.md, "Settings").

insert into app.settings (key, value, kind, minimum, description) values
  ('auth_failure_limit', '30', 'integer', 1,
   'Failed credentials per client address and minute before the address is answered 429 AUTH_THROTTLED (AUTH_FAILURE_LIMIT).'),
  ('auth_failure_audit', '10', 'integer', 0,
   'Failed credentials per client address and minute audited one by one; the rest go in one summary row (AUTH_FAILURE_AUDIT).');

alter function api.gate_guarded(bytea, uuid, text, text, text, text, int, int) set schema app;
alter function app.gate_guarded(bytea, uuid, text, text, text, text, int, int) rename to gate_guarded_with_limits;
revoke all on function app.gate_guarded_with_limits(bytea, uuid, text, text, text, text, int, int) from public, pressroom_app;
comment on function app.gate_guarded_with_limits(bytea, uuid, text, text, text, text, int, int) is
  'The failed-credential guard around api.gate with the limits given; called by api.gate_guarded with the settings in force.';

create function api.gate_guarded(p_token_hash bytea, p_workspace_id uuid, p_class text, p_min_plan text,
  p_bucket text, p_client text)
returns jsonb
language sql volatile security definer
set search_path = pg_catalog, app
as $$
  select app.gate_guarded_with_limits(p_token_hash, p_workspace_id, p_class, p_min_plan, p_bucket, p_client,
    app.setting_int('auth_failure_limit'), app.setting_int('auth_failure_audit'))
$$;
alter function api.gate_guarded(bytea, uuid, text, text, text, text) owner to pressroom_definer;
revoke all on function api.gate_guarded(bytea, uuid, text, text, text, text) from public;
grant execute on function api.gate_guarded(bytea, uuid, text, text, text, text) to pressroom_app;
comment on function api.gate_guarded(bytea, uuid, text, text, text, text) is
  'Runs first for every /v1 call (server/http/pipeline.ts), as pressroom_app: api.gate behind the failed-credential '
  'guard of the client address (p_client, honouring TRUST_PROXY). With auth_failure_limit failed credentials in the '
  'current minute an address is answered 429 AUTH_THROTTLED before its credential is looked at; only the first '
  'auth_failure_audit failures of the minute are audited one by one, the rest in one summary row.';

select app.harden_api_functions();
