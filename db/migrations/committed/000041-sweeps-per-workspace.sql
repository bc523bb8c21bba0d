--! Previous: sha1:acfff4e27f3dbab6ed063b27518f91bf4be4e17f
--! Hash: sha1:f4e7c91bef308d483b4c2b7c8fb0efa088e449dd
--! Message: sweeps per workspace

--! split: 03-sweeps-per-workspace.sql
-- Cross-tenant sweeps run per workspace (docs/citus.md).
--
-- On Citus a statement that locks rows must stay inside one shard: a
-- `select ... for update skip locked` or `update ... where id in (select ...
-- for update skip locked)` over every tenant is a multi-shard statement and
-- is refused, and only `workspace_id = <plpgsql variable or parameter>` routes
-- a statement to one shard (a stable function such as current_setting() does
-- not). So each job function below now
--   1. reads, with no lock, which workspaces have due work: the oldest p_limit
--      due rows over all tenants, counted per workspace (a plain multi-shard
--      read, which Citus allows), workspaces with the oldest work first;
--   2. per workspace, runs its locking statement with `workspace_id = v_ws` on
--      every table it reads or writes, taking at most that workspace's count
--      (never more than what is left of the overall limit), still
--      `skip locked`: two runs at once never take the same row and never wait
--      on each other.
-- On one PostgreSQL the rows processed are the ones the single statement took
-- (the oldest, up to the limit). A row another run holds is skipped as before;
-- the run then takes a later row of the same workspace in its place, not one
-- of another workspace, so it may process fewer than the limit.
-- now() is read once into v_now (Citus refuses non-immutable functions in some
-- places of a distributed statement: RETURNING, ON CONFLICT DO UPDATE SET).
-- Tables without workspace_id (app.sessions, app.rate_limit_counters,
-- app.auth_failures: organization-level or global) keep their single statement.

-- ---------------------------------------------------------------------------
-- Reviews: overdue reviews expire (job reviews.expire-due, 500 per run).
-- ---------------------------------------------------------------------------
create or replace function app.expire_due_reviews() returns integer
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_now timestamptz := now();
  v_limit constant int := 500;
  v_ws uuid;
  v_n bigint;
  v_id uuid;
  v_count int := 0;
begin
  for v_ws, v_n in
    select c.workspace_id, count(*) from (
      select r.workspace_id, r.due_at from app.reviews r
      where r.status = 'active' and r.due_at <= v_now
      order by r.due_at, r.id limit v_limit) c
    group by c.workspace_id order by min(c.due_at), c.workspace_id
  loop
    for v_id in select r.id from app.reviews r
                where r.workspace_id = v_ws and r.status = 'active' and r.due_at <= v_now
                order by r.due_at, r.id limit least(v_n, v_limit - v_count)
                for update skip locked loop
      perform app.review_end(v_id, 'expired');
      v_count := v_count + 1;
    end loop;
    exit when v_count >= v_limit;
  end loop;
  return v_count;
end
$$;
alter function app.expire_due_reviews() owner to pressroom_definer;
comment on function app.expire_due_reviews() is 'The reviews.expire-due job (server/jobs/reviews.ts, every minute): at most 500 active reviews past due_at, the oldest first, expire and their pending items'' content returns to draft. Sweeps per workspace: an unlocked read counts the due reviews per workspace, then each workspace''s are locked (for update skip locked) with workspace_id = v_ws, so each locking statement stays in one Citus shard. Idempotent.';
revoke all on function app.expire_due_reviews() from public;
grant execute on function app.expire_due_reviews() to pressroom_worker;

-- ---------------------------------------------------------------------------
-- Review attachments never completed expire (job reviews.expire-due, 1000 per run).
-- ---------------------------------------------------------------------------
create or replace function app.expire_review_attachments() returns integer
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_now timestamptz := now();
  v_limit constant int := 1000;
  v_ws uuid;
  v_n bigint;
  a app.review_attachments;
  v_count int := 0;
begin
  for v_ws, v_n in
    select c.workspace_id, count(*) from (
      select x.workspace_id, x.expires_at from app.review_attachments x
      where x.state = 'pending' and x.expires_at <= v_now
      order by x.expires_at, x.id limit v_limit) c
    group by c.workspace_id order by min(c.expires_at), c.workspace_id
  loop
    for a in select * from app.review_attachments x
             where x.workspace_id = v_ws and x.state = 'pending' and x.expires_at <= v_now
             order by x.expires_at, x.id limit least(v_n, v_limit - v_count)
             for update skip locked loop
      update app.review_attachments set state = 'expired' where workspace_id = v_ws and id = a.id;
      perform app.review_attachment_discard(a, 'upload_expired');
      v_count := v_count + 1;
    end loop;
    exit when v_count >= v_limit;
  end loop;
  return v_count;
end
$$;
alter function app.expire_review_attachments() owner to pressroom_definer;
comment on function app.expire_review_attachments() is 'The reviews.expire-due job also expires never-completed attachment uploads (at most 1000 per run, the oldest expiry first) and queues their keys in app.media_storage_garbage. Sweeps per workspace: an unlocked read counts the due attachments per workspace, then each workspace''s are locked (for update skip locked) and updated with workspace_id = v_ws. Idempotent.';
revoke all on function app.expire_review_attachments() from public;
grant execute on function app.expire_review_attachments() to pressroom_worker;

-- ---------------------------------------------------------------------------
-- Inbox: raw deliveries past the retention whose events are all folded.
-- ---------------------------------------------------------------------------
create or replace function app.inbox_purge_deliveries(p_limit integer default 500) returns jsonb
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  v_now timestamptz := now();
  v_days int := app.setting_int('inbox_delivery_retention_days');
  v_cutoff timestamptz := v_now - make_interval(days => v_days);
  v_limit int := least(greatest(coalesce(p_limit, 500), 1), 10000);
  v_ws uuid;
  v_n bigint;
  v_rows int;
  v_purged int := 0;
begin
  -- A delivery's events are in its workspace (api.inbox_receive writes both with the integration's).
  for v_ws, v_n in
    select c.workspace_id, count(*) from (
      select d.workspace_id, d.received_at from app.inbox_deliveries d
      where d.received_at < v_cutoff
        and not exists (select 1 from app.inbox_events e
                        where e.workspace_id = d.workspace_id and e.delivery_id = d.id and e.folded_at is null)
      order by d.received_at, d.id limit v_limit) c
    group by c.workspace_id order by min(c.received_at), c.workspace_id
  loop
    with old as (
      select d.id from app.inbox_deliveries d
      where d.workspace_id = v_ws and d.received_at < v_cutoff
        and not exists (select 1 from app.inbox_events e
                        where e.workspace_id = v_ws and e.delivery_id = d.id and e.folded_at is null)
      order by d.received_at, d.id
      limit least(v_n, v_limit - v_purged)
      for update of d skip locked),
    del as (delete from app.inbox_deliveries d using old where d.workspace_id = v_ws and d.id = old.id returning 1)
    select count(*) into v_rows from del;
    v_purged := v_purged + v_rows;
    exit when v_purged >= v_limit;
  end loop;
  return jsonb_build_object('purged', v_purged, 'more', v_purged >= v_limit, 'retentionDays', v_days);
end
$$;
alter function app.inbox_purge_deliveries(integer) owner to pressroom_definer;
comment on function app.inbox_purge_deliveries(integer) is 'Job inbox.purge-deliveries: deletes at most p_limit raw inbound deliveries older than setting inbox_delivery_retention_days whose events are all folded (oldest first, skipping rows another run holds); their events stay, with delivery_id null, so de-duplication on the platform event id is unchanged. Sweeps per workspace: an unlocked read counts the purgeable deliveries per workspace, then each workspace''s are locked and deleted with workspace_id = v_ws. Answers {purged, more, retentionDays}.';
revoke all on function app.inbox_purge_deliveries(integer) from public;
grant execute on function app.inbox_purge_deliveries(integer) to pressroom_worker;

-- ---------------------------------------------------------------------------
-- Media: upload sessions past their expiry.
-- ---------------------------------------------------------------------------
-- app.work_claim_live is inlined as a not-exists on app.work_claims of the same
-- workspace (a claim is taken in its session's workspace: api.claim_media_upload_completion),
-- so the statement reads no table outside its shard; clock_timestamp() is read into
-- v_clock before each statement (Citus refuses volatile functions in the WHERE of a
-- modification).
create or replace function app.media_expire_upload_sessions(p_limit integer default 1000) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_now timestamptz := now();
  v_clock timestamptz := clock_timestamp();
  v_ws uuid;
  v_n bigint;
  v_rows int;
  v_keys int;
  v_done int := 0;
  v_expired int := 0;
  v_swept int := 0;
  v_forgotten int := 0;
begin
  -- Pending sessions past their expiry whose completion nobody claims: expired.
  for v_ws, v_n in
    select c.workspace_id, count(*) from (
      select s.workspace_id, s.expires_at from app.media_upload_sessions s
      where s.state = 'pending' and s.expires_at <= v_now
        and not exists (select 1 from app.work_claims w
                        where w.workspace_id = s.workspace_id and w.kind = 'media_upload_completion'
                          and w.subject_id = s.id and w.claimed_until > v_clock)
      order by s.expires_at, s.id limit p_limit) c
    group by c.workspace_id order by min(c.expires_at), c.workspace_id
  loop
    v_clock := clock_timestamp();
    update app.media_upload_sessions set state = 'expired'
    where workspace_id = v_ws
      and id in (select s.id from app.media_upload_sessions s
                 where s.workspace_id = v_ws and s.state = 'pending' and s.expires_at <= v_now
                   and not exists (select 1 from app.work_claims w
                                   where w.workspace_id = v_ws and w.kind = 'media_upload_completion'
                                     and w.subject_id = s.id and w.claimed_until > v_clock)
                 order by s.expires_at, s.id limit least(v_n, p_limit - v_expired) for update skip locked);
    get diagnostics v_rows = row_count;
    v_expired := v_expired + v_rows;
    exit when v_expired >= p_limit;
  end loop;
  -- Sessions past their expiry not yet swept (but not a pending one being completed):
  -- their upload key, and for one never completed its would-be media key, go to the garbage.
  v_clock := clock_timestamp();
  for v_ws, v_n in
    select c.workspace_id, count(*) from (
      select s.workspace_id, s.expires_at from app.media_upload_sessions s
      where s.upload_swept_at is null and s.expires_at <= v_now
        and not (s.state = 'pending'
                 and exists (select 1 from app.work_claims w
                             where w.workspace_id = s.workspace_id and w.kind = 'media_upload_completion'
                               and w.subject_id = s.id and w.claimed_until > v_clock))
      order by s.expires_at, s.id limit p_limit) c
    group by c.workspace_id order by min(c.expires_at), c.workspace_id
  loop
    v_clock := clock_timestamp();
    with swept as (
      update app.media_upload_sessions set upload_swept_at = v_now
      where workspace_id = v_ws
        and id in (select s.id from app.media_upload_sessions s
                   where s.workspace_id = v_ws and s.upload_swept_at is null and s.expires_at <= v_now
                     and not (s.state = 'pending'
                              and exists (select 1 from app.work_claims w
                                          where w.workspace_id = v_ws and w.kind = 'media_upload_completion'
                                            and w.subject_id = s.id and w.claimed_until > v_clock))
                   order by s.expires_at, s.id limit least(v_n, p_limit - v_done) for update skip locked)
      returning id, state, storage_key, workspace_id, organization_id),
    queued as (
      insert into app.media_storage_garbage (storage_key, workspace_id, organization_id, reason)
      select storage_key, workspace_id, organization_id, 'upload_swept' from swept
      union all
      -- Never completed: the final key a refused completion may have left.
      select format('media/%s/%s', workspace_id, id), workspace_id, organization_id, 'upload_expired' from swept
      where state <> 'completed'
      on conflict (storage_key) do nothing
      returning 1)
    select (select count(*) from swept), (select count(*) from queued) into v_rows, v_keys;
    -- v_done counts the sessions swept (what the limit bounds), v_swept the keys queued (the answer).
    v_done := v_done + v_rows;
    v_swept := v_swept + v_keys;
    exit when v_done >= p_limit;
  end loop;
  -- Swept sessions a week past their expiry are forgotten.
  for v_ws in
    select distinct s.workspace_id from app.media_upload_sessions s
    where s.expires_at <= v_now - interval '7 days' and s.upload_swept_at is not null
  loop
    delete from app.media_upload_sessions
    where workspace_id = v_ws and expires_at <= v_now - interval '7 days' and upload_swept_at is not null;
    get diagnostics v_rows = row_count;
    v_forgotten := v_forgotten + v_rows;
  end loop;
  return jsonb_build_object('expired', v_expired, 'keysQueued', v_swept, 'forgotten', v_forgotten);
end
$$;
alter function app.media_expire_upload_sessions(integer) owner to pressroom_definer;
comment on function app.media_expire_upload_sessions(integer) is 'Job media.expire-upload-sessions: expires at most p_limit pending upload sessions past their expiry, then sweeps at most p_limit sessions past their expiry (queuing their keys for deletion), oldest expiry first, leaving alone sessions whose completion is claimed (a live app.work_claims row); forgets swept sessions a week past their expiry. Sweeps per workspace: an unlocked read counts the due sessions per workspace, then each workspace''s are locked (for update skip locked) and updated or deleted with workspace_id = v_ws. Answers {expired, keysQueued, forgotten}.';
revoke all on function app.media_expire_upload_sessions(integer) from public;
grant execute on function app.media_expire_upload_sessions(integer) to pressroom_worker;

-- ---------------------------------------------------------------------------
-- Media: binned items past delete_after are deleted for good.
-- ---------------------------------------------------------------------------
create or replace function app.media_purge_bin(p_limit integer default 500) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_now timestamptz := now();
  v_ws uuid;
  v_n bigint;
  v app.media_items;
  v_purged int := 0;
  v_skipped int := 0;
begin
  for v_ws, v_n in
    select c.workspace_id, count(*) from (
      select m.workspace_id, m.delete_after from app.media_items m
      where m.state = 'deleted' and m.delete_after <= v_now
      order by m.delete_after, m.id limit p_limit) c
    group by c.workspace_id order by min(c.delete_after), c.workspace_id
  loop
    for v in select * from app.media_items m
             where m.workspace_id = v_ws and m.state = 'deleted' and m.delete_after <= v_now
             order by m.delete_after, m.id limit least(v_n, p_limit - v_purged - v_skipped)
             for update skip locked
    loop
      if cardinality(app.media_scheduled_content_ids(v.id)) > 0 then
        v_skipped := v_skipped + 1;
        continue;
      end if;
      perform app.media_destroy(v, 'bin_purge');
      v_purged := v_purged + 1;
    end loop;
    exit when v_purged + v_skipped >= p_limit;
  end loop;
  return jsonb_build_object('purged', v_purged, 'skipped', v_skipped);
end
$$;
alter function app.media_purge_bin(integer) owner to pressroom_definer;
comment on function app.media_purge_bin(integer) is 'Job media.purge-bin: deletes for good at most p_limit binned media items past delete_after (oldest first), queuing their bytes in app.media_storage_garbage, and skips (counts) an item scheduled content still uses. Sweeps per workspace: an unlocked read counts the due items per workspace, then each workspace''s are locked (for update skip locked) with workspace_id = v_ws. Answers {purged, skipped}.';
revoke all on function app.media_purge_bin(integer) from public;
grant execute on function app.media_purge_bin(integer) to pressroom_worker;

-- ---------------------------------------------------------------------------
-- Lifecycle webhooks: retention.
-- ---------------------------------------------------------------------------
create or replace function app.webhook_purge(p_limit integer default 500) returns jsonb
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  v_now timestamptz := now();
  v_days int := app.setting_int('webhook_retention_days');
  v_cutoff timestamptz := v_now - make_interval(days => v_days);
  v_limit int := least(greatest(coalesce(p_limit, 500), 1), 10000);
  v_ws uuid;
  v_n bigint;
  v_rows int;
  v_events int := 0;
  v_entries int := 0;
begin
  -- Events older than the retention whose deliveries are all delivered, and delivered before it
  -- (a paused subscription's backlog, or a late redelivery, keeps its event and log).
  -- A delivery is in its event's workspace (app.webhook_emit, api.redeliver_webhook).
  for v_ws, v_n in
    select c.workspace_id, count(*) from (
      select e.workspace_id, e.occurred_at from app.webhook_events e
      where e.occurred_at < v_cutoff
        and not exists (select 1 from app.webhook_deliveries d
                        where d.workspace_id = e.workspace_id and d.event_id = e.id
                          and (d.state = 'pending' or d.delivered_at >= v_cutoff or d.created_at >= v_cutoff))
      order by e.occurred_at, e.id limit v_limit) c
    group by c.workspace_id order by min(c.occurred_at), c.workspace_id
  loop
    with old as (
      select e.id from app.webhook_events e
      where e.workspace_id = v_ws and e.occurred_at < v_cutoff
        and not exists (select 1 from app.webhook_deliveries d
                        where d.workspace_id = v_ws and d.event_id = e.id
                          and (d.state = 'pending' or d.delivered_at >= v_cutoff or d.created_at >= v_cutoff))
      order by e.occurred_at, e.id
      limit least(v_n, v_limit - v_events)
      for update of e skip locked),
    del as (delete from app.webhook_events e using old where e.workspace_id = v_ws and e.id = old.id returning 1)
    select count(*) into v_rows from del;
    v_events := v_events + v_rows;
    exit when v_events >= v_limit;
  end loop;
  -- webhook.paused / webhook.resumed entries of no delivery (their deliveries' entries go with them)
  for v_ws, v_n in
    select c.workspace_id, count(*) from (
      select l.workspace_id, l.created_at from app.webhook_delivery_log l
      where l.delivery_id is null and l.created_at < v_cutoff
      order by l.created_at, l.id limit v_limit) c
    group by c.workspace_id order by min(c.created_at), c.workspace_id
  loop
    with old as (
      select l.id from app.webhook_delivery_log l
      where l.workspace_id = v_ws and l.delivery_id is null and l.created_at < v_cutoff
      order by l.created_at, l.id
      limit least(v_n, v_limit - v_entries)
      for update of l skip locked),
    del as (delete from app.webhook_delivery_log l using old where l.workspace_id = v_ws and l.id = old.id returning 1)
    select count(*) into v_rows from del;
    v_entries := v_entries + v_rows;
    exit when v_entries >= v_limit;
  end loop;
  return jsonb_build_object('events', v_events, 'logEntries', v_entries,
    'more', v_events >= v_limit or v_entries >= v_limit, 'retentionDays', v_days);
end
$$;
alter function app.webhook_purge(integer) owner to pressroom_definer;
comment on function app.webhook_purge(integer) is 'Job webhooks.purge: deletes at most p_limit lifecycle webhook events older than setting webhook_retention_days whose every delivery is delivered and was created and delivered before that too (oldest first, skipping rows another run holds), with their deliveries and log entries (foreign keys on delete cascade), and at most p_limit webhook.paused / webhook.resumed log entries of no delivery older than that. A pending delivery and its event are never deleted. Sweeps per workspace: an unlocked read counts the purgeable rows per workspace, then each workspace''s are locked and deleted with workspace_id = v_ws. Answers {events, logEntries, more, retentionDays}.';
revoke all on function app.webhook_purge(integer) from public;
grant execute on function app.webhook_purge(integer) to pressroom_worker;

-- ---------------------------------------------------------------------------
-- Expired records (job maintenance.purge-expired).
-- ---------------------------------------------------------------------------
-- idempotency_keys, oauth_states and pending_connections are workspace tables:
-- deleted per workspace. sessions and rate_limit_counters have no workspace_id
-- (a session is its user's, a counter its client's), nor app.auth_failures
-- (app.flush_auth_failures): those statements stay as they were.
create or replace function app.purge_expired() returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_now timestamptz := now();
  v_ws uuid;
  v_rows int;
  v_idem int := 0;
  v_sessions int;
  v_counters int;
  v_bursts int;
  v_states int := 0;
  v_pending int := 0;
begin
  for v_ws in select distinct k.workspace_id from app.idempotency_keys k where k.expires_at <= v_now loop
    delete from app.idempotency_keys where workspace_id = v_ws and expires_at <= v_now;
    get diagnostics v_rows = row_count;
    v_idem := v_idem + v_rows;
  end loop;
  delete from app.sessions where expires_at <= v_now - interval '1 day'
     or revoked_at <= v_now - interval '1 day';
  get diagnostics v_sessions = row_count;
  delete from app.rate_limit_counters where window_start < date_trunc('minute', v_now) - interval '1 minute';
  get diagnostics v_counters = row_count;
  v_bursts := app.flush_auth_failures(null);
  for v_ws in select distinct o.workspace_id from app.oauth_states o where o.expires_at <= v_now - interval '1 hour' loop
    delete from app.oauth_states where workspace_id = v_ws and expires_at <= v_now - interval '1 hour';
    get diagnostics v_rows = row_count;
    v_states := v_states + v_rows;
  end loop;
  for v_ws in select distinct p.workspace_id from app.pending_connections p where p.expires_at <= v_now loop
    delete from app.pending_connections where workspace_id = v_ws and expires_at <= v_now;
    get diagnostics v_rows = row_count;
    v_pending := v_pending + v_rows;
  end loop;
  return jsonb_build_object('idempotencyKeys', v_idem, 'sessions', v_sessions, 'rateLimitWindows', v_counters,
                            'authFailureSummaries', v_bursts, 'oauthStates', v_states, 'pendingConnections', v_pending);
end
$$;
alter function app.purge_expired() owner to pressroom_definer;
comment on function app.purge_expired() is 'Job maintenance.purge-expired: deletes expired idempotency records, OAuth states (an hour past expiry) and pending connections, workspace by workspace (an unlocked read finds the workspaces, then one delete with workspace_id = v_ws each); sessions a day past expiry or revocation, rate-limit windows and closed auth-failure windows (app.flush_auth_failures) have no workspace and go in one statement each. Answers the counts.';
revoke all on function app.purge_expired() from public;
grant execute on function app.purge_expired() to pressroom_worker;
