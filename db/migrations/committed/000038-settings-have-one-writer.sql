--! Previous: sha1:e9023be8565bdbd20bfd73aacc479a480951c642
--! Hash: sha1:c0092b81b3841b700e0f35025441e1e39a899978
--! Message: settings have one writer

--! split: 03-settings-owner.sql
-- Settings have one writer: the API process (RUN_API=true) writes app.settings from its
-- environment at start (api.apply_settings); every other process (a worker started with
-- `npm run worker`, RUN_API=false) only reads them through api.settings_in_force() and logs
-- an error for each setting its environment sets to another value (server/db/settings.ts).

create or replace function api.settings_in_force() returns jsonb
language sql stable security definer
set search_path = pg_catalog, app
as $$
  select coalesce(jsonb_object_agg(key, value order by key), '{}'::jsonb) from app.settings;
$$;
alter function api.settings_in_force() owner to pressroom_definer;
revoke all on function api.settings_in_force() from public;
grant execute on function api.settings_in_force() to pressroom_app;
comment on function api.settings_in_force() is
  'Every setting in force (app.settings) as {key: value}; writes nothing. Called at start (as pressroom_app) by a '
  'process that does not write the settings (a worker-only process), to compare them with its environment.';

comment on function api.apply_settings(jsonb) is
  'Called at start (as pressroom_app) by the API process (RUN_API=true) with its configuration: writes the given '
  'settings after checking every key and value (400 VALIDATION_FAILED otherwise); returns every setting in force. '
  'A worker-only process does not call it: it reads api.settings_in_force().';

comment on table app.settings is
  'The configuration the rules read (app.setting). Written at start by the API process (RUN_API=true) through '
  'api.apply_settings from its environment (README.md, "Configuration"); a worker-only process reads it through '
  'api.settings_in_force() and never writes it. Readable by the roles that run rules, by BI through nothing.';
