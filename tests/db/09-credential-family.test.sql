-- A valid credential of the other family is not a failed credential
-- (db/migrations/committed/000029-hostile-input-two.sql, split 03-credential-family.sql): a live review link token
-- on a member route (api.gate_guarded), an API key or a live session on a
-- client-review route (api.gate_review_link) answer 401
-- WRONG_CREDENTIAL_KIND, attributed to the credential, counted against its
-- own rate limit and never in app.auth_failures; unknown, malformed, missing
-- and ended credentials are still counted.
begin;
select plan(22);

-- @include personas.sql

-- Client review needs the standard plan: A is on it here.
update app.organizations set plan = 'standard' where id = pg_temp.id('A');
-- 3 failures a minute from an address, then 429 AUTH_THROTTLED.
update app.settings set value = '3' where key = 'auth_failure_limit';
update app.settings set value = '3' where key = 'auth_failure_audit';

-- A draft review of A1 with a live link (token 'link:live') and a revoked one ('link:revoked').
insert into app.reviews (id, organization_id, workspace_id, title, created_by)
values (pg_temp.id('review'), pg_temp.id('A'), pg_temp.id('A1'), 'Client review', pg_temp.id('A.owner'));
insert into app.review_links (id, organization_id, workspace_id, review_id, email, name, token_hash, revoked_at)
values (pg_temp.id('link:live'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('review'), 'client@example.test', 'Clara', pg_temp.token('link:live'), null),
       (pg_temp.id('link:revoked'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('review'), 'gone@example.test', 'Gus', pg_temp.token('link:revoked'), now() - interval '1 hour');

-- The gates as the pipeline calls them.
create function pg_temp.member(p_secret text, p_client text, p_class text default 'read') returns jsonb
language sql as $$
  select api.gate_guarded(case when p_secret is not null then pg_temp.token(p_secret) end, null, p_class, 'basic', null, p_client)
$$;
create function pg_temp.link(p_secret text, p_client text) returns jsonb
language sql as $$
  select api.gate_review_link(case when p_secret is not null then pg_temp.token(p_secret) end, 'read', p_client)
$$;
create function pg_temp.failures(p_client text) returns int
language sql as $$ select coalesce((select failures from app.auth_failures where client = p_client), 0) $$;

-- A live link token on a member route.
select is(pg_temp.member('link:live', 'ip:192.0.2.10') -> 'error' ->> 'code', 'WRONG_CREDENTIAL_KIND',
  'a live review link token on a member route: WRONG_CREDENTIAL_KIND');
select is((pg_temp.member('link:live', 'ip:192.0.2.10') -> 'error' ->> 'status')::int, 401, '... with 401');
select is(pg_temp.member('link:live', 'ip:192.0.2.10') -> 'error' -> 'details',
  '{"credential": "review_link", "accepted": ["api_key", "session"]}'::jsonb, '... naming the kind sent and the kinds the route takes');
select is(pg_temp.member('link:live', 'ip:192.0.2.10') -> 'principal' ->> 'reviewLinkId', pg_temp.id('link:live')::text,
  '... attributed to the link (the audit row names it)');
select is(pg_temp.member('link:live', 'ip:192.0.2.10') ->> 'audit', null, '... and audited one by one (no summary)');
select is(pg_temp.failures('ip:192.0.2.10'), 0, 'five such calls count nothing against the address');
select is(pg_temp.member('session:A.editor', 'ip:192.0.2.10') -> 'principal' ->> 'userId', pg_temp.id('A.editor')::text,
  'the address is not throttled: a valid session goes through');

-- API keys and sessions on a client-review route.
select is(pg_temp.link('session:A.editor', 'ip:192.0.2.20') -> 'error' ->> 'code', 'WRONG_CREDENTIAL_KIND',
  'a session token on a client-review route: WRONG_CREDENTIAL_KIND');
select is(pg_temp.link('session:A.editor', 'ip:192.0.2.20') -> 'error' -> 'details',
  '{"credential": "session", "accepted": ["review_link"]}'::jsonb, '... naming it a session');
select is(pg_temp.link('key:A1', 'ip:192.0.2.20') -> 'error' -> 'details' ->> 'credential', 'api_key',
  'an API key on a client-review route: WRONG_CREDENTIAL_KIND naming an API key');
select is(pg_temp.link('key:A1', 'ip:192.0.2.20') -> 'principal' ->> 'apiKeyId', pg_temp.id('key:A1')::text,
  '... attributed to the key');
select is(pg_temp.link('key:A1.revoked', 'ip:192.0.2.20') -> 'error' ->> 'code', 'WRONG_CREDENTIAL_KIND',
  'a revoked key is still a key (its own routes answer KEY_REVOKED, not counted either)');
select is(pg_temp.link('key:B1', 'ip:192.0.2.20') -> 'error' ->> 'code', 'WRONG_CREDENTIAL_KIND', 'so is another organization''s key');
select is(pg_temp.failures('ip:192.0.2.20'), 0, 'none of them counts against the address');
select is(pg_temp.link('link:live', 'ip:192.0.2.20') -> 'principal' ->> 'reviewLinkId', pg_temp.id('link:live')::text,
  'the address is not throttled: the live link goes through its own gate');

-- What is still a failed credential.
select is(pg_temp.link('link:revoked', 'ip:192.0.2.30') -> 'error' ->> 'code', 'UNAUTHENTICATED',
  'an ended link on its own route: UNAUTHENTICATED, counted');
select is(pg_temp.member('link:revoked', 'ip:192.0.2.30') -> 'error' ->> 'code', 'UNAUTHENTICATED',
  'an ended link on a member route: UNAUTHENTICATED, counted');
select is(pg_temp.link('prk_bogus', 'ip:192.0.2.30') -> 'error' ->> 'code', 'UNAUTHENTICATED',
  'an unknown bearer on a client-review route: counted');
select is(pg_temp.failures('ip:192.0.2.30'), 3, 'the address counts those 3 failures');
select is(pg_temp.link('key:A1', 'ip:192.0.2.30') -> 'error' ->> 'code', 'AUTH_THROTTLED',
  'over the limit, even a credential of the other family is refused before it is looked at (no oracle)');

-- Refused calls of a credential count against its own rate limit.
update app.settings set value = '2' where key = 'rate_limit_write';
select is((select array_agg(pg_temp.member('link:live', 'ip:192.0.2.40', 'write') -> 'error' ->> 'code') from generate_series(1, 3)),
  array['WRONG_CREDENTIAL_KIND', 'WRONG_CREDENTIAL_KIND', 'RATE_LIMITED'],
  'a link''s calls to member routes spend the link''s write budget: 429 RATE_LIMITED beyond it');
select is(pg_temp.failures('ip:192.0.2.40'), 0, '... never the address''s failed credentials');

select * from finish();
rollback;
