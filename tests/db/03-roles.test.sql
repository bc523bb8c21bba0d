-- Roles, persona by persona: who may manage members and API keys, the
-- last-manager rule, a key's role capped by its creator's, key visibility
-- and revocation.
begin;
select plan(75);

-- Organizations A and B with their personas, workspaces and keys, and the
-- helpers pg_temp.id, pg_temp.token, pg_temp.act_as, ...:
-- @include personas.sql

-- More keys of A, inserted as the owner: key:A1.manager (manager, by the
-- owner), key:A1.capped (manager, but created by the editor of A1),
-- key:A1.viewer (viewer, by the manager of A1).
insert into app.api_keys (id, organization_id, created_by, name, key_prefix, key_hash, role)
select pg_temp.id(k.label), pg_temp.id('A'), pg_temp.id(k.creator), k.label, 'pr_' || md5(k.label), pg_temp.token(k.label), k.role
from (values ('key:A1.manager', 'A.owner', 'manager'), ('key:A1.capped', 'A.editor', 'manager'),
             ('key:A1.viewer', 'A.manager', 'viewer')) k (label, creator, role);
insert into app.api_key_workspaces (api_key_id, workspace_id, organization_id)
select pg_temp.id(k), pg_temp.id('A1'), pg_temp.id('A')
from unnest(array['key:A1.manager', 'key:A1.capped', 'key:A1.viewer']) k;

create function pg_temp.key_ids(p_labels text[]) returns uuid[]
language sql as $$ select array(select pg_temp.id(l) from unnest(p_labels) l order by 1) $$;
create function pg_temp.listed_key_ids() returns uuid[]
language sql as $$ select array(select (e ->> 'id')::uuid from jsonb_array_elements(api.list_api_keys()) e order by 1) $$;
create function pg_temp.member_emails() returns text[]
language sql as $$ select array(select e ->> 'email' from jsonb_array_elements(api.list_members()) e order by 1) $$;
create function pg_temp.key_role(p_key text, p_workspace text) returns text
language sql as $$
  select coalesce((select r.role from app.api_key_workspace_roles(pg_temp.id(p_key)) r
                   where r.workspace_id = pg_temp.id(p_workspace)), 'none')
$$;

-- A statement text calling an api function with fixture ids filled in.
create function pg_temp.q(p_template text, variadic p_labels text[]) returns text
language sql as $$
  select format(p_template, variadic array(select pg_temp.id(l)::text from unnest(p_labels) l))
$$;

------------------------------------------------------------------------------
-- Viewers and editors cannot manage members or keys.
------------------------------------------------------------------------------
select pg_temp.act_as('A.viewer', 'A1');
select is(pg_temp.sqlerr($$select api.add_member('newcomer@example.test', 'viewer')$$), 'PT403 ROLE_REQUIRED',
  'viewer: api.add_member -> PT403 ROLE_REQUIRED');
select is(pg_temp.sqlerr(pg_temp.q($$select api.update_member(%L, 'viewer')$$, 'A.editor')), 'PT403 ROLE_REQUIRED',
  'viewer: api.update_member -> PT403 ROLE_REQUIRED');
select is(pg_temp.sqlerr(pg_temp.q($$select api.remove_member(%L)$$, 'A.editor')), 'PT403 ROLE_REQUIRED',
  'viewer: api.remove_member -> PT403 ROLE_REQUIRED');
select throws_ok(pg_temp.q($$select api.create_api_key('v', array[%L]::uuid[], 'viewer', null, 'pr_viewer', sha256('viewer'::bytea))$$, 'A1'),
  'PT403', null, 'viewer: api.create_api_key -> PT403');
select lives_ok('select api.list_members()', 'viewer: api.list_members is allowed (members are readable; tests/db/09-members.test.sql)');
select throws_ok('select api.list_api_keys()', 'PT403', null, 'viewer: api.list_api_keys -> PT403');
select throws_ok(pg_temp.q($$select api.revoke_api_key(%L)$$, 'key:A1'), 'PT403', null, 'viewer: api.revoke_api_key -> PT403');
-- Nor around the API: the policies give the request role no way in.
select is(pg_temp.write_outcome(pg_temp.q($$update app.workspace_members set role = 'manager' where user_id = %L$$, 'A.viewer')),
  'rows=0', 'viewer: a direct UPDATE promoting itself touches no row');
select is(pg_temp.write_outcome(pg_temp.q($$delete from app.workspace_members where workspace_id = %L$$, 'A1')),
  'rows=0', 'viewer: a direct DELETE of A1 members touches no row');
select matches(pg_temp.write_outcome(pg_temp.q($$update app.api_keys set revoked_at = now(), revoked_by = %L where id = %L$$, 'A.viewer', 'key:A12')),
  '^(rows=0|42501)$', 'viewer: a direct UPDATE cannot revoke a key it may not administer');

select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr($$select api.add_member('newcomer@example.test', 'viewer')$$), 'PT403 ROLE_REQUIRED',
  'editor: api.add_member -> PT403 ROLE_REQUIRED');
select is(pg_temp.sqlerr(pg_temp.q($$select api.update_member(%L, 'editor')$$, 'A.viewer')), 'PT403 ROLE_REQUIRED',
  'editor: api.update_member -> PT403 ROLE_REQUIRED');
select is(pg_temp.sqlerr(pg_temp.q($$select api.remove_member(%L)$$, 'A.viewer')), 'PT403 ROLE_REQUIRED',
  'editor: api.remove_member -> PT403 ROLE_REQUIRED');
select throws_ok(pg_temp.q($$select api.create_api_key('e', array[%L]::uuid[], 'editor', null, 'pr_editor', sha256('editor'::bytea))$$, 'A1'),
  'PT403', null, 'editor: api.create_api_key -> PT403');
select is(pg_temp.write_outcome(pg_temp.q($$update app.workspace_members set role = 'manager' where user_id = %L$$, 'A.editor')),
  'rows=0', 'editor: a direct UPDATE promoting itself touches no row');
select is(pg_temp.write_outcome(pg_temp.q($$insert into app.workspace_members (workspace_id, user_id, organization_id, role) values (%L, %L, %L, 'manager')$$, 'A2', 'A.editor', 'A')),
  '42501', 'editor: a direct INSERT making itself manager of A2 -> 42501');

-- The stranger, with a forged A1 context (no role there).
select pg_temp.act_as('A.stranger', 'A1');
select throws_ok($$select api.add_member('newcomer@example.test', 'viewer')$$, 'PT403', null,
  'stranger in A1: api.add_member -> PT403');

------------------------------------------------------------------------------
-- API keys cannot administer keys, whatever their role.
------------------------------------------------------------------------------
select pg_temp.act_as('key:A1.manager', 'A1');
select is(current_setting('pressroom.workspace_role'), 'manager', 'key:A1.manager acts as manager in A1');
select is(pg_temp.sqlerr(pg_temp.q($$select api.create_api_key('k', array[%L]::uuid[], 'viewer', null, 'pr_bykey', sha256('bykey'::bytea))$$, 'A1')),
  'PT403 SESSION_REQUIRED', 'manager key: api.create_api_key -> PT403 SESSION_REQUIRED');
select is(pg_temp.sqlerr('select api.list_api_keys()'), 'PT403 SESSION_REQUIRED',
  'manager key: api.list_api_keys -> PT403 SESSION_REQUIRED');
select is(pg_temp.sqlerr(pg_temp.q($$select api.revoke_api_key(%L)$$, 'key:A1')), 'PT403 SESSION_REQUIRED',
  'manager key: api.revoke_api_key -> PT403 SESSION_REQUIRED');
select lives_ok('select api.list_members()', 'manager key: api.list_members is allowed (members are not session-only)');
select pg_temp.act_as('key:A1', 'A1');
select is(pg_temp.sqlerr('select api.list_api_keys()'), 'PT403 SESSION_REQUIRED',
  'editor key: api.list_api_keys -> PT403 SESSION_REQUIRED');
select is(pg_temp.sqlerr($$select api.add_member('newcomer@example.test', 'viewer')$$), 'PT403 ROLE_REQUIRED',
  'editor key: api.add_member -> PT403 ROLE_REQUIRED');

------------------------------------------------------------------------------
-- A key's role is capped by its creator's current role.
------------------------------------------------------------------------------
select pg_temp.act_as_owner();
select is(pg_temp.key_role('key:A1', 'A1'), 'editor', 'editor key by the owner: editor in A1');
select is(pg_temp.key_role('key:A1.manager', 'A1'), 'manager', 'manager key by the owner: manager in A1');
select is(pg_temp.key_role('key:A1.viewer', 'A1'), 'viewer', 'viewer key by a manager: viewer in A1');
select is(pg_temp.key_role('key:A1.capped', 'A1'), 'editor', 'manager key created by an editor: only editor in A1');
select is(pg_temp.key_role('key:A1', 'A2'), 'none', 'a key has no role in a workspace it was not granted');
select is(api.gate(pg_temp.token('key:A1.capped'), pg_temp.id('A1'), 'read', 'basic', null) ->> 'workspaceRole', 'editor',
  'api.gate grants the capped key editor, not manager');
select pg_temp.act_as('key:A1.capped', 'A1');
select is(pg_temp.sqlerr($$select api.add_member('newcomer@example.test', 'viewer')$$), 'PT403 ROLE_REQUIRED',
  'the capped key cannot manage members');
select pg_temp.act_as_owner();
update app.workspace_members set role = 'viewer' where workspace_id = pg_temp.id('A1') and user_id = pg_temp.id('A.editor');
select is(pg_temp.key_role('key:A1.capped', 'A1'), 'viewer', 'its creator demoted to viewer: the key drops to viewer');
delete from app.workspace_members where workspace_id = pg_temp.id('A1') and user_id = pg_temp.id('A.editor');
select is(pg_temp.key_role('key:A1.capped', 'A1'), 'none', 'its creator removed from A1: the key has no access to A1');
update app.users set status = 'disabled' where id = pg_temp.id('A.manager');
select is(pg_temp.key_role('key:A1.viewer', 'A1'), 'none', 'its creator disabled: the key has no access');
-- Restore the editor and the manager for what follows.
insert into app.workspace_members (workspace_id, user_id, organization_id, role)
values (pg_temp.id('A1'), pg_temp.id('A.editor'), pg_temp.id('A'), 'editor');
update app.users set status = 'active' where id = pg_temp.id('A.manager');

------------------------------------------------------------------------------
-- Key list visibility.
------------------------------------------------------------------------------
select pg_temp.act_as('A.owner', 'A1');
select is(pg_temp.listed_key_ids(),
  pg_temp.key_ids(array['key:A1', 'key:A12', 'key:A1.manager', 'key:A1.capped', 'key:A1.viewer']),
  'owner: lists every active key of the organization (not revoked, not expired, not B''s)');
select pg_temp.act_as('A.owner', 'A2');
select is(pg_temp.listed_key_ids(),
  pg_temp.key_ids(array['key:A1', 'key:A12', 'key:A1.manager', 'key:A1.capped', 'key:A1.viewer']),
  'owner, from A2: the same organization-wide list');
select pg_temp.act_as('A.manager', 'A1');
select is(pg_temp.listed_key_ids(),
  pg_temp.key_ids(array['key:A1', 'key:A1.manager', 'key:A1.capped', 'key:A1.viewer']),
  'manager of A1 only: lists the keys granted only A1, not the key granted A1 and A2');

------------------------------------------------------------------------------
-- Managers manage members.
------------------------------------------------------------------------------
select is(api.add_member('newcomer@example.test', 'editor') - 'userId' - 'createdAt' - 'updatedAt',
  '{"email": "newcomer@example.test", "role": "editor", "orgRole": "member", "status": "invited"}'::jsonb,
  'manager: api.add_member of a new email invites an editor');
select is(api.add_member('a-stranger@example.test', 'viewer') ->> 'role', 'viewer',
  'manager: api.add_member of an organization member adds them');
select is(pg_temp.sqlerr($$select api.add_member('a-stranger@example.test', 'editor')$$), 'PT409 ALREADY_MEMBER',
  'manager: adding a member twice -> PT409 ALREADY_MEMBER');
select is(pg_temp.sqlerr($$select api.add_member('b-editor@example.test', 'editor')$$), 'ok',
  'manager: an address of another organization''s user is invited like an unknown one, no EMAIL_TAKEN (probe rolled back; tests/db/09-members.test.sql)');
select is(pg_temp.member_emails(),
  array['a-editor@example.test', 'a-manager@example.test', 'a-stranger@example.test', 'a-viewer@example.test', 'newcomer@example.test'],
  'manager: api.list_members lists exactly A1''s members');
select is(api.update_member(pg_temp.id('A.stranger'), 'editor') ->> 'role', 'editor',
  'manager: api.update_member changes the role');
select throws_ok(pg_temp.q($$select api.update_member(%L, 'editor')$$, 'B.editor'), 'PT404', null,
  'manager: api.update_member of a non-member -> PT404');
select throws_ok(pg_temp.q($$select api.update_member(%L, 'owner')$$, 'A.stranger'), '23514', null,
  'manager: api.update_member to an unknown role -> 23514 (check violation)');
select is(api.remove_member(pg_temp.id('A.stranger')) ->> 'removed', 'true', 'manager: api.remove_member removes');
select throws_ok(pg_temp.q($$select api.remove_member(%L)$$, 'A.stranger'), 'PT404', null,
  'manager: removing a non-member -> PT404');

------------------------------------------------------------------------------
-- Managers create and revoke keys, within what they administer.
------------------------------------------------------------------------------
select pg_temp.act_as('A.manager', 'A1');
select is(
  api.create_api_key('ci', array[pg_temp.id('A1')], 'editor', now() + interval '30 days', 'pr_new', pg_temp.token('key:new'))
    - 'id' - 'createdAt' - 'expiresAt',
  '{"name": "ci", "keyPrefix": "pr_new", "role": "editor"}'::jsonb,
  'manager: api.create_api_key creates a key for A1');
select is(pg_temp.sqlerr(pg_temp.q($$select api.create_api_key('x', array[%L, %L]::uuid[], 'editor', null, 'pr_x', sha256('x'::bytea))$$, 'A1', 'A2')),
  'PT403 WORKSPACE_FORBIDDEN', 'manager of A1 only: granting A2 too -> PT403 WORKSPACE_FORBIDDEN');
select is(pg_temp.sqlerr(pg_temp.q($$select api.create_api_key('x', array[%L]::uuid[], 'editor', now() - interval '1 minute', 'pr_x', sha256('x'::bytea))$$, 'A1')),
  'PT400 VALIDATION_FAILED', 'manager: a key expiring in the past -> PT400 VALIDATION_FAILED');
select pg_temp.act_as_owner();
select is(
  (select row(k.created_by, k.organization_id, k.key_hash = pg_temp.token('key:new'))::text from app.api_keys k where k.key_prefix = 'pr_new'),
  row(pg_temp.id('A.manager'), pg_temp.id('A'), true)::text,
  'the new key belongs to its creator and organization and stores the hash given');
select is(api.gate(pg_temp.token('key:new'), pg_temp.id('A1'), 'read', 'basic', null) ->> 'workspaceRole', 'editor',
  'the new key works at once, as editor of A1');

select pg_temp.act_as('A.manager', 'A1');
select is(pg_temp.sqlerr(pg_temp.q($$select api.revoke_api_key(%L)$$, 'key:A12')), 'PT404 NOT_FOUND',
  'manager of A1 only: revoking the key granted A1 and A2 -> PT404');
select is(pg_temp.sqlerr(pg_temp.q($$select api.revoke_api_key(%L)$$, 'key:B1')), 'PT404 NOT_FOUND',
  'manager: revoking a key of another organization -> PT404');
select is(pg_temp.sqlerr(pg_temp.q($$select api.revoke_api_key(%L)$$, 'key:A1.revoked')), 'PT404 NOT_FOUND',
  'manager: revoking an already revoked key -> PT404');
select is(api.revoke_api_key(pg_temp.id('key:A1')), jsonb_build_object('id', pg_temp.id('key:A1'), 'revoked', true),
  'manager: revokes a key granted only A1');
select is(pg_temp.sqlerr(pg_temp.q($$select api.revoke_api_key(%L)$$, 'key:A1')), 'PT404 NOT_FOUND',
  'revoking it a second time -> PT404');
select pg_temp.act_as_owner();
select is(api.gate(pg_temp.token('key:A1'), pg_temp.id('A1'), 'read', 'basic', null) -> 'error' ->> 'code', 'KEY_REVOKED',
  'the revoked key stops working at once');
select pg_temp.act_as('A.owner', 'A1');
select is(pg_temp.sqlerr(pg_temp.q($$update app.api_keys set revoked_at = null where id = %L$$, 'key:A1.revoked')),
  'PT409 KEY_REVOKED', 'owner: a direct UPDATE cannot un-revoke a key -> PT409');
select pg_temp.act_as_owner();
select throws_ok(pg_temp.q($$update app.api_keys set revoked_at = null where id = %L$$, 'key:A1.revoked'), 'PT409', null,
  'superuser: a revoked key cannot be un-revoked -> PT409');
select throws_ok(pg_temp.q($$update app.api_keys set revoked_at = now() - interval '1 day' where id = %L$$, 'key:A1.revoked'), 'PT409', null,
  'superuser: a revocation time cannot be rewritten -> PT409');
select throws_ok(pg_temp.q($$update app.api_keys set key_hash = sha256('other'::bytea) where id = %L$$, 'key:A12'), 'PT400', null,
  'superuser: a key''s secret hash cannot change -> PT400');

------------------------------------------------------------------------------
-- A workspace keeps a manager.
------------------------------------------------------------------------------
select pg_temp.act_as('A.manager', 'A1');
select is(pg_temp.sqlerr(pg_temp.q($$select api.update_member(%L, 'editor')$$, 'A.manager')), 'PT409 LAST_MANAGER',
  'the last manager cannot demote themselves -> PT409 LAST_MANAGER');
select is(pg_temp.sqlerr(pg_temp.q($$select api.remove_member(%L)$$, 'A.manager')), 'PT409 LAST_MANAGER',
  'the last manager cannot remove themselves -> PT409 LAST_MANAGER');
select pg_temp.act_as('A.owner', 'A1');
select is(pg_temp.sqlerr(pg_temp.q($$select api.remove_member(%L)$$, 'A.manager')), 'PT409 LAST_MANAGER',
  'the organization owner cannot remove the last manager either -> PT409');
select pg_temp.act_as_owner();
select throws_ok(pg_temp.q($$delete from app.workspace_members where workspace_id = %L and user_id = %L$$, 'A1', 'A.manager'),
  'PT409', null, 'superuser: a plain DELETE of the last manager -> PT409');
select throws_ok(pg_temp.q($$update app.workspace_members set role = 'viewer' where workspace_id = %L and user_id = %L$$, 'A1', 'A.manager'),
  'PT409', null, 'superuser: a plain UPDATE demoting the last manager -> PT409');
select is(pg_temp.write_outcome(pg_temp.q($$update app.workspace_members set workspace_id = %L where workspace_id = %L and user_id = %L$$, 'A2', 'A1', 'A.manager')),
  'PT400', 'superuser: moving a membership to another workspace is refused (IMMUTABLE_FIELD, PT400)');
select pg_temp.act_as('A.manager', 'A1');
select is(api.update_member(pg_temp.id('A.editor'), 'manager') ->> 'role', 'manager', 'manager: promotes the editor to manager');
select is(api.update_member(pg_temp.id('A.manager'), 'editor') ->> 'role', 'editor',
  'with a second manager, the first may step down');
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr(pg_temp.q($$select api.remove_member(%L)$$, 'A.editor')), 'PT409 LAST_MANAGER',
  'the new last manager cannot leave -> PT409 LAST_MANAGER');
select pg_temp.act_as_owner();
select lives_ok(pg_temp.q($$delete from app.workspaces where id = %L$$, 'A1'),
  'deleting the workspace itself takes its members along (no LAST_MANAGER)');

select pg_temp.act_as_owner();
-- 000061: the role in one workspace, asked with the workspace (its shard on a cluster), is the
-- role the whole list gives for it, for every user and key of the fixture and every workspace.
select pg_temp.act_as_owner();
select is(
  array(select format('%s in %s: %s / %s', u.id, w.id, one.role, whole.role)
        from app.users u cross join app.workspaces w
        cross join lateral (select string_agg(r.role, ',') as role from app.user_workspace_roles(u.id, w.id) r) one
        cross join lateral (select string_agg(r.role, ',') as role from app.user_workspace_roles(u.id) r where r.workspace_id = w.id) whole
        where one.role is distinct from whole.role),
  '{}'::text[], 'app.user_workspace_roles with a workspace gives what the whole list gives for it, for every user and workspace');
select is(
  array(select format('%s in %s: %s / %s', k.id, w.id, one.role, whole.role)
        from app.api_keys k cross join app.workspaces w
        cross join lateral (select string_agg(r.role, ',') as role from app.api_key_workspace_roles(k.id, w.id) r) one
        cross join lateral (select string_agg(r.role, ',') as role from app.api_key_workspace_roles(k.id) r where r.workspace_id = w.id) whole
        where one.role is distinct from whole.role),
  '{}'::text[], 'app.api_key_workspace_roles with a workspace gives what the whole list gives for it, for every key and workspace');
select ok((select count(*) from app.users u cross join app.workspaces w, app.user_workspace_roles(u.id, w.id)) > 0
          and (select count(*) from app.api_keys k cross join app.workspaces w, app.api_key_workspace_roles(k.id, w.id)) > 0,
  '... and both give roles in the fixture (the comparison is not of empty lists)');

select * from finish();
rollback;
