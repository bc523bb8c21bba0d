-- api.gate: rate limits per workspace and class, plan checks, authentication
-- of sessions and API keys, and last_used_at.
begin;
select plan(43);

-- Organizations A and B with their personas, workspaces and keys, and the
-- helpers pg_temp.id, pg_temp.token, pg_temp.act_as, ...:
-- @include personas.sql

-- More organizations for plans: C (trial that ended), T (trial running),
-- S (standard), D (premium); each with an owner, a workspace and a session.
insert into app.organizations (id, name, plan, trial_ends_at) values
  (pg_temp.id('C'), 'Org C', 'trial', now() - interval '1 day'),
  (pg_temp.id('T'), 'Org T', 'trial', now() + interval '2 days'),
  (pg_temp.id('S'), 'Org S', 'standard', null),
  (pg_temp.id('D'), 'Org D', 'premium', null);
insert into app.users (id, organization_id, email, password_hash, org_role)
select pg_temp.id(o || '.owner'), pg_temp.id(o), lower(o) || '-owner@example.test', 'not-a-real-hash', 'owner'
from unnest(array['C', 'T', 'S', 'D']) o;
insert into app.workspaces (id, organization_id, name)
select pg_temp.id(o || '1'), pg_temp.id(o), o || '1' from unnest(array['C', 'T', 'S', 'D']) o;
insert into app.sessions (id, user_id, organization_id, token_hash, expires_at)
select pg_temp.id('session:' || o || '.owner'), pg_temp.id(o || '.owner'), pg_temp.id(o),
       pg_temp.token('session:' || o || '.owner'), now() + interval '1 day'
from unnest(array['C', 'T', 'S', 'D']) o;
-- Sessions that must not authenticate: expired, revoked, of a disabled user.
insert into app.users (id, organization_id, email, password_hash, org_role, status)
values (pg_temp.id('A.disabled'), pg_temp.id('A'), 'a-disabled@example.test', 'not-a-real-hash', 'member', 'disabled');
insert into app.sessions (user_id, organization_id, token_hash, expires_at, revoked_at) values
  (pg_temp.id('A.editor'), pg_temp.id('A'), pg_temp.token('session:expired'), now() - interval '1 second', null),
  (pg_temp.id('A.editor'), pg_temp.id('A'), pg_temp.token('session:revoked'), now() + interval '1 day', now() - interval '1 minute'),
  (pg_temp.id('A.disabled'), pg_temp.id('A'), pg_temp.token('session:disabled'), now() + interval '1 day', null);

-- The gate with the limits in force: write 3 a minute, read 1000 (app.settings).
update app.settings set value = '3' where key = 'rate_limit_write';
update app.settings set value = '1000' where key = 'rate_limit_read';
create function pg_temp.g(p_secret text, p_workspace text, p_class text default 'read',
  p_min_plan text default 'basic') returns jsonb
language sql as $$
  select api.gate(case when p_secret is not null then pg_temp.token(p_secret) end,
                  case when p_workspace is not null then pg_temp.id(p_workspace) end,
                  p_class, p_min_plan, null)
$$;
create function pg_temp.code(p jsonb) returns text
language sql as $$ select coalesce(p -> 'error' ->> 'code', 'none') $$;

------------------------------------------------------------------------------
-- Rate limits: per workspace and class, fixed one-minute windows.
------------------------------------------------------------------------------
create temp table calls (n int primary key, r jsonb not null);
insert into calls values (1, pg_temp.g('session:A.editor', 'A1', 'write'));
insert into calls values (2, pg_temp.g('session:A.editor', 'A1', 'write'));
insert into calls values (3, pg_temp.g('session:A.editor', 'A1', 'write'));
insert into calls values (4, pg_temp.g('session:A.editor', 'A1', 'write'));
select is(array(select pg_temp.code(r) from calls order by n), array['none', 'none', 'none', 'RATE_LIMITED'],
  'limit 3: three calls pass, the fourth is RATE_LIMITED');
select is(array(select (r -> 'rate' ->> 'remaining')::int from calls order by n), array[2, 1, 0, 0],
  'rate.remaining counts down 2, 1, 0 and stays 0');
select is(array(select (r -> 'rate' ->> 'allowed')::boolean from calls order by n), array[true, true, true, false],
  'rate.allowed turns false on the fourth call');
select is((select (r -> 'error' ->> 'status')::int from calls where n = 4), 429, 'RATE_LIMITED is a 429');
select ok((select (r -> 'rate' ->> 'reset')::int between 1 and 60 from calls where n = 4), 'rate.reset is between 1 and 60 seconds');
select is((select (r -> 'error' -> 'details' ->> 'retryAfter')::int from calls where n = 4),
  (select (r -> 'rate' ->> 'reset')::int from calls where n = 4), 'error.details.retryAfter equals rate.reset');
select is((select r -> 'rate' ->> 'limit' from calls where n = 4) || '/' || (select r -> 'rate' ->> 'class' from calls where n = 4),
  '3/write', 'rate reports its limit and class');
select is((select r -> 'principal' ->> 'userId' from calls where n = 4), pg_temp.id('A.editor')::text,
  'a refused call still reports its principal (for the audit row)');
select is(pg_temp.code(pg_temp.g('session:A.manager', 'A1', 'write')), 'RATE_LIMITED',
  'the limit is per workspace: another user in A1 is limited too');
select is(pg_temp.code(pg_temp.g('session:A.editor', 'A1', 'read')), 'none', 'the read class of A1 has its own counter');
select is(pg_temp.code(pg_temp.g('session:A.owner', 'A2', 'write')), 'none', 'workspace A2 has its own counter');
select is(pg_temp.code(pg_temp.g('session:B.editor', 'B1', 'write')), 'none', 'workspace B1 has its own counter');
-- Anonymous routes count per client bucket (expensive: 2 a minute).
update app.settings set value = '2' where key = 'rate_limit_expensive';
select is(
  array(select pg_temp.code(api.gate(null, null, 'expensive', 'basic', 'ip:203.0.113.7')) from generate_series(1, 3) i order by i),
  array['none', 'none', 'RATE_LIMITED'], 'anonymous calls are limited per bucket');
select is(pg_temp.code(api.gate(null, null, 'expensive', 'basic', 'ip:203.0.113.8')), 'none', 'another bucket has its own counter');

------------------------------------------------------------------------------
-- Plans.
------------------------------------------------------------------------------
select is(pg_temp.code(pg_temp.g('session:C.owner', 'C1')), 'PLAN_REQUIRED', 'a trial that ended -> PLAN_REQUIRED');
select is(pg_temp.code(pg_temp.g('session:C.owner', null)), 'PLAN_REQUIRED', 'a trial that ended -> PLAN_REQUIRED without a workspace too');
select is((pg_temp.g('session:C.owner', 'C1') -> 'error' ->> 'status')::int, 401, 'PLAN_REQUIRED is a 401 (openapi.yaml''s status for plan refusals)');
select is(pg_temp.code(pg_temp.g('session:T.owner', 'T1', 'read', 'premium')), 'none', 'a running trial has full access');
select is(pg_temp.code(pg_temp.g('session:A.owner', 'A1', 'read', 'standard')), 'PLAN_REQUIRED', 'p_min_plan standard on a basic org -> PLAN_REQUIRED');
select is(pg_temp.g('session:A.owner', 'A1', 'read', 'standard') -> 'error' -> 'details',
  '{"plan": "basic", "requiredPlan": "standard"}'::jsonb, 'PLAN_REQUIRED details name both plans');
select is(pg_temp.code(pg_temp.g('key:A1', 'A1', 'read', 'standard')), 'PLAN_REQUIRED', 'an API key of a basic org -> PLAN_REQUIRED too');
select is(pg_temp.code(pg_temp.g('session:A.owner', 'A1', 'read', 'basic')), 'none', 'basic passes a basic route');
select is(pg_temp.code(pg_temp.g('session:S.owner', 'S1', 'read', 'standard')), 'none', 'standard passes a standard route');
select is(pg_temp.code(pg_temp.g('session:S.owner', 'S1', 'read', 'premium')), 'PLAN_REQUIRED', 'standard fails a premium route');
select is(pg_temp.code(pg_temp.g('session:D.owner', 'D1', 'read', 'standard')), 'none', 'premium passes a standard route');
select is(pg_temp.code(pg_temp.g('session:D.owner', 'D1', 'read', 'premium')), 'none', 'premium passes a premium route');
select is(pg_temp.g('session:D.owner', 'D1') -> 'principal' ->> 'plan', 'premium', 'the principal carries its plan');

------------------------------------------------------------------------------
-- Authentication.
------------------------------------------------------------------------------
select is(pg_temp.code(pg_temp.g('no-such-secret', 'A1')), 'UNAUTHENTICATED', 'an unknown token -> UNAUTHENTICATED');
select is((pg_temp.g('no-such-secret', 'A1') -> 'error' ->> 'status')::int, 401, 'UNAUTHENTICATED is a 401');
select is(pg_temp.g('no-such-secret', 'A1') -> 'principal', null, 'an unknown token names no principal');
select is(pg_temp.code(api.gate(null, pg_temp.id('A1'), 'read', 'basic', null)), 'UNAUTHENTICATED', 'no token and no bucket -> UNAUTHENTICATED');
select is(pg_temp.code(pg_temp.g('session:expired', 'A1')), 'UNAUTHENTICATED', 'an expired session -> UNAUTHENTICATED');
select is(pg_temp.code(pg_temp.g('session:revoked', 'A1')), 'UNAUTHENTICATED', 'an ended session -> UNAUTHENTICATED');
select is(pg_temp.code(pg_temp.g('session:disabled', null)), 'UNAUTHENTICATED', 'a disabled user''s session -> UNAUTHENTICATED');
select is(pg_temp.g('session:A.editor', 'A1') - 'rate',
  jsonb_build_object(
    'principal', jsonb_build_object('actorKind', 'user', 'userId', pg_temp.id('A.editor'), 'sessionId', pg_temp.id('session:A.editor'),
                                    'organizationId', pg_temp.id('A'), 'orgRole', 'member', 'plan', 'basic'),
    'workspaceId', pg_temp.id('A1'), 'workspaceRole', 'editor'),
  'a session authenticates as its user, with the workspace role');
select is(pg_temp.g('key:A1', 'A1') -> 'principal',
  jsonb_build_object('actorKind', 'api_key', 'apiKeyId', pg_temp.id('key:A1'), 'apiKeyPrefix', 'pr_' || md5('key:A1'),
                     'organizationId', pg_temp.id('A'), 'userId', pg_temp.id('A.owner'), 'plan', 'basic'),
  'an API key authenticates as the key, naming its creator');

------------------------------------------------------------------------------
-- last_used_at.
------------------------------------------------------------------------------
select is((select last_used_at from app.api_keys where id = pg_temp.id('key:A12')), null, 'an unused key has no last_used_at');
select is(pg_temp.code(pg_temp.g('key:A12', 'A2')), 'none', 'the key passes the gate');
select is((select last_used_at from app.api_keys where id = pg_temp.id('key:A12')), now(), 'api.gate sets last_used_at');
select is(pg_temp.code(pg_temp.g('key:A1.revoked', 'A1')), 'KEY_REVOKED', 'a revoked key is refused');
select is((select last_used_at from app.api_keys where id = pg_temp.id('key:A1.revoked')), null, 'and its last_used_at is not touched');

------------------------------------------------------------------------------
-- Who may call the gate.
------------------------------------------------------------------------------
set local role pressroom_app;
select is(pg_temp.code(pg_temp.g('session:A.owner', 'A1')), 'none', 'pressroom_app calls api.gate');
reset role;
set local role pressroom_bi;
select throws_ok($$select api.gate(null, null, 'read', 'basic', 'x')$$, '42501', null, 'pressroom_bi cannot call api.gate');
reset role;

select pg_temp.act_as_owner();
select * from finish();
rollback;
