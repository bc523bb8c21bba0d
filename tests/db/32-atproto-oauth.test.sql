-- Bluesky through AT Protocol OAuth (db/migrations/committed/000031-publishing-to-real-platforms.sql, split 22-atproto-oauth.sql): the
-- connectors that also connect through OAuth (app.connectors.oauth, declared from the
-- registry), api.connect_begin for them, and the OAuth client's state store
-- (app.atproto_oauth_states, engine-only; put by a manager, read and deleted by the server's login).
begin;
select plan(19);
-- @include personas.sql

create function pg_temp.as_app(p_sql text) returns text
language plpgsql as $$
declare v text;
begin
  perform pg_temp.act_as_owner();
  set local role pressroom_app;
  execute p_sql into v;
  reset role;
  return v;
end
$$;
create function pg_temp.key(p_label text) returns bytea
language sql immutable as $$ select sha256(convert_to('atproto-state:' || p_label, 'UTF8')) $$;
-- A ciphertext as the server hands it to SQL (opaque here).
create function pg_temp.ct(p_marker text) returns bytea
language sql immutable as $$ select convert_to(rpad('PRV1-test-' || p_marker, 48, '.'), 'UTF8') $$;

------------------------------------------------------------------------------
-- Which connectors connect through OAuth
------------------------------------------------------------------------------
select is((select array_agg(name || ':' || connect || ':' || oauth order by name) from app.connectors),
  array['bluesky:password:true', 'linkedin:oauth:true', 'mastodon:oauth:true', 'sandbox:none:false', 'webhook:none:false', 'x:oauth:true'],
  'after migrating, Bluesky (app passwords) is declared with an OAuth flow too; every oauth connector has one');
select is(pg_temp.sqlerr($$select app.declare_connectors('[{"name": "sandbox", "platforms": ["x"], "connect": "none", "oauth": true}]')$$),
  'P0001', 'a connector that connects no account cannot declare an OAuth flow');
select app.declare_connectors('[{"name": "sandbox", "platforms": ["bluesky","facebook","instagram","linkedin","mastodon","pinterest","threads","tiktok","x","youtube"], "connect": "none"},
  {"name": "webhook", "platforms": ["bluesky","facebook","instagram","linkedin","mastodon","pinterest","threads","tiktok","x","youtube"], "connect": "none"},
  {"name": "mastodon", "platforms": ["mastodon"], "connect": "oauth"}, {"name": "x", "platforms": ["x"], "connect": "oauth"},
  {"name": "bluesky", "platforms": ["bluesky"], "connect": "password"}, {"name": "linkedin", "platforms": ["linkedin"], "connect": "oauth"}]');
select is((select oauth from app.connectors where name = 'bluesky'), false, 'declared without oauth, a password connector has no OAuth flow');
select is((select oauth from app.connectors where name = 'x'), true, 'an oauth connector always has one');

------------------------------------------------------------------------------
-- api.connect_begin follows app.connectors.oauth
------------------------------------------------------------------------------
select pg_temp.act_as('A.manager', 'A1');
select is(pg_temp.sqlerr($$select api.connect_begin('bluesky', null, null, 'https://pds.example', sha256('b0'), null, 'https://p.example/v1/oauth/callback/bluesky', 'https://p.example/app', null)$$),
  'PT400 CONNECT_FLOW_NOT_APPLICABLE', 'a password connector without an OAuth flow is refused');
select pg_temp.act_as_owner();
select app.declare_connectors('[{"name": "sandbox", "platforms": ["bluesky","facebook","instagram","linkedin","mastodon","pinterest","threads","tiktok","x","youtube"], "connect": "none"},
  {"name": "webhook", "platforms": ["bluesky","facebook","instagram","linkedin","mastodon","pinterest","threads","tiktok","x","youtube"], "connect": "none"},
  {"name": "mastodon", "platforms": ["mastodon"], "connect": "oauth"}, {"name": "x", "platforms": ["x"], "connect": "oauth"},
  {"name": "bluesky", "platforms": ["bluesky"], "connect": "password", "oauth": true}, {"name": "linkedin", "platforms": ["linkedin"], "connect": "oauth"}]');
select pg_temp.act_as('A.manager', 'A1');
select is(api.connect_begin('bluesky', null, null, 'https://pds.example', sha256('b1'), null, 'https://p.example/v1/oauth/callback/bluesky', 'https://p.example/app', null) ->> 'connector',
  'bluesky', 'with its OAuth flow declared, a manager starts a Bluesky connection');
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr($$select api.connect_begin('bluesky', null, null, 'https://pds.example', sha256('b2'), null, 'https://p.example/v1/oauth/callback/bluesky', 'https://p.example/app', null)$$),
  'PT403 ROLE_REQUIRED', 'an editor cannot');
select pg_temp.act_as_owner();
select is((select connector || ':' || instance_url from app.oauth_states where state_hash = sha256('b1')), 'bluesky:https://pds.example', 'the state row is the connection''s');

------------------------------------------------------------------------------
-- The OAuth client's state store
------------------------------------------------------------------------------
select is(
  array(select format('%s:%s', r, 'app.atproto_oauth_states') from unnest(array['pressroom_api', 'pressroom_request', 'pressroom_bi', 'pressroom_worker', 'pressroom_app']) r
        where has_table_privilege(r, 'app.atproto_oauth_states', 'select, insert, update, delete, truncate, references, trigger')
        order by 1),
  '{}'::text[], 'no role but the definer holds a privilege on the state store');
select ok(not has_function_privilege('pressroom_request', 'api.atproto_oauth_state_get(bytea)', 'execute')
          and not has_function_privilege('pressroom_request', 'api.atproto_oauth_state_del(bytea)', 'execute')
          and has_function_privilege('pressroom_app', 'api.atproto_oauth_state_get(bytea)', 'execute')
          and has_function_privilege('pressroom_app', 'api.atproto_oauth_state_del(bytea)', 'execute')
          and not has_function_privilege('pressroom_worker', 'api.atproto_oauth_state_get(bytea)', 'execute'),
  'reading and deleting states is the server login''s only (the public callback)');

select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr($$select api.atproto_oauth_state_put(pg_temp.key('s1'), pg_temp.ct('s1'), 1)$$), 'PT403 ROLE_REQUIRED', 'an editor cannot put a state');
select pg_temp.act_as('A.manager', 'A1');
select is(pg_temp.sqlerr($$select api.atproto_oauth_state_put(sha256('x')::bytea || '\x00'::bytea, pg_temp.ct('s0'), 1)$$), 'PT400 VALIDATION_FAILED', 'the key is a SHA-256');
select api.atproto_oauth_state_put(pg_temp.key('s1'), pg_temp.ct('s1'), 1);
select pg_temp.act_as_owner();
select is((select ciphertext from app.atproto_oauth_states where key_hash = pg_temp.key('s1')), pg_temp.ct('s1'), 'a manager puts the state of the connection being started');
select ok((select expires_at between now() + interval '9 minutes' and now() + interval '11 minutes' from app.atproto_oauth_states where key_hash = pg_temp.key('s1')),
  'kept for 10 minutes');
select is(pg_temp.as_app($$select api.atproto_oauth_state_get(pg_temp.key('s1')) ->> 'ciphertext'$$), encode(pg_temp.ct('s1'), 'base64'), 'the server login reads it back');
select is(pg_temp.as_app($$select api.atproto_oauth_state_del(pg_temp.key('s1'))::text$$), 'true', 'and deletes it once used');
select is(pg_temp.as_app($$select api.atproto_oauth_state_get(pg_temp.key('s1'))::text$$), null, 'a deleted state is not found');

-- Expired states: not read; purged an hour after expiry by the next put.
insert into app.atproto_oauth_states (key_hash, ciphertext, key_version, created_at, expires_at)
values (pg_temp.key('late'), pg_temp.ct('late'), 1, now() - interval '11 minutes', now() - interval '1 minute'),
       (pg_temp.key('old'), pg_temp.ct('old'), 1, now() - interval '2 hours', now() - interval '110 minutes');
select is(pg_temp.as_app($$select api.atproto_oauth_state_get(pg_temp.key('late'))::text$$), null, 'an expired state is not read');
select pg_temp.act_as('A.manager', 'A1');
select api.atproto_oauth_state_put(pg_temp.key('s2'), pg_temp.ct('s2'), 1);
select pg_temp.act_as_owner();
select is((select array_agg(encode(key_hash, 'hex') order by created_at) from app.atproto_oauth_states where key_hash in (pg_temp.key('late'), pg_temp.key('old'), pg_temp.key('s2'))),
  array[encode(pg_temp.key('late'), 'hex'), encode(pg_temp.key('s2'), 'hex')], 'a put purges states expired over an hour ago, not the recent ones');

select * from finish();
rollback;
