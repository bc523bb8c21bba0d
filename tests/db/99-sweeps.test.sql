-- Cross-tenant sweeps run per workspace (db/migrations/committed/000041-sweeps-per-workspace.sql,
-- docs/citus.md): the job functions that lock or delete rows of every tenant find the
-- workspaces with due work by an unlocked read, then lock and change each workspace's rows
-- with workspace_id = v_ws (one Citus shard per statement). On one node the results are
-- those of the old single statements: due rows of workspaces of two organizations are all
-- processed, the oldest first and at most the limit per call over all workspaces; rows not
-- due stay; a last call finds nothing. And the text of each function shows every locking,
-- updating or deleting statement naming its workspace.
begin;
select plan(49);
-- @include personas.sql
-- @include content.sql

-- The fixtures of each sweep are rows labelled 'g<N>', N their age in minutes past due
-- (g1 the youngest). g1 and g2 are A1's; from g3 on they alternate B1 (odd) and A1 (even).
-- With limit L and L + 2 due rows, the first call takes g3..g(L+2) from both workspaces
-- and leaves exactly g1 and g2.
create function pg_temp.ws(p_g int) returns text
language sql immutable as $$ select case when p_g <= 2 or p_g % 2 = 0 then 'A1' else 'B1' end $$;

------------------------------------------------------------------------------
-- app.expire_due_reviews (500 per call)
------------------------------------------------------------------------------
insert into app.reviews (organization_id, workspace_id, title, due_at, stages)
select pg_temp.id(left(pg_temp.ws(g), 1)), pg_temp.id(pg_temp.ws(g)), 'g' || g, now() - make_interval(mins => g), '[]'
from generate_series(1, 502) g;
insert into app.reviews (organization_id, workspace_id, title, due_at, stages) values
  (pg_temp.id('A'), pg_temp.id('A1'), 'not yet due', now() + interval '1 hour', '[]'),
  (pg_temp.id('B'), pg_temp.id('B1'), 'no due date', null, '[]'),
  (pg_temp.id('B'), pg_temp.id('B1'), 'draft past due', now() - interval '1 day', '[]');
update app.reviews set status = 'active' where title <> 'draft past due';

select is(pg_temp.as_worker('select to_jsonb(app.expire_due_reviews())'), '500'::jsonb,
  'reviews: the first call expires 500 overdue reviews');
select is((select array_agg(w.name || ':' || count order by w.name) from (
             select workspace_id, count(*) from app.reviews where status = 'expired' group by workspace_id) r
           join app.workspaces w on w.id = r.workspace_id),
  array['A1:250', 'B1:250'], '... of both organizations'' workspaces');
select is((select array_agg(title order by title) from app.reviews where status = 'active' and due_at <= now()),
  array['g1', 'g2'], '... the oldest first: only the two youngest are left');
select is(pg_temp.as_worker('select to_jsonb(app.expire_due_reviews())'), '2'::jsonb, 'the second call expires the rest');
select is((select array_agg(title || ':' || status order by title) from app.reviews where title !~ '^g'),
  array['draft past due:draft', 'no due date:active', 'not yet due:active'], 'reviews not due are untouched');
select is(pg_temp.as_worker('select to_jsonb(app.expire_due_reviews())'), '0'::jsonb, 'a third call finds nothing');
select is((select count(*)::int from app.review_activity where event = 'expired'), 502, 'each expiry is in its review''s activity once');

------------------------------------------------------------------------------
-- app.expire_review_attachments (1000 per call)
------------------------------------------------------------------------------
insert into app.content_roots (id, organization_id, workspace_id, caption) values
  (pg_temp.id('root:att.A1'), pg_temp.id('A'), pg_temp.id('A1'), 'att A1'),
  (pg_temp.id('root:att.B1'), pg_temp.id('B'), pg_temp.id('B1'), 'att B1');
insert into app.content_items (id, organization_id, workspace_id, root_id, integration_id, status) values
  (pg_temp.id('att.A1'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('root:att.A1'), pg_temp.id('ig:A1.x'), 'draft'),
  (pg_temp.id('att.B1'), pg_temp.id('B'), pg_temp.id('B1'), pg_temp.id('root:att.B1'), pg_temp.id('ig:B1.x'), 'draft');
insert into app.reviews (id, organization_id, workspace_id, title) values
  (pg_temp.id('R.A1'), pg_temp.id('A'), pg_temp.id('A1'), 'with attachments A1'),
  (pg_temp.id('R.B1'), pg_temp.id('B'), pg_temp.id('B1'), 'with attachments B1');
insert into app.review_items (id, organization_id, workspace_id, review_id, content_id) values
  (pg_temp.id('RI.A1'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('R.A1'), pg_temp.id('att.A1')),
  (pg_temp.id('RI.B1'), pg_temp.id('B'), pg_temp.id('B1'), pg_temp.id('R.B1'), pg_temp.id('att.B1'));
create function pg_temp.attachment(p_label text, p_ws text, p_state text, p_expires timestamptz) returns void
language sql as $$
  insert into app.review_attachments (organization_id, workspace_id, review_id, item_id, filename, content_type,
    declared_size, state, upload_key, storage_key, expires_at)
  values (pg_temp.id(left(p_ws, 1)), pg_temp.id(p_ws), pg_temp.id('R.' || p_ws), pg_temp.id('RI.' || p_ws), p_label,
    'image/png', 10, p_state, 'att-up/' || p_label, 'att/' || p_label, p_expires)
$$;
select count(pg_temp.attachment('g' || g, pg_temp.ws(g), 'pending', now() - make_interval(mins => g)))
from generate_series(1, 1002) g;
select pg_temp.attachment('not yet due', 'A1', 'pending', now() + interval '1 hour'),
       pg_temp.attachment('completed', 'B1', 'completed', now() - interval '1 day');

select is(pg_temp.as_worker('select to_jsonb(app.expire_review_attachments())'), '1000'::jsonb,
  'attachments: the first call expires 1000 never-completed uploads');
select is((select array_agg(w.name || ':' || count order by w.name) from (
             select workspace_id, count(*) from app.review_attachments where state = 'expired' group by workspace_id) a
           join app.workspaces w on w.id = a.workspace_id),
  array['A1:500', 'B1:500'], '... of both organizations'' workspaces');
select is((select array_agg(filename order by filename) from app.review_attachments where state = 'pending' and expires_at <= now()),
  array['g1', 'g2'], '... the oldest first: only the two youngest are left');
select is((select count(*)::int from app.media_storage_garbage where reason = 'upload_expired' and storage_key ~ '^att'), 2000,
  '... and both keys of each are queued for deletion');
select is(pg_temp.as_worker('select to_jsonb(app.expire_review_attachments())'), '2'::jsonb, 'the second call expires the rest');
select is((select array_agg(filename || ':' || state order by filename) from app.review_attachments where filename !~ '^g'),
  array['completed:completed', 'not yet due:pending'], 'attachments not due are untouched');
select is(pg_temp.as_worker('select to_jsonb(app.expire_review_attachments())'), '0'::jsonb, 'a third call finds nothing');

------------------------------------------------------------------------------
-- app.inbox_purge_deliveries(p_limit): deliveries past the retention (30 days)
-- whose events are all folded
------------------------------------------------------------------------------
create function pg_temp.delivery(p_label text, p_ws text, p_received timestamptz) returns uuid
language sql as $$
  insert into app.inbox_deliveries (id, organization_id, workspace_id, integration_id, source, body, headers,
    event_count, new_event_count, received_at)
  values (pg_temp.id('D.' || p_label), pg_temp.id(left(p_ws, 1)), pg_temp.id(p_ws), pg_temp.id('ig:' || p_ws || '.x'), 'sandbox',
    convert_to(p_label, 'UTF8'), jsonb_build_object('label', p_label), 1, 1, p_received)
  returning id
$$;
create function pg_temp.inbox_event(p_label text, p_ws text, p_folded boolean) returns void
language sql as $$
  insert into app.inbox_events (organization_id, workspace_id, integration_id, delivery_id, event_id, type, thread_kind,
    thread_key, message_key, occurred_at, folded_at)
  values (pg_temp.id(left(p_ws, 1)), pg_temp.id(p_ws), pg_temp.id('ig:' || p_ws || '.x'), pg_temp.id('D.' || p_label),
    'ev-' || p_label, 'message.created', 'comment', 'post', 'msg-' || p_label, now() - interval '40 days',
    case when p_folded then now() - interval '40 days' end)
$$;
select count(pg_temp.delivery('g' || g, pg_temp.ws(g), now() - interval '31 days' - make_interval(mins => g))),
       count(pg_temp.inbox_event('g' || g, pg_temp.ws(g), true))
from generate_series(1, 5) g;
select pg_temp.delivery('young', 'A1', now() - interval '29 days'),
       pg_temp.delivery('unfolded', 'B1', now() - interval '40 days'),
       pg_temp.inbox_event('unfolded', 'B1', false);

select is(pg_temp.as_worker('select app.inbox_purge_deliveries(3)'), '{"more": true, "purged": 3, "retentionDays": 30}'::jsonb,
  'inbox deliveries: a call deletes at most p_limit deliveries and says there is more');
select is((select array_agg(headers ->> 'label' order by headers ->> 'label') from app.inbox_deliveries),
  array['g1', 'g2', 'unfolded', 'young'], '... the oldest, of both organizations'' workspaces (g3, g4, g5)');
select is((select count(*)::int from app.inbox_events where event_id ~ '^ev-g' and delivery_id is null), 3,
  '... their events stay, without their delivery');
select is(pg_temp.as_worker('select app.inbox_purge_deliveries(3)'), '{"more": false, "purged": 2, "retentionDays": 30}'::jsonb,
  'the second call deletes the rest');
select is((select array_agg(headers ->> 'label' order by headers ->> 'label') from app.inbox_deliveries),
  array['unfolded', 'young'], 'a young delivery and one with an unfolded event stay');
select is(pg_temp.as_worker('select app.inbox_purge_deliveries(3)') ->> 'purged', '0', 'a third call finds nothing');

------------------------------------------------------------------------------
-- app.media_expire_upload_sessions(p_limit)
------------------------------------------------------------------------------
create function pg_temp.upload(p_label text, p_ws text, p_state text, p_expires timestamptz, p_swept timestamptz default null)
returns void
language sql as $$
  insert into app.media_upload_sessions (id, organization_id, workspace_id, filename, content_type, declared_size,
    storage_key, state, expires_at, upload_swept_at)
  values (pg_temp.id('U.' || p_label), pg_temp.id(left(p_ws, 1)), pg_temp.id(p_ws), p_label, 'image/png', 10,
    'up/' || p_label, p_state, p_expires, p_swept)
$$;
select count(pg_temp.upload('g' || g, pg_temp.ws(g), 'pending', now() - make_interval(mins => g))) from generate_series(1, 5) g;
select pg_temp.upload('not yet due', 'A1', 'pending', now() + interval '1 hour'),
       pg_temp.upload('claimed', 'B1', 'pending', now() - interval '1 day'),
       pg_temp.upload('forget A1', 'A1', 'expired', now() - interval '8 days', now() - interval '8 days'),
       pg_temp.upload('forget B1', 'B1', 'expired', now() - interval '8 days', now() - interval '8 days'),
       pg_temp.upload('recently swept', 'B1', 'expired', now() - interval '2 days', now() - interval '2 days');
-- A completion of 'claimed' is under way (api.claim_media_upload_completion).
insert into app.work_claims (kind, subject_id, organization_id, workspace_id, token, claimed_until)
values ('media_upload_completion', pg_temp.id('U.claimed'), pg_temp.id('B'), pg_temp.id('B1'), gen_random_uuid(), now() + interval '1 hour');
create function pg_temp.uploads() returns text[]
language sql as $$
  select array_agg(filename || ':' || state || case when upload_swept_at is null then '' else ':swept' end order by filename)
  from app.media_upload_sessions
$$;

select is(pg_temp.as_worker('select app.media_expire_upload_sessions(3)'), '{"expired": 3, "forgotten": 2, "keysQueued": 6}'::jsonb,
  'upload sessions: a call expires and sweeps at most p_limit each (two keys queued per session) and forgets the old swept ones');
select is(pg_temp.uploads(),
  array['claimed:pending', 'g1:pending', 'g2:pending', 'g3:expired:swept', 'g4:expired:swept', 'g5:expired:swept',
        'not yet due:pending', 'recently swept:expired:swept'],
  '... the oldest of both organizations'' workspaces, not the claimed one; those swept a week past expiry are gone');
select is((select array_agg(storage_key order by storage_key) from app.media_storage_garbage where storage_key like 'up/%'),
  array['up/g3', 'up/g4', 'up/g5'], '... their upload keys are queued');
select is(pg_temp.as_worker('select app.media_expire_upload_sessions(3)'), '{"expired": 2, "forgotten": 0, "keysQueued": 4}'::jsonb,
  'the second call takes the rest');
select is(pg_temp.uploads(),
  array['claimed:pending', 'g1:expired:swept', 'g2:expired:swept', 'g3:expired:swept', 'g4:expired:swept', 'g5:expired:swept',
        'not yet due:pending', 'recently swept:expired:swept'],
  'a session not yet expired and one whose completion is claimed stay pending and unswept');
select is(pg_temp.as_worker('select app.media_expire_upload_sessions(3)'), '{"expired": 0, "forgotten": 0, "keysQueued": 0}'::jsonb,
  'a third call finds nothing');
update app.work_claims set claimed_until = now() - interval '1 second' where subject_id = pg_temp.id('U.claimed');
select is(pg_temp.as_worker('select app.media_expire_upload_sessions(3)'), '{"expired": 1, "forgotten": 0, "keysQueued": 2}'::jsonb,
  'once its claim lapsed, the claimed session expires too');

------------------------------------------------------------------------------
-- app.media_purge_bin(p_limit)
------------------------------------------------------------------------------
create function pg_temp.binned(p_label text, p_ws text, p_state text, p_delete_after timestamptz) returns void
language sql as $$
  insert into app.media_items (id, organization_id, workspace_id, type, filename, content_type, file_size, storage_key,
    state, deleted_at, delete_after)
  values (pg_temp.id('M.' || p_label), pg_temp.id(left(p_ws, 1)), pg_temp.id(p_ws), 'image', p_label, 'image/png', 1000,
    'bin/' || p_label, p_state, case when p_state = 'deleted' then now() - interval '31 days' end,
    case when p_state = 'deleted' then p_delete_after end)
$$;
select count(pg_temp.binned('g' || g, pg_temp.ws(g), 'deleted', now() - make_interval(mins => g))) from generate_series(1, 5) g;
select pg_temp.binned('binned not yet due', 'A1', 'deleted', now() + interval '1 hour'),
       pg_temp.binned('active', 'B1', 'active', null);

select is(pg_temp.as_worker('select app.media_purge_bin(3)'), '{"purged": 3, "skipped": 0}'::jsonb,
  'media bin: a call deletes at most p_limit binned items past delete_after');
select is((select array_agg(filename order by filename) from app.media_items where storage_key like 'bin/%'),
  array['active', 'binned not yet due', 'g1', 'g2'], '... the oldest, of both organizations'' workspaces (g3, g4, g5)');
select is((select array_agg(storage_key order by storage_key) from app.media_storage_garbage where storage_key like 'bin/%'),
  array['bin/g3', 'bin/g4', 'bin/g5'], '... their bytes are queued');
select is(pg_temp.as_worker('select app.media_purge_bin(3)'), '{"purged": 2, "skipped": 0}'::jsonb, 'the second call deletes the rest');
select is((select array_agg(filename order by filename) from app.media_items where storage_key like 'bin/%'),
  array['active', 'binned not yet due'], 'an item not yet due and an active one stay');
select is(pg_temp.as_worker('select app.media_purge_bin(3)'), '{"purged": 0, "skipped": 0}'::jsonb, 'a third call finds nothing');

------------------------------------------------------------------------------
-- app.webhook_purge(p_limit): events past the retention (30 days) whose
-- deliveries are all delivered before it, and log entries of no delivery
------------------------------------------------------------------------------
insert into app.webhook_subscriptions (id, organization_id, workspace_id, url, events, secret_ciphertext)
select pg_temp.id('S.' || ws), pg_temp.id(left(ws, 1)), pg_temp.id(ws), 'http://127.0.0.1:9/hook', array['content.deleted'],
       decode(repeat('ab', 40), 'hex')
from unnest(array['A1', 'B1']) ws;
create function pg_temp.wh_event(p_label text, p_ws text, p_at timestamptz, p_delivery_state text) returns void
language sql as $$
  with e as (
    insert into app.webhook_events (id, organization_id, workspace_id, type, data, occurred_at)
    values (pg_temp.id('E.' || p_label), pg_temp.id(left(p_ws, 1)), pg_temp.id(p_ws), 'content.deleted',
            jsonb_build_object('label', p_label), p_at)
    returning id),
  d as (
    insert into app.webhook_deliveries (id, organization_id, workspace_id, subscription_id, event_id, state, delivered_at, created_at)
    select pg_temp.id('WD.' || p_label), pg_temp.id(left(p_ws, 1)), pg_temp.id(p_ws), pg_temp.id('S.' || p_ws), e.id, p_delivery_state,
           case when p_delivery_state = 'delivered' then p_at end, p_at
    from e
    returning id)
  insert into app.webhook_delivery_log (organization_id, workspace_id, subscription_id, delivery_id, kind, attempt, created_at)
  select pg_temp.id(left(p_ws, 1)), pg_temp.id(p_ws), pg_temp.id('S.' || p_ws), d.id, 'attempt', 1, p_at from d
$$;
create function pg_temp.wh_entry(p_label text, p_ws text, p_at timestamptz) returns void
language sql as $$
  insert into app.webhook_delivery_log (organization_id, workspace_id, subscription_id, kind, error, created_at)
  values (pg_temp.id(left(p_ws, 1)), pg_temp.id(p_ws), pg_temp.id('S.' || p_ws), 'webhook.paused', p_label, p_at)
$$;
select count(pg_temp.wh_event('g' || g, pg_temp.ws(g), now() - interval '31 days' - make_interval(mins => g), 'delivered')),
       count(pg_temp.wh_entry('g' || g, pg_temp.ws(g), now() - interval '31 days' - make_interval(mins => g)))
from generate_series(1, 5) g;
select pg_temp.wh_event('young', 'A1', now() - interval '29 days', 'delivered'),
       pg_temp.wh_event('pending', 'B1', now() - interval '40 days', 'pending'),
       pg_temp.wh_entry('young', 'B1', now() - interval '29 days');
create function pg_temp.wh_left() returns text[]
language sql as $$
  select array(select 'event ' || (data ->> 'label') from app.webhook_events where type = 'content.deleted'
               union all
               select 'entry ' || error from app.webhook_delivery_log where kind = 'webhook.paused'
               order by 1)
$$;

select is(pg_temp.as_worker('select app.webhook_purge(3)') - 'retentionDays', '{"more": true, "events": 3, "logEntries": 3}'::jsonb,
  'webhooks: a call deletes at most p_limit events and p_limit entries of no delivery, and says there is more');
select is(pg_temp.wh_left(), array['entry g1', 'entry g2', 'entry young', 'event g1', 'event g2', 'event pending', 'event young'],
  '... the oldest, of both organizations'' workspaces (g3, g4, g5)');
select is((select count(*)::int from app.webhook_deliveries where id in (pg_temp.id('WD.g3'), pg_temp.id('WD.g4'), pg_temp.id('WD.g5')))
          + (select count(*)::int from app.webhook_delivery_log where delivery_id in (pg_temp.id('WD.g3'), pg_temp.id('WD.g4'), pg_temp.id('WD.g5'))),
  0, '... the deleted events'' deliveries and their log went with them');
select is(pg_temp.as_worker('select app.webhook_purge(3)') - 'retentionDays', '{"more": false, "events": 2, "logEntries": 2}'::jsonb,
  'the second call deletes the rest');
select is(pg_temp.wh_left(), array['entry young', 'event pending', 'event young'],
  'a young event, an event with a pending delivery and a young entry stay');
select is(pg_temp.as_worker('select app.webhook_purge(3)') - 'retentionDays', '{"more": false, "events": 0, "logEntries": 0}'::jsonb,
  'a third call finds nothing');

------------------------------------------------------------------------------
-- app.purge_expired: the workspace tables per workspace, the others as before
------------------------------------------------------------------------------
insert into app.idempotency_keys (workspace_id, principal_id, method, route, key, request_hash, expires_at)
select pg_temp.id(ws), pg_temp.id(left(ws, 1) || '.owner'), 'POST', '/v1/fixture', k, pg_temp.token(k), now() - interval '1 minute'
from (values ('A1', 'expired-a1'), ('A2', 'expired-a2'), ('B1', 'expired-b1')) x (ws, k);
insert into app.oauth_states (workspace_id, state_hash, organization_id, user_id, connector, platform, redirect_uri, return_to, expires_at)
select pg_temp.id(ws), pg_temp.token(label), pg_temp.id(left(ws, 1)), pg_temp.id(left(ws, 1) || '.owner'), 'sandbox', 'x',
       'http://127.0.0.1/cb', 'http://127.0.0.1/back', now() - age
from (values ('A1', 'state gone A1', interval '2 hours'), ('B1', 'state gone B1', interval '2 hours'),
             ('B1', 'state kept B1', interval '30 minutes')) x (ws, label, age);
insert into app.pending_connections (workspace_id, id, organization_id, user_id, connector, platform, accounts, credentials,
                                     credential_meta, expires_at)
select pg_temp.id(ws), pg_temp.id(label), pg_temp.id(left(ws, 1)), pg_temp.id(left(ws, 1) || '.owner'), 'sandbox', 'x',
       '[{"id": "1"}]', array['\x00'::bytea], '[{}]', now() + ttl
from (values ('A1', 'pending gone A1', interval '-1 minute'), ('B1', 'pending gone B1', interval '-1 minute'),
             ('A1', 'pending kept A1', interval '10 minutes')) x (ws, label, ttl);
update app.sessions set expires_at = now() - interval '2 days' where id = pg_temp.id('session:A.stranger');

select is(pg_temp.as_worker('select to_jsonb(app.purge_expired())') - 'rateLimitWindows' - 'authFailureSummaries',
  '{"sessions": 1, "oauthStates": 2, "idempotencyKeys": 3, "pendingConnections": 2}'::jsonb,
  'purge_expired: expired records of every workspace go (and the old session, which has no workspace)');
select is((select array_agg(key order by key) from app.idempotency_keys), array['fixture-a', 'fixture-b'],
  '... idempotency records not expired stay');
select is((select array_agg(state_hash = pg_temp.token('state kept B1')) from app.oauth_states), array[true],
  '... as does a state less than an hour past expiry');
select is((select array_agg(id) from app.pending_connections), array[pg_temp.id('pending kept A1')],
  '... and a pending connection not expired');
select is(pg_temp.as_worker('select to_jsonb(app.purge_expired())') - 'rateLimitWindows' - 'authFailureSummaries',
  '{"sessions": 0, "oauthStates": 0, "idempotencyKeys": 0, "pendingConnections": 0}'::jsonb, 'a second call finds nothing');

------------------------------------------------------------------------------
-- The text of the rewritten functions
------------------------------------------------------------------------------
-- The statements (split at ';') of a function that lock, update or delete rows of a
-- table, and do not name their workspace (workspace_id = v_ws); app.sessions and
-- app.rate_limit_counters have no workspace_id.
create function pg_temp.unrouted(p_fn regprocedure) returns text[]
language sql as $$
  select coalesce(array_agg(btrim(regexp_replace(s, '\s+', ' ', 'g'))), '{}')
  from pg_proc p, regexp_split_to_table(p.prosrc, ';') s
  where p.oid = p_fn
    and s ~* '(for\s+update|\mupdate\s+app\.|\mdelete\s+from\s+app\.)'
    and s !~ 'workspace_id = v_ws'
    and s !~* 'app\.(sessions|rate_limit_counters)\M'
$$;
create temporary table sweeps (fn regprocedure);
insert into sweeps values ('app.expire_due_reviews()'), ('app.expire_review_attachments()'), ('app.inbox_purge_deliveries(integer)'),
  ('app.media_expire_upload_sessions(integer)'), ('app.media_purge_bin(integer)'), ('app.webhook_purge(integer)'),
  ('app.purge_expired()');

select is(array(select fn::text from sweeps where pg_get_functiondef(fn) !~ 'workspace_id = v_ws' order by 1), '{}'::text[],
  'each rewritten function names workspace_id = v_ws');
select is(array(select fn || ': ' || u from sweeps, unnest(pg_temp.unrouted(fn)) u order by 1), '{}'::text[],
  'in every statement that locks, updates or deletes rows of a workspace table');
select is(array(select fn::text from sweeps s join pg_proc p on p.oid = s.fn
                where (select count(*) from regexp_matches(p.prosrc, '\mnow\(\)', 'g')) <> 1 order by 1), '{}'::text[],
  'each reads now() once, into v_now');
-- The check finds a statement written the old way.
create function pg_temp.old_sweep() returns void
language plpgsql as $$
declare v uuid;
begin
  for v in select id from app.reviews where status = 'active' and due_at <= now() limit 500 for update skip locked loop
    update app.reviews set title = title where id = v;
  end loop;
  delete from app.idempotency_keys where workspace_id = v and expires_at <= now();
end
$$;
select is(cardinality(pg_temp.unrouted('pg_temp.old_sweep()')), 2, '... and finds the statements of a sweep written the old way');
select is(array(select fn::text from sweeps s join pg_proc p on p.oid = s.fn
                where pg_get_userbyid(p.proowner) <> 'pressroom_definer' or not p.prosecdef
                   or not has_function_privilege('pressroom_worker', fn, 'execute')
                   or has_function_privilege('pressroom_request', fn, 'execute')
                   or has_function_privilege('pressroom_api', fn, 'execute')
                order by 1), '{}'::text[],
  'they stay security definer functions of pressroom_definer that only the worker runs');

select * from finish();
rollback;
