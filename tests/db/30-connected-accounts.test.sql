-- Connected accounts (db/migrations/committed/000030-connected-accounts.sql, split 10-connected-accounts.sql): the
-- connectors from the registry, engine-only credentials, states and pending
-- connections, the OAuth flow's functions (start, take once, complete),
-- reconnect rules, the worker's functions and the lifecycle events.
begin;
select plan(70);
-- @include personas.sql

-- A credential as the server hands it to SQL (the ciphertext is opaque here).
create function pg_temp.cred(p_refresh boolean default true, p_expires timestamptz default now() + interval '2 hours',
  p_refresh_expires timestamptz default null, p_marker text default 'a') returns jsonb
language sql as $$
  select jsonb_build_object('ciphertext', encode(convert_to(rpad('PRV1-test-' || p_marker, 48, '.'), 'UTF8'), 'base64'), 'keyVersion', 1,
    'expiresAt', p_expires, 'refreshExpiresAt', p_refresh_expires, 'refreshable', p_refresh, 'hasRefreshToken', p_refresh)
$$;
create function pg_temp.account(p_id text, p_name text default null, p_refresh boolean default true) returns jsonb
language sql as $$
  select jsonb_build_object('integrationId', gen_random_uuid(), 'accountId', p_id, 'username', coalesce(p_name, 'user' || p_id),
    'name', 'User ' || p_id, 'kind', 'person', 'credential', pg_temp.cred(p_refresh, p_marker => p_id))
$$;
create function pg_temp.state(p_label text) returns bytea
language sql immutable as $$ select sha256(convert_to(pg_temp.id('A1')::text || '.' || p_label, 'UTF8')) $$;
-- Starts a connection as a persona in A1.
create function pg_temp.begin_as(p_principal text, p_label text, p_platform text default 'x', p_connector text default null,
  p_integration uuid default null) returns jsonb
language plpgsql as $$
declare v jsonb;
begin
  perform pg_temp.act_as(p_principal, 'A1');
  reset role;
  set local role pressroom_request;
  v := api.connect_begin(p_platform, p_connector, p_integration, null, pg_temp.state(p_label), null,
    'https://pressroom.example/v1/oauth/callback/' || p_platform, 'https://pressroom.example/app', null);
  perform pg_temp.act_as_owner();
  return v;
end
$$;
-- As the server's login (the public callback): take and complete.
create function pg_temp.take(p_label text, p_connector text default 'x', p_ws text default 'A1') returns jsonb
language plpgsql as $$
declare v jsonb;
begin
  perform pg_temp.act_as_owner();
  set local role pressroom_app;
  v := api.oauth_take_state(pg_temp.id(p_ws), pg_temp.state(p_label), p_connector);
  reset role;
  return v;
end
$$;
create function pg_temp.complete(p_label text, p_accounts jsonb) returns jsonb
language plpgsql as $$
declare v jsonb;
begin
  perform pg_temp.act_as_owner();
  set local role pressroom_app;
  v := api.oauth_complete(pg_temp.id('A1'), pg_temp.state(p_label), p_accounts);
  reset role;
  return v;
end
$$;

------------------------------------------------------------------------------
-- Who reaches what
------------------------------------------------------------------------------
select is(
  array(select format('%s:%s', r, t) from unnest(array['pressroom_api', 'pressroom_request', 'pressroom_bi']) r,
          unnest(array['app.integration_credentials', 'app.platform_apps', 'app.oauth_states', 'app.pending_connections']) t
        where has_table_privilege(r, t, 'select, insert, update, delete, truncate, references, trigger')
           or (has_any_column_privilege(r, t, 'select, insert, update, references')
               and not (r = 'pressroom_api' and t = 'app.integration_credentials'))
        order by 1),
  '{}'::text[], 'requests, the api role and BI hold no privilege on credentials, platform apps, states or pending connections, but for the next');
-- 000055: the api role reads a credential's state (for the channel's connection state, as its
-- caller: a definer there is refused on a Citus cluster), never the secret.
select is(
  array(select a.attname::text from pg_attribute a
        where a.attrelid = 'app.integration_credentials'::regclass and a.attnum > 0 and not a.attisdropped
          and (has_column_privilege('pressroom_api', a.attrelid, a.attnum, 'insert, update, references')
               or (has_column_privilege('pressroom_api', a.attrelid, a.attnum, 'select')
                   and a.attname not in ('workspace_id', 'organization_id', 'integration_id', 'expires_at', 'refresh_expires_at',
                                         'refreshable', 'has_refresh_token', 'refresh_failures', 'last_refresh_error')))
        order by 1),
  '{}'::text[], 'the api role reads only the state columns of credentials (not ciphertext, key_version or the refresh schedule) and writes none');
select is((select prosecdef from pg_proc where oid = 'app.integration_connection_json(uuid,uuid)'::regprocedure), false,
  'the connection state helper runs as its caller');
select ok(has_table_privilege('pressroom_worker', 'app.integration_credentials', 'select')
          and not has_table_privilege('pressroom_worker', 'app.integration_credentials', 'insert, update, delete')
          and not has_table_privilege('pressroom_worker', 'app.oauth_states', 'select')
          and not has_table_privilege('pressroom_worker', 'app.platform_apps', 'select'),
  'the worker reads credentials (writes go through definer functions) and nothing else of the flow');
select is(
  array(select p.oid::regprocedure::text from pg_proc p
        where p.oid in ('api.oauth_take_state(uuid,bytea,text)'::regprocedure, 'api.oauth_complete(uuid,bytea,jsonb)'::regprocedure)
          and (has_function_privilege('pressroom_request', p.oid, 'execute') or not has_function_privilege('pressroom_app', p.oid, 'execute'))),
  '{}'::text[], 'the callback''s functions are the server login''s only, like api.inbox_hook_target');
select ok(not has_function_privilege('pressroom_request', 'app.credentials_for(uuid[])', 'execute')
          and has_function_privilege('pressroom_worker', 'app.credentials_for(uuid[])', 'execute')
          and has_function_privilege('pressroom_worker', 'app.credentials_lock(uuid)', 'execute')
          and not has_function_privilege('pressroom_api', 'app.credentials_lock(uuid)', 'execute'),
  'the credential reads are the worker''s');

------------------------------------------------------------------------------
-- The registry's connectors
------------------------------------------------------------------------------
select is((select array_agg(name || ':' || connect order by name) from app.connectors),
  array['bluesky:password', 'linkedin:oauth', 'mastodon:oauth', 'sandbox:none', 'webhook:none', 'x:oauth'],
  'app.connectors holds the registry''s connectors, declared after migrating');
select is(left(pg_temp.sqlerr($$insert into app.integrations (organization_id, workspace_id, connector, platform, name)
  values (pg_temp.id('A'), pg_temp.id('A1'), 'myspace', 'x', 'M')$$), 5), '23503', 'an integration names a declared connector (foreign key)');
select app.declare_connectors('[{"name": "sandbox", "platforms": ["x"], "connect": "none"}, {"name": "x", "platforms": ["x"], "connect": "oauth"}]');
select is((select array_agg(name || ':' || array_to_string(platforms, ',') order by name) from app.connectors),
  array['sandbox:x', 'x:x'], 'declare_connectors upserts the listed and drops the unlisted no integration uses');
insert into app.integrations (id, organization_id, workspace_id, connector, platform, name)
values (pg_temp.id('ig:sandbox'), pg_temp.id('A'), pg_temp.id('A1'), 'sandbox', 'x', 'S');
select app.declare_connectors('[{"name": "x", "platforms": ["x"], "connect": "oauth"}]');
select ok(exists (select 1 from app.connectors where name = 'sandbox'), 'a connector an integration still names is kept');
select is(pg_temp.sqlerr($$select app.declare_connectors('[{"name": "y", "platforms": ["myspace"], "connect": "oauth"}]')$$),
  'P0001', 'an unknown platform is refused');
select app.declare_connectors('[{"name": "sandbox", "platforms": ["bluesky","facebook","instagram","linkedin","mastodon","pinterest","threads","tiktok","x","youtube"], "connect": "none"},
  {"name": "webhook", "platforms": ["bluesky","facebook","instagram","linkedin","mastodon","pinterest","threads","tiktok","x","youtube"], "connect": "none"},
  {"name": "mastodon", "platforms": ["mastodon"], "connect": "oauth"}, {"name": "x", "platforms": ["x"], "connect": "oauth"},
  {"name": "bluesky", "platforms": ["bluesky"], "connect": "password"}, {"name": "linkedin", "platforms": ["linkedin"], "connect": "oauth"}]');

------------------------------------------------------------------------------
-- api.create_integration reads app.connectors
------------------------------------------------------------------------------
select pg_temp.act_as('A.manager', 'A1');
select is(pg_temp.sqlerr($$select api.create_integration('myspace', 'x', 'M', null, null, null, null, null)$$), 'PT400 UNKNOWN_CONNECTOR', 'an unknown connector is refused');
select is(pg_temp.sqlerr($$select api.create_integration('x', 'x', 'M', null, null, null, null, null)$$), 'PT400 CONNECT_FLOW_REQUIRED', 'an OAuth connector is connected through the flow, not created');
select is(pg_temp.sqlerr($$select api.create_integration('bluesky', 'bluesky', 'M', null, null, null, null, null)$$), 'PT400 CONNECT_FLOW_REQUIRED', 'a password connector too');
select is(pg_temp.sqlerr($$select api.create_integration('sandbox', 'x', 'Sandbox X', null, null, null, null, null)$$), 'ok', 'sandbox is still created here');
select pg_temp.act_as_owner();

------------------------------------------------------------------------------
-- Starting a connection
------------------------------------------------------------------------------
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr($$select api.connect_prepare('x', null, null, null)$$), 'PT403 ROLE_REQUIRED', 'an editor cannot start a connection');
select pg_temp.act_as('key:A1', 'A1');
select is(pg_temp.sqlerr($$select api.connect_prepare('x', null, null, null)$$), 'PT403 ROLE_REQUIRED', 'an editor key cannot either');
select pg_temp.act_as('A.manager', 'A1');
select is(api.connect_prepare('x', null, null, null) ->> 'connector', 'x', 'the platform''s one connectable connector is found');
select is(pg_temp.sqlerr($$select api.connect_prepare('x', 'mastodon', null, null)$$), 'PT400 PLATFORM_NOT_SUPPORTED', 'the platform must be one of the connector''s');
select is(pg_temp.sqlerr($$select api.connect_prepare('youtube', null, null, null)$$), 'PT400 PLATFORM_NOT_SUPPORTED', 'a platform no connector signs in to');
select is(pg_temp.sqlerr($$select api.connect_prepare('x', 'sandbox', null, null)$$), 'PT400 CONNECT_FLOW_NOT_APPLICABLE', 'sandbox has no sign-in');
select is(pg_temp.sqlerr($$select api.connect_begin('bluesky', null, null, 'https://pds.example', sha256('s'), null, 'https://p.example/cb', 'https://p.example/app', null)$$),
  'PT400 CONNECT_FLOW_NOT_APPLICABLE', 'a password connector has no OAuth flow');
select pg_temp.act_as_owner();
select is(pg_temp.begin_as('A.manager', 's1') ->> 'connector', 'x', 'a manager starts an X connection');
select ok((select expires_at between now() + interval '9 minutes' and now() + interval '11 minutes' and user_id = pg_temp.id('A.manager')
           and consumed_at is null from app.oauth_states where state_hash = pg_temp.state('s1')),
  'the state row keeps who started it, for 10 minutes');

------------------------------------------------------------------------------
-- Taking the state: once, in time, in its workspace
------------------------------------------------------------------------------
select is(pg_temp.take('s1', 'x', 'A2') ->> 'reason', 'state_unknown', 'the state is found in its own workspace only');
select is(pg_temp.take('s1', 'mastodon') ->> 'reason', 'state_unknown', 'nor through another platform''s callback');
select pg_temp.begin_as('A.manager', 's1b');
select is(pg_temp.take('s1b') ->> 'found', 'true', 'the first callback takes the state');
select is(pg_temp.take('s1b') ->> 'reason', 'state_used', 'a state is taken once: the second callback hears state_used');
select pg_temp.begin_as('A.manager', 's2');
update app.oauth_states set expires_at = now() - interval '1 second' where state_hash = pg_temp.state('s2');
select is(pg_temp.take('s2') ->> 'reason', 'state_expired', 'an expired state is refused');
select is(pg_temp.take('nope') ->> 'reason', 'state_unknown', 'an unknown state is refused');

------------------------------------------------------------------------------
-- Completing
------------------------------------------------------------------------------
select pg_temp.begin_as('A.manager', 's3');
select pg_temp.take('s3');
create temp table done as select pg_temp.complete('s3', jsonb_build_array(pg_temp.account('1001', 'alice'))) as r;
grant select on done to public;
select ok((select r ? 'integrationId' and r ->> 'returnTo' = 'https://pressroom.example/app' from done), 'completing creates the integration and names where to go back');
select is((select row(connector, platform, account_id, username, name, connection_state, created_by)::text from app.integrations
           where id = (select (r ->> 'integrationId')::uuid from done)),
  row('x', 'x', '1001', 'alice', 'User 1001', 'ok', pg_temp.id('A.manager'))::text, 'with account id, username, name, state ok');
select ok((select has_refresh_token and refreshable and key_version = 1 and refresh_failures = 0
             and next_refresh_at between expires_at - interval '11 minutes' and expires_at - interval '9 minutes'
           from app.integration_credentials where integration_id = (select (r ->> 'integrationId')::uuid from done)),
  'its credential is stored, with the next refresh before expiry');
select is(pg_temp.sqlerr($$select pg_temp.complete('s3', jsonb_build_array(pg_temp.account('1001')))$$), 'PT409 STATE_USED', 'a state completes once');
-- As the api role in a request of A1: the state of A1's credential, never its ciphertext; in B1, nothing of A1.
create function pg_temp.api_reads(p_sql text) returns text
language plpgsql as $$
declare v text;
begin
  set local role pressroom_api;
  execute p_sql into v;
  reset role;
  return v;
exception when others then
  reset role;
  return sqlstate;
end
$$;
select pg_temp.act_as('A.viewer', 'A1');
select is(pg_temp.api_reads($$select count(*)::text from app.integration_credentials where refreshable and expires_at is not null$$), '1',
  'the api role in a request of A1 reads the state of A1''s credential');
select is(pg_temp.api_reads($$select count(ciphertext)::text from app.integration_credentials$$), '42501',
  'and never its ciphertext (42501)');
select pg_temp.act_as('B.owner', 'B1');
select is(pg_temp.api_reads($$select count(*)::text from app.integration_credentials$$), '0',
  'in a request of another organization it reads nothing of A1''s');
select pg_temp.act_as_owner();
select pg_temp.act_as('A.viewer', 'A1');
select is((select app.integration_json((r ->> 'integrationId')::uuid) - 'createdAt' - 'updatedAt' - 'id' from done),
  jsonb_build_object('connector', 'x', 'platform', 'x', 'name', 'User 1001', 'username', 'alice', 'status', 'active',
    'content', jsonb_build_object('canPublishArticles', true), 'accountId', '1001', 'instanceUrl', null,
    'connectionState', 'ok', 'connectionReason', null, 'credentialsExpireAt', null),
  'the integration''s JSON shows the connection, and no secret');
select ok((select app.integration_json((r ->> 'integrationId')::uuid, true)::text !~* 'ciphertext|PRV1|token' from done), 'the detail has no credential either');
select pg_temp.act_as_owner();

-- The same account again, as a new connection: refused.
select pg_temp.begin_as('A.manager', 's4');
select pg_temp.take('s4');
select is(pg_temp.sqlerr($$select pg_temp.complete('s4', jsonb_build_array(pg_temp.account('1001')))$$), 'PT409 ACCOUNT_ALREADY_CONNECTED', 'an account is connected once per workspace');

-- The starter is no longer a manager when the callback comes.
update app.workspace_members set role = 'manager' where user_id = pg_temp.id('A.editor') and workspace_id = pg_temp.id('A1');
select pg_temp.begin_as('A.editor', 's5');
select pg_temp.take('s5');
update app.workspace_members set role = 'editor' where user_id = pg_temp.id('A.editor') and workspace_id = pg_temp.id('A1');
select is(pg_temp.sqlerr($$select pg_temp.complete('s5', jsonb_build_array(pg_temp.account('1005')))$$), 'PT403 ROLE_REQUIRED', 'completing re-checks that the starter is still a manager');

------------------------------------------------------------------------------
-- Reconnect
------------------------------------------------------------------------------
select pg_temp.begin_as('A.manager', 'r1', 'x', null, (select (r ->> 'integrationId')::uuid from done));
select is((pg_temp.take('r1') ->> 'integrationId')::uuid, (select (r ->> 'integrationId')::uuid from done), 'a reconnect''s state names its integration');
select pg_temp.begin_as('A.manager', 'r2', 'x', null, (select (r ->> 'integrationId')::uuid from done));
select ok(pg_temp.take('r2') -> 'currentCredential' ->> 'ciphertext' is not null, 'taking a reconnect''s state hands the server the stored credential (to keep its refresh token)');
select is(pg_temp.sqlerr($$select pg_temp.complete('r2', jsonb_build_array(pg_temp.account('2002')))$$), 'PT409 RECONNECT_ACCOUNT_MISMATCH', 'a reconnect refuses another account');
select pg_temp.begin_as('A.manager', 'r3', 'x', null, (select (r ->> 'integrationId')::uuid from done));
select pg_temp.take('r3');
select is(pg_temp.sqlerr($$select pg_temp.complete('r3', jsonb_build_array(pg_temp.account('1001', 'alice', false)))$$), 'PT409 REFRESH_TOKEN_DROPPED',
  'a stored refresh token is never replaced with none');
select pg_temp.begin_as('A.manager', 'r4', 'x', null, (select (r ->> 'integrationId')::uuid from done));
select pg_temp.take('r4');
select is(pg_temp.complete('r4', jsonb_build_array(pg_temp.account('1001', 'alice2'))) ->> 'reconnected', 'true', 'the same account reconnects');
select is((select convert_from(ciphertext, 'UTF8') from app.integration_credentials where integration_id = (select (r ->> 'integrationId')::uuid from done)),
  rpad('PRV1-test-1001', 48, '.'), 'with its new credential');

------------------------------------------------------------------------------
-- Several accounts: a pending connection and the choice
------------------------------------------------------------------------------
select pg_temp.begin_as('A.manager', 'p1', 'linkedin');
select pg_temp.take('p1', 'linkedin');
create temp table pend as select pg_temp.complete('p1', jsonb_build_array(pg_temp.account('urn:li:person:1'), pg_temp.account('urn:li:organization:2'),
  pg_temp.account('urn:li:organization:3'))) as r;
grant select on pend to public;
select ok((select r ? 'pendingConnectionId' and not r ? 'integrationId' from pend), 'several accounts make a pending connection, no integration yet');
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr($$select api.get_pending_connection((select (r ->> 'pendingConnectionId')::uuid from pend))$$), 'PT403 ROLE_REQUIRED', 'an editor cannot see it');
select pg_temp.act_as('A.manager', 'A1');
select is((select jsonb_path_query_array(api.get_pending_connection((r ->> 'pendingConnectionId')::uuid), '$.accounts[*].accountId') from pend),
  '["urn:li:person:1", "urn:li:organization:2", "urn:li:organization:3"]', 'a manager sees the accounts');
select ok((select api.get_pending_connection((r ->> 'pendingConnectionId')::uuid)::text !~* 'ciphertext|PRV1|credential' from pend), 'and no credential');
select is(pg_temp.sqlerr($$select api.choose_pending_connection((select (r ->> 'pendingConnectionId')::uuid from pend), array['urn:li:organization:9'])$$),
  'PT400 UNKNOWN_ACCOUNT', 'only the consent''s accounts can be chosen');
select is((select jsonb_array_length(api.choose_pending_connection((r ->> 'pendingConnectionId')::uuid, array['urn:li:organization:2', 'urn:li:organization:3'])) from pend),
  2, 'choosing makes one integration per account');
select pg_temp.act_as_owner();
select is((select count(*)::int from app.integrations i join app.integration_credentials c on c.integration_id = i.id
           where i.connector = 'linkedin' and i.account_id like 'urn:li:organization:%'), 2, 'each with its own credential');
select ok(not exists (select 1 from app.pending_connections), 'the pending connection is gone');

------------------------------------------------------------------------------
-- Password connect (Bluesky)
------------------------------------------------------------------------------
select pg_temp.act_as('A.manager', 'A1');
select is(api.connect_with_password('bluesky', null, null, 'https://pds.example', pg_temp.account('did:plc:abc', 'bob.example')) ->> 'instanceUrl',
  'https://pds.example', 'a password connection makes the integration of its PDS');
select is(pg_temp.sqlerr($$select api.connect_with_password('x', null, null, null, pg_temp.account('9'))$$), 'PT400 CONNECT_FLOW_NOT_APPLICABLE', 'only for password connectors');
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr($$select api.connect_with_password('bluesky', null, null, 'https://pds.example', pg_temp.account('did:plc:x'))$$), 'PT403 ROLE_REQUIRED', 'manager role');
select pg_temp.act_as_owner();

------------------------------------------------------------------------------
-- The worker: refresh failures, reconnect required, events
------------------------------------------------------------------------------
select is(jsonb_array_length(pg_temp.as_worker(format('select app.credentials_for(array[%L]::uuid[])', (select r ->> 'integrationId' from done)))), 1,
  'the worker reads an integration''s credential');
select ok((pg_temp.as_worker(format('select app.credentials_refresh_failed(%L, %L)', (select r ->> 'integrationId' from done), 'X answered 503')) ->> 'nextRefreshAt')::timestamptz
          >= now() + interval '59 seconds', 'a failed refresh is retried later, with backoff');
select is((select app.integration_connection_json((r ->> 'integrationId')::uuid, pg_temp.id('A1')) ->> 'connectionState' from done), 'refresh_failing',
  'and the integration shows refresh_failing, still connected');
-- A workspace subscription that wants the integration events.
select pg_temp.act_as('A.manager', 'A1');
select api.create_webhook_subscription('http://127.0.0.1:9/hook', array['integration.reconnect_required', 'integration.reconnected'], null, true,
  decode(repeat('ab', 40), 'hex'), gen_random_uuid());
select pg_temp.act_as_owner();
select is(pg_temp.as_worker(format('select to_jsonb(app.integration_reconnect_required(%L, %L))', (select r ->> 'integrationId' from done), 'invalid_grant')),
  'true'::jsonb, 'a refused grant makes the integration reconnect_required');
select is((select array_agg(type order by occurred_at) from app.webhook_events where subject_id = (select (r ->> 'integrationId')::uuid from done)),
  array['integration.reconnect_required'], 'with its lifecycle event');
select pg_temp.begin_as('A.manager', 'r5', 'x', null, (select (r ->> 'integrationId')::uuid from done));
select pg_temp.take('r5');
select pg_temp.complete('r5', jsonb_build_array(pg_temp.account('1001', 'alice')));
select is((select row(connection_state, connection_reason)::text from app.integrations where id = (select (r ->> 'integrationId')::uuid from done)),
  row('ok', null)::text, 'a reconnect makes it ok again');
select is((select array_agg(type order by occurred_at, type desc) from app.webhook_events where subject_id = (select (r ->> 'integrationId')::uuid from done)),
  array['integration.reconnect_required', 'integration.reconnected'], 'and emits integration.reconnected');
-- Expiring: the hard expiry within 7 days.
update app.integration_credentials set refresh_expires_at = now() + interval '3 days' where integration_id = (select (r ->> 'integrationId')::uuid from done);
select is((select app.integration_connection_json((r ->> 'integrationId')::uuid, pg_temp.id('A1')) ->> 'connectionState' from done), 'expiring',
  'a refresh token expiring within 7 days shows expiring');

-- Due for the refresh job: live, ok, next_refresh_at passed; never a reconnect_required one.
update app.integration_credentials set next_refresh_at = now() - interval '1 second' where integration_id = (select (r ->> 'integrationId')::uuid from done);
select ok(pg_temp.as_worker('select app.credentials_due(10)') ? (select r ->> 'integrationId' from done), 'a credential past its next refresh is due');
select pg_temp.as_worker(format('select to_jsonb(app.integration_reconnect_required(%L, %L))', (select r ->> 'integrationId' from done), 'revoked'));
select ok(not pg_temp.as_worker('select app.credentials_due(10)') ? (select r ->> 'integrationId' from done), 'a reconnect_required one is not refreshed');

------------------------------------------------------------------------------
-- Purge
------------------------------------------------------------------------------
update app.oauth_states set expires_at = now() - interval '2 hours' where state_hash = pg_temp.state('s1');
select is((app.purge_expired() ->> 'oauthStates')::int, 1, 'app.purge_expired removes the state an hour past expiry');
select ok(not exists (select 1 from app.oauth_states where state_hash = pg_temp.state('s1'))
          and exists (select 1 from app.oauth_states where state_hash = pg_temp.state('s2')),
  'and only it: an expired state stays an hour, so a late callback still hears state_expired');

select * from finish();
rollback;
