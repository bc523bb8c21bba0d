-- Settings in SQL (db/migrations/committed/000003-house-rulebook.sql, split 70-settings.sql): the API process
-- writes its configuration with api.apply_settings, a worker-only process reads it with api.settings_in_force;
-- the rules read app.settings.
begin;
select plan(15);
-- @include personas.sql

set local role pressroom_app;
select is(api.apply_settings('{"allow_signup": true, "trial_days": 7}') ->> 'trial_days', '7',
  'pressroom_app writes settings; the answer is every setting in force');
select is(pg_temp.sqlerr($$select api.apply_settings('{"allow_sign_up": true}')$$), 'PT400 VALIDATION_FAILED',
  'an unknown key is refused');
select is(pg_temp.sqlerr($$select api.apply_settings('{"trial_days": -1}')$$), 'PT400 VALIDATION_FAILED',
  'a value out of range is refused');
select is(pg_temp.sqlerr($$select api.apply_settings('{"default_plan": "gold", "trial_days": 9}')$$), 'PT400 VALIDATION_FAILED',
  'a plan that does not exist is refused, and nothing of the call is written');
reset role;
select is((select value from app.settings where key = 'trial_days'), '7'::jsonb, '... trial_days is still 7');
select throws_ok($$set local role pressroom_request; select api.apply_settings('{}')$$, '42501', null,
  'a request cannot write settings');
reset role;

-- A process that does not own the settings (a worker-only process) reads them as pressroom_app
-- (db/migrations/committed/000038-settings-have-one-writer.sql) and writes nothing.
create temp table in_force on commit drop as select jsonb_object_agg(key, value) as v from app.settings;
grant select on in_force to pressroom_app;
set local role pressroom_app;
select is(api.settings_in_force(), (select v from in_force),
  'pressroom_app reads every setting in force as {key: value}');
select ok(api.settings_in_force() @> '{"allow_signup": true, "trial_days": 7}',
  '... the values the last api.apply_settings wrote');
reset role;
select is((select provolatile from pg_proc where oid = 'api.settings_in_force()'::regprocedure), 's'::"char",
  '... and it is stable, so it cannot write');
select throws_ok($$set local role pressroom_request; select api.settings_in_force()$$, '42501', null,
  'a request cannot read settings through it');
reset role;

-- Sign-up reads the policy in force: open, with a 7-day trial.
select is(api.signup('new@example.test', 'hash', 'New Org', 'New WS', pg_temp.token('session:new')) #>> '{organization,plan}',
  'trial', 'sign-up uses default_plan');
select ok((select trial_ends_at between now() + interval '6 days 23 hours' and now() + interval '7 days 1 hour'
           from app.organizations where name = 'New Org'), '... and trial_days');
update app.settings set value = 'false' where key = 'allow_signup';
select is(pg_temp.sqlerr($$select api.signup('late@example.test', 'hash', 'Late', 'WS', '\x00')$$), 'PT403 SIGNUP_CLOSED',
  'with allow_signup off, a further organization is refused');

-- The engine fails an edition whose channel is disconnected, in SQL.
insert into app.integrations (id, organization_id, workspace_id, connector, platform, name, status)
values (pg_temp.id('ig:off'), pg_temp.id('A'), pg_temp.id('A1'), 'sandbox', 'x', 'Off', 'active');
insert into app.content_roots (id, organization_id, workspace_id, caption)
values (pg_temp.id('root'), pg_temp.id('A'), pg_temp.id('A1'), 'Hello');
insert into app.content_items (id, organization_id, workspace_id, root_id, integration_id, status, scheduled_at)
values (pg_temp.id('item'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('root'), pg_temp.id('ig:off'), 'draft', null);
update app.content_items set status = 'scheduled', scheduled_at = now() + interval '1 second' where id = pg_temp.id('item');
-- The channel is disconnected after the edition was scheduled on it.
update app.integrations set status = 'disconnected' where id = pg_temp.id('ig:off');
select is(
  (select app.publish_claim(workspace_id, pg_temp.id('item'), publish_job_id, '{}') ->> 'reason' from app.content_items where id = pg_temp.id('item')),
  'channel_unavailable', 'the claim of an edition on a disconnected channel sends nothing');
select is((select status || ': ' || error from app.content_items where id = pg_temp.id('item')),
  'failed: The channel was disconnected or deleted.', '... and fails it permanently, with the reason');

select * from finish();
rollback;
