-- Members readable by every role, e-mail private to managers
-- (db/migrations/committed/000005-members-readable-webhook-secrets-no-email-enumeration.sql, split 10-members-readable.sql); no cross-organization
-- e-mail enumeration by adding members or signing up
-- (30-no-email-enumeration.sql); Standard Webhooks secrets for new webhook
-- integrations (20-webhook-secrets.sql). Persona by persona.
begin;
select plan(46);

-- @include personas.sql

-- More keys of A1, by the owner: key:A1.mgr (manager), key:A1.view (viewer);
-- key:A1.capped (manager, created by the editor, so capped to editor).
insert into app.api_keys (id, organization_id, created_by, name, key_prefix, key_hash, role)
select pg_temp.id(k.label), pg_temp.id('A'), pg_temp.id(k.creator), k.label, 'pr_' || md5(k.label), pg_temp.token(k.label), k.role
from (values ('key:A1.mgr', 'A.owner', 'manager'), ('key:A1.view', 'A.owner', 'viewer'),
             ('key:A1.capped', 'A.editor', 'manager')) k (label, creator, role);
insert into app.api_key_workspaces (api_key_id, workspace_id, organization_id)
select pg_temp.id(k), pg_temp.id('A1'), pg_temp.id('A')
from unnest(array['key:A1.mgr', 'key:A1.view', 'key:A1.capped']) k;

-- What api.list_members() shows the current principal.
create function pg_temp.listed_ids() returns uuid[]
language sql as $$ select array(select (e ->> 'userId')::uuid from jsonb_array_elements(api.list_members()) e order by 1) $$;
create function pg_temp.with_email() returns int
language sql as $$ select count(*)::int from jsonb_array_elements(api.list_members()) e where e ? 'email' $$;
create function pg_temp.key_sets() returns text[]
language sql as $$
  select array(select distinct array_to_string(array(select k from jsonb_object_keys(e) k order by 1), ',')
               from jsonb_array_elements(api.list_members()) e)
$$;
-- The HINT (JSON details) of the error a statement raises.
create function pg_temp.err_hint(p_sql text) returns text
language plpgsql as $$
declare
  v_hint text;
begin
  execute p_sql;
  return 'no error';
exception when others then
  get stacked diagnostics v_hint = pg_exception_hint;
  return v_hint;
end
$$;
create function pg_temp.a1_ids() returns uuid[]
language sql as $$ select array(select pg_temp.id(l) from unnest(array['A.manager', 'A.editor', 'A.viewer']) l order by 1) $$;

------------------------------------------------------------------------------
-- Listing members: every role may; e-mail addresses only for managers.
------------------------------------------------------------------------------
select pg_temp.act_as('A.owner', 'A1');
select is(pg_temp.listed_ids(), pg_temp.a1_ids(), 'owner (a manager everywhere): lists A1''s members');
select is(pg_temp.with_email(), 3, 'owner: sees every member''s email');
select pg_temp.act_as('A.manager', 'A1');
select is(pg_temp.listed_ids(), pg_temp.a1_ids(), 'manager: lists A1''s members');
select is(pg_temp.with_email(), 3, 'manager: sees every member''s email');
select is((select e ->> 'email' from jsonb_array_elements(api.list_members()) e where e ->> 'userId' = pg_temp.id('A.viewer')::text),
  'a-viewer@example.test', 'manager: the email is the member''s address');
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.listed_ids(), pg_temp.a1_ids(), 'editor: lists A1''s members');
select is(pg_temp.with_email(), 0, 'editor: sees no email');
select is(pg_temp.key_sets(), array['createdAt,orgRole,role,status,updatedAt,userId'],
  'editor: each member is userId, role, orgRole, status, createdAt, updatedAt');
select pg_temp.act_as('A.viewer', 'A1');
select is(pg_temp.listed_ids(), pg_temp.a1_ids(), 'viewer: lists A1''s members');
select is(pg_temp.with_email(), 0, 'viewer: sees no email');
select is(pg_temp.key_sets(), array['createdAt,orgRole,role,status,updatedAt,userId'],
  'viewer: the same fields as an editor');
select pg_temp.act_as('A.stranger', 'A1');
select is(pg_temp.sqlerr('select api.list_members()'), 'PT403 ROLE_REQUIRED', 'stranger (no role in A1): PT403 ROLE_REQUIRED');
select pg_temp.act_as('key:A1.mgr', 'A1');
select is(pg_temp.with_email(), 3, 'manager key: sees emails');
select pg_temp.act_as('key:A1', 'A1');
select is(pg_temp.listed_ids(), pg_temp.a1_ids(), 'editor key: lists A1''s members');
select is(pg_temp.with_email(), 0, 'editor key: sees no email');
select pg_temp.act_as('key:A1.view', 'A1');
select is(pg_temp.with_email(), 0, 'viewer key: sees no email');
select pg_temp.act_as('key:A1.capped', 'A1');
select is(pg_temp.with_email(), 0, 'manager key capped to editor by its creator: sees no email');
select pg_temp.act_as('key:A1.revoked', 'A1');
select is(pg_temp.sqlerr('select api.list_members()'), 'PT403 ROLE_REQUIRED', 'revoked key: PT403 ROLE_REQUIRED');
select pg_temp.act_as('B.owner', 'B1');
select is(pg_temp.listed_ids(), array(select pg_temp.id(l) from unnest(array['B.owner', 'B.editor']) l order by 1),
  'owner of B: lists B1''s members, none of A');
select pg_temp.act_as('B.editor', 'B1');
select is(pg_temp.with_email(), 0, 'editor of B: sees no email either');

------------------------------------------------------------------------------
-- Adding a member by address reveals nothing about other organizations.
------------------------------------------------------------------------------
select pg_temp.act_as_owner();
create temporary table added (label text primary key, answer jsonb);
grant all on added to pressroom_api;
select pg_temp.act_as('A.manager', 'A1');
insert into added values ('elsewhere', api.add_member('b-editor@example.test', 'editor'));
insert into added values ('unknown', api.add_member('nobody-anywhere@example.test', 'editor'));
select is((select answer - 'userId' - 'createdAt' - 'updatedAt' - 'email' from added where label = 'elsewhere'),
          (select answer - 'userId' - 'createdAt' - 'updatedAt' - 'email' from added where label = 'unknown'),
  'manager: an address with an account in B and an unknown address get the same answer (role, orgRole, status invited)');
select is((select array_agg(k order by k) from added, jsonb_object_keys(answer) k where label = 'elsewhere'),
          (select array_agg(k order by k) from added, jsonb_object_keys(answer) k where label = 'unknown'),
  'manager: both answers have the same fields');
select is((select answer ->> 'status' from added where label = 'elsewhere'), 'invited', 'the address of B''s user is invited into A');
select is(pg_temp.sqlerr($$select api.add_member('B-Editor@example.test', 'viewer')$$), 'PT409 ALREADY_MEMBER',
  'adding it again (any case): PT409 ALREADY_MEMBER, as for any member');
select is(pg_temp.sqlerr($$select api.add_member('NOBODY-anywhere@example.test', 'viewer')$$), 'PT409 ALREADY_MEMBER',
  'the unknown address added again: the same PT409 ALREADY_MEMBER');
select pg_temp.act_as_owner();
select is((select row(organization_id, status, password_hash, org_role)::text from app.users where id = pg_temp.id('B.editor')),
  row(pg_temp.id('B'), 'active', 'not-a-real-hash', 'member')::text, 'B''s account is untouched');
select is((select count(*)::int from app.sessions where user_id = pg_temp.id('B.editor') and revoked_at is null), 1,
  'B''s user keeps its session');
select is((select array_agg(organization_id::text || ':' || status order by status) from app.users where lower(email) = 'b-editor@example.test'),
  array[pg_temp.id('B')::text || ':active', pg_temp.id('A')::text || ':invited'],
  'the address is now B''s account and an invitation of A');
select is(pg_temp.write_outcome(format($s$update app.users set status = 'active', password_hash = 'h' where id = %L$s$,
    (select (answer ->> 'userId')::uuid from added where label = 'elsewhere'))),
  '23505', 'the invitation cannot become a second account while B''s exists (users_email_key)');
select is(pg_temp.write_outcome(format($s$update app.users set status = 'active', password_hash = 'h' where id = %L$s$,
    (select (answer ->> 'userId')::uuid from added where label = 'unknown'))),
  'rows=1', 'the invitation of an address without an account can be activated');
select is(pg_temp.write_outcome($s$insert into app.users (organization_id, email, org_role, status) values (md5('pressroom-test:A')::uuid, 'A-EDITOR@example.test', 'member', 'invited')$s$),
  '23505', 'an address is one user per organization (users_organization_email_key)');
select pg_temp.act_as('B.owner', 'B1');
select is(pg_temp.sqlerr($$select api.add_member('nobody-anywhere@example.test', 'viewer')$$), 'ok',
  'B may invite the address A invited too (invitations do not collide)');

------------------------------------------------------------------------------
-- Sign-up: an address with an account is refused without a reason.
------------------------------------------------------------------------------
select pg_temp.act_as_owner();
select is(pg_temp.sqlerr($$select app.signup_with_policy('B-EDITOR@example.test', 'h', 'X', 'W', sha256('s1'), 3600, true, 'basic')$$),
  'PT403 SIGNUP_REFUSED', 'sign-up with an address that has an account: PT403 SIGNUP_REFUSED');
select is(pg_temp.err_hint($$select app.signup_with_policy('b-editor@example.test', 'h', 'X', 'W', sha256('s1'), 3600, true, 'basic')$$),
  '', 'the refusal carries no details (no field, no organization)');
select is(pg_temp.sqlerr($$select app.signup_with_policy('nobody-anywhere@example.test', 'h', 'X', 'W', sha256('s2'), 3600, true, 'basic')$$),
  'ok', 'sign-up with an address only invited by organizations succeeds');
select is(pg_temp.sqlerr($$select app.signup_with_policy('b-editor@example.test', 'h', 'X', 'W', sha256('s3'), 3600, false, 'basic')$$),
  'PT403 SIGNUP_CLOSED', 'sign-up closed: a taken address gets SIGNUP_CLOSED');
select is(pg_temp.sqlerr($$select app.signup_with_policy('brand-new@example.test', 'h', 'X', 'W', sha256('s4'), 3600, false, 'basic')$$),
  'PT403 SIGNUP_CLOSED', 'sign-up closed: an unknown address gets the same SIGNUP_CLOSED');

------------------------------------------------------------------------------
-- Webhook secrets: Standard Webhooks form for new integrations.
------------------------------------------------------------------------------
create function pg_temp.whsec(p_bytes int) returns text
language sql as $$ select 'whsec_' || replace(encode(decode(repeat('a7', p_bytes), 'hex'), 'base64'), E'\n', '') $$;
select is(app.webhook_secret_key_length(pg_temp.whsec(24)), 24, 'whsec_ with 24 bytes: accepted');
select is(app.webhook_secret_key_length(pg_temp.whsec(64)), 64, 'whsec_ with 64 bytes: accepted');
select is(app.webhook_secret_key_length(pg_temp.whsec(23)), null, 'whsec_ with 23 bytes: refused');
select is(app.webhook_secret_key_length(pg_temp.whsec(65)), null, 'whsec_ with 65 bytes: refused');
select is(app.webhook_secret_key_length('a-long-random-signing-secret'), null, 'a secret without the prefix: refused');
select is(app.webhook_secret_key_length('whsec_' || repeat('A', 33)), null, 'base64 that does not decode: refused');
select pg_temp.act_as('A.manager', 'A1');
select is(pg_temp.sqlerr($$select api.create_integration('webhook', 'x', 'H', null, null, 'https://93.184.215.14/h', 'a-long-random-signing-secret', 'prv1:'||encode('sealed by the route','base64'))$$),
  'PT400 VALIDATION_FAILED', 'manager: a new webhook with a raw secret -> PT400 VALIDATION_FAILED');
select is(pg_temp.sqlerr(format($$select api.create_integration('webhook', 'x', 'H', null, null, 'https://93.184.215.14/h', %L, 'prv1:c2VhbGVkIGJ5IHRoZSByb3V0ZQ==')$$, pg_temp.whsec(32))),
  'ok', 'manager: a new webhook with a whsec_ secret is created');
select pg_temp.act_as_owner();
insert into app.integrations (id, organization_id, workspace_id, connector, platform, name, webhook_url, webhook_secret)
values (pg_temp.id('legacy'), pg_temp.id('A'), pg_temp.id('A1'), 'webhook', 'x', 'Legacy', 'https://93.184.215.14/h', 'a-long-random-signing-secret');
select is(pg_temp.write_outcome(format($s$update app.integrations set name = 'Renamed' where id = %L$s$, pg_temp.id('legacy'))),
  'rows=1', 'an integration created earlier with a raw secret stays valid and can still be changed');

select * from finish();
rollback;
