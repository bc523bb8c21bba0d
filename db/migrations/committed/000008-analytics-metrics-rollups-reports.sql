--! Previous: sha1:d6ec861ba907e9f589b4440353c2d57e4b2dcd8e
--! Hash: sha1:7f8add5ccb231208ea891dede49f4f3ab3b6e0c9
--! Message: analytics metrics rollups reports

--! split: 14-analytics.sql
-- Analytics: metric snapshots of published editions and of integrations
-- (accounts), the rollups the routes read, sync bookkeeping, PDF reports.
--
-- A post snapshot holds the lifetime counters a platform reports for one
-- published edition at one instant (impressions, reach, likes, comments,
-- shares, saves, clicks, video views). Snapshots are kept (the time series);
-- what a day gained is the last snapshot of that day minus the last one
-- before it. Trigger post_metric_snapshots_20_rollup keeps, incrementally:
--   app.post_metrics_daily   per edition and workspace-local day: the gain
--   app.post_metrics_latest  per edition: the latest counters
--   app.analytics_daily      per workspace, integration, day and dimension
--                            (total, tag, pillar, campaign): summed gains
-- Tag, pillar and campaign changes of a root move its editions' gains
-- between dimension keys (triggers on content_root_tags, content_root_pillars,
-- content_roots), so app.analytics_daily always equals a scan of the raw
-- snapshots with the roots' current attributes (tests/db/93-analytics.test.sql).
-- Integration snapshots (followers, profile views, demographics) are one row
-- per integration and day, the day's latest wins.
-- The sync job (server/jobs/analytics.ts) asks app.analytics_due_posts and
-- app.analytics_due_accounts what to fetch, calls connectors outside any
-- transaction, and records with app.analytics_record_sync. Reports are rows
-- of app.analytics_reports whose pg-boss job is written by a trigger in the
-- same transaction; the report job renders the PDF (server/analytics/).

------------------------------------------------------------------------------
-- Settings
------------------------------------------------------------------------------
insert into app.settings (key, value, kind, minimum, description) values
  ('analytics_recent_post_days', '7', 'integer', 0,
   'Editions published within this many days are "recent": their metrics are synced every analytics_recent_sync_minutes.'),
  ('analytics_recent_sync_minutes', '60', 'integer', 1,
   'Minutes between two metric syncs of a recent edition.'),
  ('analytics_older_sync_minutes', '1440', 'integer', 1,
   'Minutes between two metric syncs of an older edition.'),
  ('analytics_max_post_age_days', '365', 'integer', 1,
   'Editions published longer ago than this many days are no longer synced.'),
  ('analytics_account_sync_minutes', '360', 'integer', 1,
   'Minutes between two syncs of an integration''s account metrics (followers, profile views, demographics).'),
  ('analytics_report_retention_days', '30', 'integer', 1,
   'Days a finished PDF report (and its file) is kept; then the sync job removes both.')
on conflict (key) do nothing;

------------------------------------------------------------------------------
-- Tables
------------------------------------------------------------------------------
create table app.post_metric_snapshots (
  id bigint generated always as identity primary key,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  content_item_id uuid not null references app.content_items (id) on delete cascade,
  integration_id uuid not null references app.integrations (id) on delete cascade,
  captured_at timestamptz not null,
  day date not null,
  source text not null check (source in ('sync', 'ingest')),
  impressions bigint not null check (impressions >= 0),
  reach bigint not null check (reach >= 0),
  likes bigint not null check (likes >= 0),
  comments bigint not null check (comments >= 0),
  shares bigint not null check (shares >= 0),
  saves bigint not null check (saves >= 0),
  clicks bigint not null check (clicks >= 0),
  video_views bigint not null check (video_views >= 0),
  created_at timestamptz not null default now(),
  unique (content_item_id, captured_at)
);
comment on table app.post_metric_snapshots is 'The time series of a published edition''s lifetime counters as its platform reported them (sync job) or a webhook receiver pushed them (api.ingest_metrics); append-only (trigger post_metric_snapshots_10_prepare sets the workspace-local day and refuses updates), one per edition and instant. Trigger post_metric_snapshots_20_rollup maintains app.post_metrics_daily, app.post_metrics_latest and app.analytics_daily. Tenant policies of app.apply_tenant_policies (select, insert; writes need editor).';
create index post_metric_snapshots_item_idx on app.post_metric_snapshots (content_item_id, captured_at, id);
create index post_metric_snapshots_workspace_idx on app.post_metric_snapshots (workspace_id, day);
create index post_metric_snapshots_organization_id_idx on app.post_metric_snapshots (organization_id);
create index post_metric_snapshots_integration_id_idx on app.post_metric_snapshots (integration_id);

create table app.post_metrics_daily (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  content_item_id uuid not null references app.content_items (id) on delete cascade,
  integration_id uuid not null references app.integrations (id) on delete cascade,
  day date not null,
  impressions bigint not null default 0,
  reach bigint not null default 0,
  likes bigint not null default 0,
  comments bigint not null default 0,
  shares bigint not null default 0,
  saves bigint not null default 0,
  clicks bigint not null default 0,
  video_views bigint not null default 0,
  primary key (content_item_id, day)
);
comment on table app.post_metrics_daily is 'Rollup: what an edition gained on one workspace-local day (the day''s last snapshot minus the last one before it; negative when a counter fell). Written only by the rollup triggers (security definer); tenant policies of app.apply_tenant_policies let requests read.';
create index post_metrics_daily_workspace_idx on app.post_metrics_daily (workspace_id, day);
create index post_metrics_daily_organization_id_idx on app.post_metrics_daily (organization_id);
create index post_metrics_daily_integration_id_idx on app.post_metrics_daily (integration_id);

create table app.post_metrics_latest (
  content_item_id uuid primary key references app.content_items (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  integration_id uuid not null references app.integrations (id) on delete cascade,
  captured_at timestamptz not null,
  impressions bigint not null,
  reach bigint not null,
  likes bigint not null,
  comments bigint not null,
  shares bigint not null,
  saves bigint not null,
  clicks bigint not null,
  video_views bigint not null
);
comment on table app.post_metrics_latest is 'Rollup: an edition''s latest snapshot (its lifetime counters), for the per-post table. Written only by the rollup trigger (security definer); tenant policies of app.apply_tenant_policies let requests read.';
create index post_metrics_latest_workspace_idx on app.post_metrics_latest (workspace_id);
create index post_metrics_latest_organization_id_idx on app.post_metrics_latest (organization_id);
create index post_metrics_latest_integration_id_idx on app.post_metrics_latest (integration_id);

create table app.analytics_daily (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  integration_id uuid not null references app.integrations (id) on delete cascade,
  dimension text not null check (dimension in ('total', 'tag', 'pillar', 'campaign')),
  key uuid not null,
  day date not null,
  impressions bigint not null default 0,
  reach bigint not null default 0,
  likes bigint not null default 0,
  comments bigint not null default 0,
  shares bigint not null default 0,
  saves bigint not null default 0,
  clicks bigint not null default 0,
  video_views bigint not null default 0,
  primary key (workspace_id, dimension, key, integration_id, day)
);
comment on table app.analytics_daily is 'Rollup the summary, aggregates and report read: the gains of a workspace''s editions per integration, workspace-local day and dimension: total (key = the integration), tag, pillar or campaign (key = the tag, pillar or campaign of the edition''s root now). Maintained incrementally by the rollup triggers (security definer) and equal to a scan of app.post_metric_snapshots; tenant policies of app.apply_tenant_policies let requests read.';
create index analytics_daily_day_idx on app.analytics_daily (workspace_id, dimension, day);
create index analytics_daily_organization_id_idx on app.analytics_daily (organization_id);
create index analytics_daily_integration_id_idx on app.analytics_daily (integration_id);

create table app.integration_metrics_daily (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  integration_id uuid not null references app.integrations (id) on delete cascade,
  day date not null,
  captured_at timestamptz not null,
  source text not null check (source in ('sync', 'ingest')),
  followers bigint check (followers >= 0),
  profile_views bigint check (profile_views >= 0),
  demographics jsonb check (demographics is null or jsonb_typeof(demographics) = 'object'),
  primary key (integration_id, day)
);
comment on table app.integration_metrics_daily is 'The time series of an integration''s account: followers (level), profile views (that day) and follower demographics (counts by age band, gender, country), one row per workspace-local day, the day''s latest capture winning (app.analytics_record_account). Tenant policies of app.apply_tenant_policies (select, insert, update; writes need editor: api.ingest_metrics).';
create index integration_metrics_daily_workspace_idx on app.integration_metrics_daily (workspace_id, day);
create index integration_metrics_daily_organization_id_idx on app.integration_metrics_daily (organization_id);

create table app.analytics_post_sync (
  content_item_id uuid primary key references app.content_items (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  last_attempt_at timestamptz not null,
  last_success_at timestamptz,
  last_error text
);
comment on table app.analytics_post_sync is 'When the sync job last fetched an edition''s metrics, and the outcome; app.analytics_due_posts reads it to sync recent editions often and older ones rarely. Written by the job (pressroom_worker); tenant policies of app.apply_tenant_policies let requests read.';
create index analytics_post_sync_workspace_idx on app.analytics_post_sync (workspace_id);
create index analytics_post_sync_organization_id_idx on app.analytics_post_sync (organization_id);

create table app.integration_sync_state (
  integration_id uuid primary key references app.integrations (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  last_attempt_at timestamptz,
  last_success_at timestamptz,
  last_error text,
  last_error_at timestamptz,
  account_attempt_at timestamptz
);
comment on table app.integration_sync_state is 'An integration''s last metric sync attempt, last success and last error (integration health). Written by the sync job (pressroom_worker) and api.ingest_metrics (through app.analytics_note_sync, security definer); tenant policies of app.apply_tenant_policies let requests read.';
create index integration_sync_state_workspace_idx on app.integration_sync_state (workspace_id);
create index integration_sync_state_organization_id_idx on app.integration_sync_state (organization_id);

create table app.integration_sync_daily (
  integration_id uuid not null references app.integrations (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  day date not null,
  successes integer not null default 0,
  failures integer not null default 0,
  rate_limit_hits integer not null default 0,
  primary key (integration_id, day)
);
comment on table app.integration_sync_daily is 'Metric sync outcomes of an integration per UTC day: successful fetches, failures and the platform''s rate-limit refusals (integration health counts 30 days). Written through app.analytics_note_sync only; tenant policies of app.apply_tenant_policies let requests read.';
create index integration_sync_daily_workspace_idx on app.integration_sync_daily (workspace_id, day);
create index integration_sync_daily_organization_id_idx on app.integration_sync_daily (organization_id);

create table app.analytics_reports (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  status text not null default 'queued' check (status in ('queued', 'running', 'ready', 'failed')),
  period_from date not null,
  period_to date not null,
  integration_ids uuid[],
  created_by uuid references app.users (id) on delete set null,
  api_key_id uuid references app.api_keys (id) on delete set null,
  job_id uuid,
  storage_key text,
  file_size bigint,
  checksum_sha256 text,
  error text,
  created_at timestamptz not null default now(),
  started_at timestamptz,
  finished_at timestamptz,
  check (period_from <= period_to),
  check (status <> 'ready' or (storage_key is not null and file_size is not null))
);
comment on table app.analytics_reports is 'A PDF analytics report of a workspace for a period and set of integrations (null: all): requested by api.create_analytics_report (status queued; trigger analytics_reports_30_job writes its pg-boss job in the same transaction), rendered by the report job (running, then ready with its storage key, or failed). Tenant policies of app.apply_tenant_policies let requests read; rows are written by app.analytics_report_insert (security definer: any role that reads analytics may ask for one) and the report job.';
create index analytics_reports_workspace_idx on app.analytics_reports (workspace_id, created_at desc);
create index analytics_reports_organization_id_idx on app.analytics_reports (organization_id);

create index content_items_workspace_sent_idx on app.content_items (workspace_id, sent_at) where status = 'sent';

select app.apply_tenant_policies('app.post_metric_snapshots', array['select', 'insert']);
select app.grant_api_columns('app.post_metric_snapshots', array['insert'], array['id', 'day', 'created_at']);
grant select on app.post_metric_snapshots to pressroom_api;
grant select, insert on app.post_metric_snapshots to pressroom_worker, pressroom_definer;
select app.apply_tenant_policies('app.post_metrics_daily', array['select']);
grant select on app.post_metrics_daily to pressroom_api, pressroom_worker;
grant select, insert, update, delete on app.post_metrics_daily to pressroom_definer;
select app.apply_tenant_policies('app.post_metrics_latest', array['select']);
grant select on app.post_metrics_latest to pressroom_api, pressroom_worker;
grant select, insert, update, delete on app.post_metrics_latest to pressroom_definer;
select app.apply_tenant_policies('app.analytics_daily', array['select']);
grant select on app.analytics_daily to pressroom_api, pressroom_worker;
grant select, insert, update, delete on app.analytics_daily to pressroom_definer;
select app.apply_tenant_policies('app.integration_metrics_daily', array['select', 'insert', 'update']);
select app.grant_api_columns('app.integration_metrics_daily', array['insert', 'update']);
grant select on app.integration_metrics_daily to pressroom_api;
grant select, insert, update on app.integration_metrics_daily to pressroom_worker, pressroom_definer;
select app.apply_tenant_policies('app.analytics_post_sync', array['select']);
grant select on app.analytics_post_sync to pressroom_api;
grant select, insert, update on app.analytics_post_sync to pressroom_worker, pressroom_definer;
select app.apply_tenant_policies('app.integration_sync_state', array['select']);
grant select on app.integration_sync_state to pressroom_api;
grant select, insert, update on app.integration_sync_state to pressroom_worker, pressroom_definer;
select app.apply_tenant_policies('app.integration_sync_daily', array['select']);
grant select on app.integration_sync_daily to pressroom_api;
grant select, insert, update on app.integration_sync_daily to pressroom_worker, pressroom_definer;
select app.apply_tenant_policies('app.analytics_reports', array['select']);
grant select on app.analytics_reports to pressroom_api;
grant select, insert, update on app.analytics_reports to pressroom_worker, pressroom_definer;

------------------------------------------------------------------------------
-- Rollup maintenance
------------------------------------------------------------------------------

-- The workspace-local day of an instant.
create function app.analytics_local_day(p_workspace_id uuid, p_at timestamptz) returns date
language sql stable security definer set search_path = pg_catalog, app as $$
  select (p_at at time zone coalesce((select w.timezone from app.workspaces w where w.id = p_workspace_id), 'UTC'))::date
$$;
alter function app.analytics_local_day(uuid, timestamptz) owner to pressroom_definer;
grant execute on function app.analytics_local_day(uuid, timestamptz) to pressroom_api, pressroom_worker, pressroom_definer;

-- Adds a gain (8 counters, in column order) of one edition on one day to the
-- dimension rollup: its total row and one row per tag, pillar and campaign of
-- its root as they are now.
create function app.analytics_add_dimensions(p_item uuid, p_day date, p_d bigint[]) returns void
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v record;
begin
  if p_d = array[0, 0, 0, 0, 0, 0, 0, 0]::bigint[] then
    return;
  end if;
  select i.organization_id, i.workspace_id, i.integration_id, i.root_id, r.campaign_id into v
  from app.content_items i join app.content_roots r on r.id = i.root_id where i.id = p_item;
  insert into app.analytics_daily as a (organization_id, workspace_id, integration_id, dimension, key, day,
    impressions, reach, likes, comments, shares, saves, clicks, video_views)
  select v.organization_id, v.workspace_id, v.integration_id, d.dimension, d.key, p_day,
         p_d[1], p_d[2], p_d[3], p_d[4], p_d[5], p_d[6], p_d[7], p_d[8]
  from (select 'total'::text, v.integration_id
        union all select 'tag', t.tag_id from app.content_root_tags t where t.root_id = v.root_id
        union all select 'pillar', p.pillar_id from app.content_root_pillars p where p.root_id = v.root_id
        union all select 'campaign', v.campaign_id where v.campaign_id is not null) d (dimension, key)
  on conflict (workspace_id, dimension, key, integration_id, day) do update set
    impressions = a.impressions + excluded.impressions, reach = a.reach + excluded.reach,
    likes = a.likes + excluded.likes, comments = a.comments + excluded.comments,
    shares = a.shares + excluded.shares, saves = a.saves + excluded.saves,
    clicks = a.clicks + excluded.clicks, video_views = a.video_views + excluded.video_views;
end
$$;
alter function app.analytics_add_dimensions(uuid, date, bigint[]) owner to pressroom_definer;
grant execute on function app.analytics_add_dimensions(uuid, date, bigint[]) to pressroom_definer;

-- Serializes rollup writers of one root (a snapshot of its editions, a tag,
-- pillar or campaign change), so each sees the other's committed rows.
create function app.analytics_lock_root(p_root uuid) returns void
language sql as $$ select pg_advisory_xact_lock(hashtextextended('pressroom.analytics:' || p_root::text, 0)) $$;
grant execute on function app.analytics_lock_root(uuid) to pressroom_api, pressroom_worker, pressroom_definer;

-- Recomputes an edition's gain on one day from its snapshots (the day's last
-- minus the last before it) and passes the difference to the dimension rollup.
-- Idempotent: recomputing an unchanged day changes nothing.
create function app.analytics_refresh_post_day(p_item uuid, p_day date) returns void
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_last app.post_metric_snapshots;
  v_before app.post_metric_snapshots;
  v_old app.post_metrics_daily;
  v_new bigint[];
  v_was bigint[];
  v_diff bigint[];
begin
  select * into v_last from app.post_metric_snapshots s
  where s.content_item_id = p_item and s.day = p_day order by s.captured_at desc, s.id desc limit 1;
  select * into v_before from app.post_metric_snapshots s
  where s.content_item_id = p_item and s.day < p_day order by s.captured_at desc, s.id desc limit 1;
  select * into v_old from app.post_metrics_daily d where d.content_item_id = p_item and d.day = p_day;
  v_was := array[coalesce(v_old.impressions, 0), coalesce(v_old.reach, 0), coalesce(v_old.likes, 0),
                 coalesce(v_old.comments, 0), coalesce(v_old.shares, 0), coalesce(v_old.saves, 0),
                 coalesce(v_old.clicks, 0), coalesce(v_old.video_views, 0)];
  if v_last.id is null then
    v_new := array[0, 0, 0, 0, 0, 0, 0, 0];
    delete from app.post_metrics_daily d where d.content_item_id = p_item and d.day = p_day;
  else
    v_new := array[v_last.impressions - coalesce(v_before.impressions, 0), v_last.reach - coalesce(v_before.reach, 0),
                   v_last.likes - coalesce(v_before.likes, 0), v_last.comments - coalesce(v_before.comments, 0),
                   v_last.shares - coalesce(v_before.shares, 0), v_last.saves - coalesce(v_before.saves, 0),
                   v_last.clicks - coalesce(v_before.clicks, 0), v_last.video_views - coalesce(v_before.video_views, 0)];
    insert into app.post_metrics_daily as d (organization_id, workspace_id, content_item_id, integration_id, day,
      impressions, reach, likes, comments, shares, saves, clicks, video_views)
    values (v_last.organization_id, v_last.workspace_id, p_item, v_last.integration_id, p_day,
      v_new[1], v_new[2], v_new[3], v_new[4], v_new[5], v_new[6], v_new[7], v_new[8])
    on conflict (content_item_id, day) do update set
      impressions = excluded.impressions, reach = excluded.reach, likes = excluded.likes, comments = excluded.comments,
      shares = excluded.shares, saves = excluded.saves, clicks = excluded.clicks, video_views = excluded.video_views;
  end if;
  v_diff := array(select n - o from unnest(v_new, v_was) u (n, o));
  perform app.analytics_add_dimensions(p_item, p_day, v_diff);
end
$$;
alter function app.analytics_refresh_post_day(uuid, date) owner to pressroom_definer;
grant execute on function app.analytics_refresh_post_day(uuid, date) to pressroom_definer;

create function app.tg_post_metric_snapshots_prepare() returns trigger
language plpgsql as $$
begin
  if tg_op <> 'INSERT' then
    perform app.raise(409, 'METRICS_APPEND_ONLY', 'Metric snapshots are never changed or removed.');
  end if;
  new.day := app.analytics_local_day(new.workspace_id, new.captured_at);
  return new;
end
$$;
grant execute on function app.tg_post_metric_snapshots_prepare() to pressroom_api, pressroom_worker, pressroom_definer;
create trigger post_metric_snapshots_10_prepare before insert or update on app.post_metric_snapshots
  for each row execute function app.tg_post_metric_snapshots_prepare();

create function app.tg_post_metric_snapshots_rollup() returns trigger
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_root uuid;
  v_next date;
begin
  select i.root_id into v_root from app.content_items i where i.id = new.content_item_id;
  perform app.analytics_lock_root(v_root);
  perform app.analytics_refresh_post_day(new.content_item_id, new.day);
  -- The next day with snapshots measured its gain from the last one before it,
  -- which may now be this one.
  select min(s.day) into v_next from app.post_metric_snapshots s
  where s.content_item_id = new.content_item_id and s.day > new.day;
  if v_next is not null then
    perform app.analytics_refresh_post_day(new.content_item_id, v_next);
  end if;
  insert into app.post_metrics_latest as l (content_item_id, organization_id, workspace_id, integration_id, captured_at,
    impressions, reach, likes, comments, shares, saves, clicks, video_views)
  select s.content_item_id, s.organization_id, s.workspace_id, s.integration_id, s.captured_at,
         s.impressions, s.reach, s.likes, s.comments, s.shares, s.saves, s.clicks, s.video_views
  from app.post_metric_snapshots s where s.content_item_id = new.content_item_id
  order by s.captured_at desc, s.id desc limit 1
  on conflict (content_item_id) do update set
    captured_at = excluded.captured_at, impressions = excluded.impressions, reach = excluded.reach,
    likes = excluded.likes, comments = excluded.comments, shares = excluded.shares, saves = excluded.saves,
    clicks = excluded.clicks, video_views = excluded.video_views;
  return null;
end
$$;
alter function app.tg_post_metric_snapshots_rollup() owner to pressroom_definer;
grant execute on function app.tg_post_metric_snapshots_rollup() to pressroom_api, pressroom_worker, pressroom_definer;
create trigger post_metric_snapshots_20_rollup after insert on app.post_metric_snapshots
  for each row execute function app.tg_post_metric_snapshots_rollup();
create trigger post_metric_snapshots_30_append_only before delete on app.post_metric_snapshots
  for each row when (pg_trigger_depth() = 0) execute function app.tg_post_metric_snapshots_prepare();

-- Moves the gains of a root's editions into (p_sign 1) or out of (-1) one
-- dimension key, when the root gains or loses a tag, pillar or campaign.
create function app.analytics_move_root(p_root uuid, p_dimension text, p_key uuid, p_sign integer) returns void
language plpgsql security definer set search_path = pg_catalog, app as $$
begin
  if p_key is null then
    return;
  end if;
  perform app.analytics_lock_root(p_root);
  insert into app.analytics_daily as a (organization_id, workspace_id, integration_id, dimension, key, day,
    impressions, reach, likes, comments, shares, saves, clicks, video_views)
  select d.organization_id, d.workspace_id, d.integration_id, p_dimension, p_key, d.day,
         p_sign * sum(d.impressions), p_sign * sum(d.reach), p_sign * sum(d.likes), p_sign * sum(d.comments),
         p_sign * sum(d.shares), p_sign * sum(d.saves), p_sign * sum(d.clicks), p_sign * sum(d.video_views)
  from app.post_metrics_daily d join app.content_items i on i.id = d.content_item_id
  where i.root_id = p_root
  group by d.organization_id, d.workspace_id, d.integration_id, d.day
  on conflict (workspace_id, dimension, key, integration_id, day) do update set
    impressions = a.impressions + excluded.impressions, reach = a.reach + excluded.reach,
    likes = a.likes + excluded.likes, comments = a.comments + excluded.comments,
    shares = a.shares + excluded.shares, saves = a.saves + excluded.saves,
    clicks = a.clicks + excluded.clicks, video_views = a.video_views + excluded.video_views;
end
$$;
alter function app.analytics_move_root(uuid, text, uuid, integer) owner to pressroom_definer;
grant execute on function app.analytics_move_root(uuid, text, uuid, integer) to pressroom_definer;

create function app.tg_content_root_tags_analytics() returns trigger
language plpgsql security definer set search_path = pg_catalog, app as $$
begin
  if tg_op in ('DELETE', 'UPDATE') then
    perform app.analytics_move_root(old.root_id, 'tag', old.tag_id, -1);
  end if;
  if tg_op in ('INSERT', 'UPDATE') then
    perform app.analytics_move_root(new.root_id, 'tag', new.tag_id, 1);
  end if;
  return null;
end
$$;
alter function app.tg_content_root_tags_analytics() owner to pressroom_definer;
grant execute on function app.tg_content_root_tags_analytics() to pressroom_api, pressroom_worker, pressroom_definer;
create trigger content_root_tags_70_analytics after insert or update or delete on app.content_root_tags
  for each row execute function app.tg_content_root_tags_analytics();

create function app.tg_content_root_pillars_analytics() returns trigger
language plpgsql security definer set search_path = pg_catalog, app as $$
begin
  if tg_op in ('DELETE', 'UPDATE') then
    perform app.analytics_move_root(old.root_id, 'pillar', old.pillar_id, -1);
  end if;
  if tg_op in ('INSERT', 'UPDATE') then
    perform app.analytics_move_root(new.root_id, 'pillar', new.pillar_id, 1);
  end if;
  return null;
end
$$;
alter function app.tg_content_root_pillars_analytics() owner to pressroom_definer;
grant execute on function app.tg_content_root_pillars_analytics() to pressroom_api, pressroom_worker, pressroom_definer;
create trigger content_root_pillars_70_analytics after insert or update or delete on app.content_root_pillars
  for each row execute function app.tg_content_root_pillars_analytics();

create function app.tg_content_roots_analytics() returns trigger
language plpgsql security definer set search_path = pg_catalog, app as $$
begin
  perform app.analytics_move_root(new.id, 'campaign', old.campaign_id, -1);
  perform app.analytics_move_root(new.id, 'campaign', new.campaign_id, 1);
  return null;
end
$$;
alter function app.tg_content_roots_analytics() owner to pressroom_definer;
grant execute on function app.tg_content_roots_analytics() to pressroom_api, pressroom_worker, pressroom_definer;
create trigger content_roots_70_analytics after update of campaign_id on app.content_roots
  for each row when (old.campaign_id is distinct from new.campaign_id) execute function app.tg_content_roots_analytics();

-- Rebuilds every rollup of a workspace from its snapshots in one pass (a bulk
-- load with the triggers off, or a repair); the result equals what the
-- triggers maintain. Returns the number of snapshots read.
create function app.analytics_rebuild(p_workspace_id uuid) returns bigint
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_count bigint;
begin
  perform pg_advisory_xact_lock(hashtextextended('pressroom.analytics-rebuild:' || p_workspace_id::text, 0));
  delete from app.analytics_daily where workspace_id = p_workspace_id;
  delete from app.post_metrics_daily where workspace_id = p_workspace_id;
  delete from app.post_metrics_latest where workspace_id = p_workspace_id;
  select count(*) into v_count from app.post_metric_snapshots where workspace_id = p_workspace_id;
  insert into app.post_metrics_daily (organization_id, workspace_id, content_item_id, integration_id, day,
    impressions, reach, likes, comments, shares, saves, clicks, video_views)
  select organization_id, workspace_id, content_item_id, integration_id, day,
         sum(impressions), sum(reach), sum(likes), sum(comments), sum(shares), sum(saves), sum(clicks), sum(video_views)
  from (
    select s.organization_id, s.workspace_id, s.content_item_id, s.integration_id, s.day,
      s.impressions - coalesce(lag(s.impressions) over w, 0) as impressions, s.reach - coalesce(lag(s.reach) over w, 0) as reach,
      s.likes - coalesce(lag(s.likes) over w, 0) as likes, s.comments - coalesce(lag(s.comments) over w, 0) as comments,
      s.shares - coalesce(lag(s.shares) over w, 0) as shares, s.saves - coalesce(lag(s.saves) over w, 0) as saves,
      s.clicks - coalesce(lag(s.clicks) over w, 0) as clicks, s.video_views - coalesce(lag(s.video_views) over w, 0) as video_views
    from app.post_metric_snapshots s
    where s.workspace_id = p_workspace_id
    window w as (partition by s.content_item_id order by s.captured_at, s.id)
  ) g
  group by organization_id, workspace_id, content_item_id, integration_id, day;
  insert into app.post_metrics_latest (content_item_id, organization_id, workspace_id, integration_id, captured_at,
    impressions, reach, likes, comments, shares, saves, clicks, video_views)
  select distinct on (s.content_item_id) s.content_item_id, s.organization_id, s.workspace_id, s.integration_id, s.captured_at,
         s.impressions, s.reach, s.likes, s.comments, s.shares, s.saves, s.clicks, s.video_views
  from app.post_metric_snapshots s where s.workspace_id = p_workspace_id
  order by s.content_item_id, s.captured_at desc, s.id desc;
  insert into app.analytics_daily (organization_id, workspace_id, integration_id, dimension, key, day,
    impressions, reach, likes, comments, shares, saves, clicks, video_views)
  select d.organization_id, d.workspace_id, d.integration_id, k.dimension, k.key, d.day,
         sum(d.impressions), sum(d.reach), sum(d.likes), sum(d.comments), sum(d.shares), sum(d.saves), sum(d.clicks), sum(d.video_views)
  from app.post_metrics_daily d
  join app.content_items i on i.id = d.content_item_id
  join app.content_roots r on r.id = i.root_id
  cross join lateral (
    select 'total'::text, d.integration_id
    union all select 'tag', t.tag_id from app.content_root_tags t where t.root_id = r.id
    union all select 'pillar', p.pillar_id from app.content_root_pillars p where p.root_id = r.id
    union all select 'campaign', r.campaign_id where r.campaign_id is not null) k (dimension, key)
  where d.workspace_id = p_workspace_id
  group by d.organization_id, d.workspace_id, d.integration_id, k.dimension, k.key, d.day;
  return v_count;
end
$$;
alter function app.analytics_rebuild(uuid) owner to pressroom_definer;
grant execute on function app.analytics_rebuild(uuid) to pressroom_worker, pressroom_definer;

------------------------------------------------------------------------------
-- Recording metrics (the sync job and the ingestion route)
------------------------------------------------------------------------------

-- A metric count from JSON: a whole number from 0, or null when absent.
create function app.analytics_count(p_value jsonb) returns bigint
language sql immutable as $$
  select case when p_value is null or jsonb_typeof(p_value) = 'null' then null
              when jsonb_typeof(p_value) = 'number' and p_value::text ~ '^\d{1,15}$' then p_value::text::bigint
              else -1 end
$$;
grant execute on function app.analytics_count(jsonb) to pressroom_api, pressroom_worker, pressroom_definer;

-- Problems of one post metrics object ({impressions, ..., videoViews}), as field entries under p_prefix.
create function app.analytics_metric_problems(p_metrics jsonb, p_prefix text) returns jsonb
language sql immutable as $$
  select coalesce(jsonb_agg(jsonb_build_object('field', p_prefix || '.' || k, 'code', 'type',
           'message', 'must be a whole number from 0 to 999999999999999')), '[]'::jsonb)
  from unnest(array['impressions', 'reach', 'likes', 'comments', 'shares', 'saves', 'clicks', 'videoViews']) k
  where app.analytics_count(p_metrics -> k) = -1
$$;
grant execute on function app.analytics_metric_problems(jsonb, text) to pressroom_api, pressroom_worker, pressroom_definer;

-- One account snapshot: the day's row, the latest capture of the day winning.
create function app.analytics_record_account(p_integration_id uuid, p_captured_at timestamptz, p_source text, p_account jsonb) returns void
language plpgsql as $$
declare
  v_integration record;
begin
  select g.id, g.organization_id, g.workspace_id into v_integration from app.integrations g where g.id = p_integration_id;
  insert into app.integration_metrics_daily as m (organization_id, workspace_id, integration_id, day, captured_at, source,
    followers, profile_views, demographics)
  values (v_integration.organization_id, v_integration.workspace_id, p_integration_id,
    app.analytics_local_day(v_integration.workspace_id, p_captured_at), p_captured_at, p_source,
    app.analytics_count(p_account -> 'followers'), app.analytics_count(p_account -> 'profileViews'),
    nullif(p_account -> 'demographics', 'null'::jsonb))
  on conflict (integration_id, day) do update set
    captured_at = excluded.captured_at, source = excluded.source,
    followers = coalesce(excluded.followers, m.followers), profile_views = coalesce(excluded.profile_views, m.profile_views),
    demographics = coalesce(excluded.demographics, m.demographics)
  where m.captured_at <= excluded.captured_at;
end
$$;
grant execute on function app.analytics_record_account(uuid, timestamptz, text, jsonb) to pressroom_api, pressroom_worker, pressroom_definer;

-- Notes a sync outcome of an integration: 'ok', 'failed' or 'rate_limited'.
create function app.analytics_note_sync(p_integration_id uuid, p_outcome text, p_error text, p_count integer default 1) returns void
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_integration record;
begin
  select g.id, g.organization_id, g.workspace_id into v_integration from app.integrations g where g.id = p_integration_id;
  if v_integration.id is null or p_count <= 0 then
    return;
  end if;
  insert into app.integration_sync_state as s (integration_id, organization_id, workspace_id, last_attempt_at,
    last_success_at, last_error, last_error_at)
  values (p_integration_id, v_integration.organization_id, v_integration.workspace_id, now(),
    case when p_outcome = 'ok' then now() end,
    case when p_outcome <> 'ok' then left(p_error, 1000) end, case when p_outcome <> 'ok' then now() end)
  on conflict (integration_id) do update set
    last_attempt_at = now(),
    last_success_at = case when p_outcome = 'ok' then now() else s.last_success_at end,
    last_error = case when p_outcome <> 'ok' then left(p_error, 1000) else s.last_error end,
    last_error_at = case when p_outcome <> 'ok' then now() else s.last_error_at end;
  insert into app.integration_sync_daily as d (integration_id, organization_id, workspace_id, day,
    successes, failures, rate_limit_hits)
  values (p_integration_id, v_integration.organization_id, v_integration.workspace_id, (now() at time zone 'UTC')::date,
    case when p_outcome = 'ok' then p_count else 0 end, case when p_outcome = 'failed' then p_count else 0 end,
    case when p_outcome = 'rate_limited' then p_count else 0 end)
  on conflict (integration_id, day) do update set
    successes = d.successes + excluded.successes, failures = d.failures + excluded.failures,
    rate_limit_hits = d.rate_limit_hits + excluded.rate_limit_hits;
end
$$;
alter function app.analytics_note_sync(uuid, text, text, integer) owner to pressroom_definer;
grant execute on function app.analytics_note_sync(uuid, text, text, integer) to pressroom_api, pressroom_worker, pressroom_definer;

-- The published editions whose metrics are due (recent ones every
-- analytics_recent_sync_minutes, older ones every analytics_older_sync_minutes,
-- none older than analytics_max_post_age_days), never-synced first, with what
-- a connector needs. For the sync job (pressroom_worker).
create function app.analytics_due_posts(p_limit integer) returns jsonb
language sql stable as $$
  select coalesce(jsonb_agg(d.x order by d.ord_key), '[]'::jsonb) from (
    select jsonb_build_object('contentId', i.id, 'platformPostId', i.platform_post_id, 'sentAt', i.sent_at,
             'integration', jsonb_build_object('id', g.id, 'connector', g.connector, 'platform', g.platform, 'name', g.name,
               'username', g.username, 'settings', g.settings, 'capabilities', p.capabilities)) as x,
           coalesce(s.last_attempt_at, '-infinity'::timestamptz) as ord_key
    from app.content_items i
    join app.integrations g on g.id = i.integration_id and g.deleted_at is null and g.status = 'active'
    join app.platforms p on p.code = g.platform
    left join app.analytics_post_sync s on s.content_item_id = i.id
    where i.status = 'sent' and i.platform_post_id is not null and i.sent_at is not null
      and i.sent_at > now() - make_interval(days => app.setting_int('analytics_max_post_age_days'))
      and (s.last_attempt_at is null
           or s.last_attempt_at <= now() - make_interval(mins => case
                when i.sent_at > now() - make_interval(days => app.setting_int('analytics_recent_post_days'))
                then app.setting_int('analytics_recent_sync_minutes')
                else app.setting_int('analytics_older_sync_minutes') end))
    order by coalesce(s.last_attempt_at, '-infinity'::timestamptz), i.sent_at desc
    limit greatest(1, least(p_limit, 1000))
  ) d (x, ord_key)
$$;
grant execute on function app.analytics_due_posts(integer) to pressroom_worker, pressroom_definer;

-- Active integrations whose account metrics are due (every analytics_account_sync_minutes).
create function app.analytics_due_accounts(p_limit integer) returns jsonb
language sql stable as $$
  select coalesce(jsonb_agg(x), '[]'::jsonb) from (
    select jsonb_build_object('id', g.id, 'connector', g.connector, 'platform', g.platform, 'name', g.name,
             'username', g.username, 'settings', g.settings, 'capabilities', p.capabilities) as x
    from app.integrations g
    join app.platforms p on p.code = g.platform
    left join app.integration_sync_state s on s.integration_id = g.id
    where g.deleted_at is null and g.status = 'active'
      and (s.account_attempt_at is null
           or s.account_attempt_at <= now() - make_interval(mins => app.setting_int('analytics_account_sync_minutes')))
    order by coalesce(s.account_attempt_at, '-infinity'::timestamptz), g.id
    limit greatest(1, least(p_limit, 1000))
  ) d
$$;
grant execute on function app.analytics_due_accounts(integer) to pressroom_worker, pressroom_definer;

-- Records one sync run's results (the job calls it after the connector calls,
-- in a short transaction of its own):
--   posts:    [{contentId, outcome: ok|failed|rate_limited|unsupported, error?, capturedAt?, metrics?}]
--   accounts: [{integrationId, outcome, error?, capturedAt?, account?}]
-- Returns how many snapshots and account rows were written.
create function app.analytics_record_sync(p_results jsonb) returns jsonb
language plpgsql as $$
declare
  v jsonb;
  v_item app.content_items;
  v_m jsonb;
  v_at timestamptz;
  v_snapshots int := 0;
  v_accounts int := 0;
begin
  for v in select * from jsonb_array_elements(coalesce(p_results -> 'posts', '[]'::jsonb)) loop
    select * into v_item from app.content_items where id = (v ->> 'contentId')::uuid;
    continue when v_item.id is null;
    insert into app.analytics_post_sync as s (content_item_id, organization_id, workspace_id, last_attempt_at, last_success_at, last_error)
    values (v_item.id, v_item.organization_id, v_item.workspace_id, now(),
      case when v ->> 'outcome' = 'ok' then now() end, case when v ->> 'outcome' <> 'ok' then left(v ->> 'error', 1000) end)
    on conflict (content_item_id) do update set last_attempt_at = now(),
      last_success_at = case when v ->> 'outcome' = 'ok' then now() else s.last_success_at end,
      last_error = case when v ->> 'outcome' = 'ok' then null else left(v ->> 'error', 1000) end;
    if v ->> 'outcome' = 'ok' and v ? 'metrics' then
      v_m := v -> 'metrics';
      v_at := coalesce((v ->> 'capturedAt')::timestamptz, now());
      insert into app.post_metric_snapshots (organization_id, workspace_id, content_item_id, integration_id, captured_at, source,
        impressions, reach, likes, comments, shares, saves, clicks, video_views)
      values (v_item.organization_id, v_item.workspace_id, v_item.id, v_item.integration_id, v_at, 'sync',
        coalesce(app.analytics_count(v_m -> 'impressions'), 0), coalesce(app.analytics_count(v_m -> 'reach'), 0),
        coalesce(app.analytics_count(v_m -> 'likes'), 0), coalesce(app.analytics_count(v_m -> 'comments'), 0),
        coalesce(app.analytics_count(v_m -> 'shares'), 0), coalesce(app.analytics_count(v_m -> 'saves'), 0),
        coalesce(app.analytics_count(v_m -> 'clicks'), 0), coalesce(app.analytics_count(v_m -> 'videoViews'), 0))
      on conflict (content_item_id, captured_at) do nothing;
      v_snapshots := v_snapshots + 1;
    end if;
    if v ->> 'outcome' in ('ok', 'failed', 'rate_limited') then
      perform app.analytics_note_sync(v_item.integration_id, v ->> 'outcome', v ->> 'error');
    end if;
  end loop;
  for v in select * from jsonb_array_elements(coalesce(p_results -> 'accounts', '[]'::jsonb)) loop
    continue when not exists (select 1 from app.integrations where id = (v ->> 'integrationId')::uuid);
    update app.integration_sync_state set account_attempt_at = now() where integration_id = (v ->> 'integrationId')::uuid;
    if not found then
      insert into app.integration_sync_state (integration_id, organization_id, workspace_id, account_attempt_at)
      select g.id, g.organization_id, g.workspace_id, now() from app.integrations g where g.id = (v ->> 'integrationId')::uuid;
    end if;
    if v ->> 'outcome' = 'ok' and jsonb_typeof(v -> 'account') = 'object' then
      perform app.analytics_record_account((v ->> 'integrationId')::uuid, coalesce((v ->> 'capturedAt')::timestamptz, now()),
        'sync', v -> 'account');
      v_accounts := v_accounts + 1;
    end if;
    if v ->> 'outcome' in ('ok', 'failed', 'rate_limited') then
      perform app.analytics_note_sync((v ->> 'integrationId')::uuid, v ->> 'outcome', v ->> 'error');
    end if;
  end loop;
  return jsonb_build_object('snapshots', v_snapshots, 'accounts', v_accounts);
end
$$;
grant execute on function app.analytics_record_sync(jsonb) to pressroom_worker, pressroom_definer;

------------------------------------------------------------------------------
-- Reading: shared by the api functions and the report job
------------------------------------------------------------------------------

-- The period of a request: [from, to] in workspace-local days, by default the
-- 30 days ending today; at most 366 days. Raises 400 VALIDATION_FAILED.
create function app.analytics_period(p_workspace_id uuid, p_from date, p_to date) returns date[]
language plpgsql stable as $$
declare
  v_to date := coalesce(p_to, app.analytics_local_day(p_workspace_id, now()));
  v_from date := coalesce(p_from, coalesce(p_to, app.analytics_local_day(p_workspace_id, now())) - 29);
begin
  if v_from > v_to then
    perform app.raise(400, 'VALIDATION_FAILED', 'from must not be after to.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'from', 'code', 'range', 'message', 'must not be after to'))));
  end if;
  if v_to - v_from > 365 then
    perform app.raise(400, 'VALIDATION_FAILED', 'A period is at most 366 days.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'from', 'code', 'range', 'message', 'the period is at most 366 days'))));
  end if;
  return array[v_from, v_to];
end
$$;
grant execute on function app.analytics_period(uuid, date, date) to pressroom_api, pressroom_worker, pressroom_definer;

-- Checks that every id names an integration of the workspace (deleted ones
-- too: their history stays); raises 404 INTEGRATION_NOT_FOUND.
create function app.analytics_check_integrations(p_workspace_id uuid, p_ids uuid[]) returns uuid[]
language plpgsql stable as $$
declare
  v_missing uuid[];
begin
  if p_ids is null or cardinality(p_ids) = 0 then
    return null;
  end if;
  select array_agg(x) into v_missing from unnest(p_ids) x
  where not exists (select 1 from app.integrations g where g.id = x and g.workspace_id = p_workspace_id);
  if v_missing is not null then
    perform app.raise(404, 'INTEGRATION_NOT_FOUND', 'An integration named in integrationIds does not exist in this workspace.',
      jsonb_build_object('integrationIds', to_jsonb(v_missing)));
  end if;
  return array(select distinct x from unnest(p_ids) x order by 1);
end
$$;
grant execute on function app.analytics_check_integrations(uuid, uuid[]) to pressroom_api, pressroom_worker, pressroom_definer;

-- The gains of a workspace over [from, to] as one jsonb of counters.
create function app.analytics_totals(p_workspace_id uuid, p_from date, p_to date, p_ids uuid[]) returns jsonb
language sql stable as $$
  select jsonb_build_object(
    'impressions', coalesce(sum(a.impressions), 0), 'reach', coalesce(sum(a.reach), 0),
    'likes', coalesce(sum(a.likes), 0), 'comments', coalesce(sum(a.comments), 0),
    'shares', coalesce(sum(a.shares), 0), 'saves', coalesce(sum(a.saves), 0),
    'clicks', coalesce(sum(a.clicks), 0), 'videoViews', coalesce(sum(a.video_views), 0),
    'engagements', coalesce(sum(a.likes + a.comments + a.shares + a.saves), 0))
  from app.analytics_daily a
  where a.workspace_id = p_workspace_id and a.dimension = 'total' and a.day between p_from and p_to
    and (p_ids is null or a.integration_id = any (p_ids))
$$;
grant execute on function app.analytics_totals(uuid, date, date, uuid[]) to pressroom_api, pressroom_worker, pressroom_definer;

-- Followers of the integrations at the end of a day (each one's latest count on or before it).
create function app.analytics_followers(p_workspace_id uuid, p_day date, p_ids uuid[]) returns bigint
language sql stable as $$
  select coalesce(sum(f.followers), 0)::bigint from (
    select distinct on (m.integration_id) m.followers
    from app.integration_metrics_daily m
    where m.workspace_id = p_workspace_id and m.day <= p_day and m.followers is not null
      and (p_ids is null or m.integration_id = any (p_ids))
    order by m.integration_id, m.day desc) f
$$;
grant execute on function app.analytics_followers(uuid, date, uuid[]) to pressroom_api, pressroom_worker, pressroom_definer;

create function app.analytics_posts_published(p_workspace_id uuid, p_from date, p_to date, p_ids uuid[]) returns bigint
language sql stable as $$
  select count(*) from app.content_items i
  where i.workspace_id = p_workspace_id and i.status = 'sent'
    and i.sent_at >= (p_from::timestamp at time zone (select w.timezone from app.workspaces w where w.id = p_workspace_id))
    and i.sent_at < ((p_to + 1)::timestamp at time zone (select w.timezone from app.workspaces w where w.id = p_workspace_id))
    and (p_ids is null or i.integration_id = any (p_ids))
$$;
grant execute on function app.analytics_posts_published(uuid, date, date, uuid[]) to pressroom_api, pressroom_worker, pressroom_definer;

-- One figure with its previous value and the change.
create function app.analytics_figure(p_value numeric, p_previous numeric) returns jsonb
language sql immutable as $$
  select jsonb_build_object('value', p_value, 'previous', p_previous, 'change', p_value - p_previous,
    'changePercent', case when p_previous = 0 then null else round((p_value - p_previous) * 100 / abs(p_previous), 1) end)
$$;
grant execute on function app.analytics_figure(numeric, numeric) to pressroom_api, pressroom_worker, pressroom_definer;

-- The summary of a period against the previous period of the same length.
create function app.analytics_summary(p_workspace_id uuid, p_from date, p_to date, p_ids uuid[]) returns jsonb
language plpgsql stable as $$
declare
  v_period date[] := app.analytics_period(p_workspace_id, p_from, p_to);
  v_ids uuid[] := app.analytics_check_integrations(p_workspace_id, p_ids);
  v_from date := v_period[1];
  v_to date := v_period[2];
  v_days int := v_period[2] - v_period[1] + 1;
  v_prev_from date := v_period[1] - (v_period[2] - v_period[1] + 1);
  v_prev_to date := v_period[1] - 1;
  v_cur jsonb;
  v_prev jsonb;
  v_metrics jsonb := '{}'::jsonb;
  k text;
  v_rate numeric;
  v_prev_rate numeric;
begin
  v_cur := app.analytics_totals(p_workspace_id, v_from, v_to, v_ids);
  v_prev := app.analytics_totals(p_workspace_id, v_prev_from, v_prev_to, v_ids);
  foreach k in array array['impressions', 'reach', 'likes', 'comments', 'shares', 'saves', 'clicks', 'videoViews', 'engagements'] loop
    v_metrics := v_metrics || jsonb_build_object(k, app.analytics_figure((v_cur ->> k)::numeric, (v_prev ->> k)::numeric));
  end loop;
  v_metrics := v_metrics
    || jsonb_build_object('postsPublished', app.analytics_figure(
         app.analytics_posts_published(p_workspace_id, v_from, v_to, v_ids),
         app.analytics_posts_published(p_workspace_id, v_prev_from, v_prev_to, v_ids)))
    || jsonb_build_object('followers', app.analytics_figure(
         app.analytics_followers(p_workspace_id, v_to, v_ids), app.analytics_followers(p_workspace_id, v_prev_to, v_ids)));
  v_rate := case when (v_cur ->> 'impressions')::numeric > 0
                 then round((v_cur ->> 'engagements')::numeric * 100 / (v_cur ->> 'impressions')::numeric, 2) else 0 end;
  v_prev_rate := case when (v_prev ->> 'impressions')::numeric > 0
                 then round((v_prev ->> 'engagements')::numeric * 100 / (v_prev ->> 'impressions')::numeric, 2) else 0 end;
  v_metrics := v_metrics || jsonb_build_object('engagementRatePercent', jsonb_build_object(
    'value', v_rate, 'previous', v_prev_rate, 'change', v_rate - v_prev_rate, 'changePercent', null));
  return jsonb_build_object(
    'period', jsonb_build_object('from', v_from, 'to', v_to, 'days', v_days,
      'timezone', (select w.timezone from app.workspaces w where w.id = p_workspace_id)),
    'previousPeriod', jsonb_build_object('from', v_prev_from, 'to', v_prev_to),
    'integrationIds', to_jsonb(v_ids),
    'metrics', v_metrics);
end
$$;
grant execute on function app.analytics_summary(uuid, date, date, uuid[]) to pressroom_api, pressroom_worker, pressroom_definer;

-- Time series of the gains, in buckets of a day, week (ISO, from Monday) or
-- month, grouped by none, integration, platform, tag, pillar or campaign;
-- every bucket of the period is present (zeros included).
create function app.analytics_series(p_workspace_id uuid, p_from date, p_to date, p_interval text, p_group_by text, p_ids uuid[]) returns jsonb
language plpgsql stable as $$
declare
  v_period date[] := app.analytics_period(p_workspace_id, p_from, p_to);
  v_ids uuid[] := app.analytics_check_integrations(p_workspace_id, p_ids);
  v_interval text := coalesce(p_interval, 'day');
  v_group text := coalesce(p_group_by, 'none');
  v_dimension text;
  v_series jsonb;
begin
  if v_interval not in ('day', 'week', 'month') then
    perform app.raise(400, 'VALIDATION_FAILED', 'interval must be day, week or month.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'interval', 'code', 'enum', 'message', 'must be day, week or month'))));
  end if;
  if v_group not in ('none', 'integration', 'platform', 'tag', 'pillar', 'campaign') then
    perform app.raise(400, 'VALIDATION_FAILED', 'groupBy must be none, integration, platform, tag, pillar or campaign.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'groupBy', 'code', 'enum', 'message', 'is not a grouping'))));
  end if;
  v_dimension := case when v_group in ('tag', 'pillar', 'campaign') then v_group else 'total' end;
  with rows as (
    select date_trunc(v_interval, a.day::timestamp)::date as bucket,
           case v_group when 'none' then null when 'platform' then g.platform else a.key::text end as key,
           a.impressions, a.reach, a.likes, a.comments, a.shares, a.saves, a.clicks, a.video_views
    from app.analytics_daily a
    join app.integrations g on g.id = a.integration_id
    where a.workspace_id = p_workspace_id and a.dimension = v_dimension
      and a.day between v_period[1] and v_period[2]
      and (v_ids is null or a.integration_id = any (v_ids))
  ),
  sums as (
    select key, bucket, sum(impressions) as impressions, sum(reach) as reach, sum(likes) as likes, sum(comments) as comments,
           sum(shares) as shares, sum(saves) as saves, sum(clicks) as clicks, sum(video_views) as video_views
    from rows group by key, bucket
  ),
  keys as (
    select distinct key from sums
    union select null where v_group = 'none'
  ),
  buckets as (
    select distinct date_trunc(v_interval, d)::date as bucket
    from generate_series(v_period[1]::timestamp, v_period[2]::timestamp, interval '1 day') d
  ),
  labelled as (
    select k.key,
      case v_group
        when 'none' then 'All'
        when 'integration' then (select g.name from app.integrations g where g.id::text = k.key)
        when 'platform' then (select p.name from app.platforms p where p.code = k.key)
        when 'tag' then (select t.name from app.tags t where t.id::text = k.key)
        when 'pillar' then (select p.name from app.pillars p where p.id::text = k.key)
        when 'campaign' then (select c.name from app.campaigns c where c.id::text = k.key)
      end as label
    from keys k
  )
  select coalesce(jsonb_agg(jsonb_build_object('key', l.key, 'label', l.label, 'points',
           (select jsonb_agg(jsonb_build_object('start', b.bucket,
              'impressions', coalesce(s.impressions, 0), 'reach', coalesce(s.reach, 0), 'likes', coalesce(s.likes, 0),
              'comments', coalesce(s.comments, 0), 'shares', coalesce(s.shares, 0), 'saves', coalesce(s.saves, 0),
              'clicks', coalesce(s.clicks, 0), 'videoViews', coalesce(s.video_views, 0),
              'engagements', coalesce(s.likes + s.comments + s.shares + s.saves, 0)) order by b.bucket)
            from buckets b left join sums s on s.bucket = b.bucket and s.key is not distinct from l.key)
         ) order by l.label, l.key), '[]'::jsonb)
  into v_series
  from labelled l
  -- A tag, pillar or campaign deleted since has no label: its rows are left out.
  where v_group = 'none' or l.label is not null;
  return jsonb_build_object('interval', v_interval, 'groupBy', v_group,
    'period', jsonb_build_object('from', v_period[1], 'to', v_period[2],
      'timezone', (select w.timezone from app.workspaces w where w.id = p_workspace_id)),
    'integrationIds', to_jsonb(v_ids), 'series', v_series);
end
$$;
grant execute on function app.analytics_series(uuid, date, date, text, text, uuid[]) to pressroom_api, pressroom_worker, pressroom_definer;

-- One row of the per-post table.
create function app.analytics_post_json(p_item app.content_items, p_latest app.post_metrics_latest) returns jsonb
language sql stable as $$
  select jsonb_build_object(
    'contentId', p_item.id, 'rootId', p_item.root_id, 'integrationId', p_item.integration_id,
    'platform', (select g.platform from app.integrations g where g.id = p_item.integration_id),
    'title', r.title, 'caption', left(coalesce(p_item.caption, r.caption), 280),
    'permalink', p_item.permalink, 'sentAt', p_item.sent_at,
    'lastCapturedAt', p_latest.captured_at,
    'impressions', coalesce(p_latest.impressions, 0), 'reach', coalesce(p_latest.reach, 0),
    'likes', coalesce(p_latest.likes, 0), 'comments', coalesce(p_latest.comments, 0),
    'shares', coalesce(p_latest.shares, 0), 'saves', coalesce(p_latest.saves, 0),
    'clicks', coalesce(p_latest.clicks, 0), 'videoViews', coalesce(p_latest.video_views, 0),
    'engagements', coalesce(p_latest.likes + p_latest.comments + p_latest.shares + p_latest.saves, 0),
    'engagementRatePercent', case when coalesce(p_latest.impressions, 0) > 0
      then round((p_latest.likes + p_latest.comments + p_latest.shares + p_latest.saves)::numeric * 100 / p_latest.impressions, 2)
      else 0 end)
  from app.content_roots r where r.id = p_item.root_id
$$;
grant execute on function app.analytics_post_json(app.content_items, app.post_metrics_latest) to pressroom_api, pressroom_worker, pressroom_definer;

-- The per-post table: editions sent in [from, to] (workspace-local days),
-- filtered, sorted, one page of them.
create function app.analytics_posts(p_workspace_id uuid, p_filter jsonb, p_sort_by text, p_order text, p_limit integer, p_offset bigint) returns jsonb
language plpgsql stable as $$
declare
  v_period date[] := app.analytics_period(p_workspace_id, (p_filter ->> 'from')::date, (p_filter ->> 'to')::date);
  v_ids uuid[] := app.analytics_check_integrations(p_workspace_id,
    (select array_agg(x::uuid) from jsonb_array_elements_text(case when jsonb_typeof(p_filter -> 'integrationIds') = 'array'
       then p_filter -> 'integrationIds' else '[]'::jsonb end) x));
  v_tz text := (select w.timezone from app.workspaces w where w.id = p_workspace_id);
  v_sort text := coalesce(p_sort_by, 'sentAt');
  v_desc boolean := coalesce(p_order, 'desc') = 'desc';
  v_total bigint;
  v_items jsonb;
begin
  if v_sort not in ('sentAt', 'impressions', 'reach', 'likes', 'comments', 'shares', 'saves', 'clicks', 'videoViews',
                    'engagements', 'engagementRatePercent') then
    perform app.raise(400, 'VALIDATION_FAILED', 'Unknown sortBy.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'sortBy', 'code', 'enum', 'message', 'is not a sortable column'))));
  end if;
  if coalesce(p_order, 'desc') not in ('asc', 'desc') or p_limit not between 1 and 100 or p_offset < 0 then
    perform app.raise(400, 'VALIDATION_FAILED', 'order must be asc or desc, limit 1 to 100, offset from 0.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'limit', 'code', 'range', 'message', 'out of range'))));
  end if;
  with posts as (
    select i, l,
      case v_sort
        when 'sentAt' then extract(epoch from i.sent_at)::numeric
        when 'impressions' then coalesce(l.impressions, 0) when 'reach' then coalesce(l.reach, 0)
        when 'likes' then coalesce(l.likes, 0) when 'comments' then coalesce(l.comments, 0)
        when 'shares' then coalesce(l.shares, 0) when 'saves' then coalesce(l.saves, 0)
        when 'clicks' then coalesce(l.clicks, 0) when 'videoViews' then coalesce(l.video_views, 0)
        when 'engagements' then coalesce(l.likes + l.comments + l.shares + l.saves, 0)
        else case when coalesce(l.impressions, 0) > 0
                  then (l.likes + l.comments + l.shares + l.saves)::numeric / l.impressions else 0 end
      end as sort_value
    from app.content_items i
    left join app.post_metrics_latest l on l.content_item_id = i.id
    where i.workspace_id = p_workspace_id and i.status = 'sent'
      and i.sent_at >= (v_period[1]::timestamp at time zone v_tz) and i.sent_at < ((v_period[2] + 1)::timestamp at time zone v_tz)
      and (v_ids is null or i.integration_id = any (v_ids))
      and (p_filter ->> 'platform' is null
           or exists (select 1 from app.integrations g where g.id = i.integration_id and g.platform = p_filter ->> 'platform'))
      and (p_filter ->> 'tagId' is null
           or exists (select 1 from app.content_root_tags t where t.root_id = i.root_id and t.tag_id = (p_filter ->> 'tagId')::uuid))
      and (p_filter ->> 'pillarId' is null
           or exists (select 1 from app.content_root_pillars p where p.root_id = i.root_id and p.pillar_id = (p_filter ->> 'pillarId')::uuid))
      and (p_filter ->> 'campaignId' is null
           or exists (select 1 from app.content_roots r where r.id = i.root_id and r.campaign_id = (p_filter ->> 'campaignId')::uuid))
  ),
  page as (
    select * from posts p
    order by case when v_desc then p.sort_value end desc, case when not v_desc then p.sort_value end asc, (p.i).id
    limit p_limit offset p_offset
  )
  select (select count(*) from posts),
         (select coalesce(jsonb_agg(app.analytics_post_json(p.i, p.l)
            order by case when v_desc then p.sort_value end desc, case when not v_desc then p.sort_value end asc, (p.i).id), '[]'::jsonb)
          from page p)
  into v_total, v_items;
  return jsonb_build_object('data', v_items, 'meta', jsonb_build_object('limit', p_limit, 'offset', p_offset,
    'total', v_total, 'hasMore', p_offset + jsonb_array_length(v_items) < v_total));
end
$$;
grant execute on function app.analytics_posts(uuid, jsonb, text, text, integer, bigint) to pressroom_api, pressroom_worker, pressroom_definer;

------------------------------------------------------------------------------
-- Requests
------------------------------------------------------------------------------

create function api.analytics_summary(p_from date, p_to date, p_integration_ids uuid[]) returns jsonb
language plpgsql stable as $$
begin
  perform app.require_role('viewer');
  return app.analytics_summary(app.current_workspace_id(), p_from, p_to, p_integration_ids);
end
$$;
comment on function api.analytics_summary(date, date, uuid[]) is 'Serves GET /v1/workspaces/{workspaceId}/analytics/summary (getAnalyticsSummary_v1): the gains of the period (default: the 30 days ending today, workspace-local) from app.analytics_daily, posts published and followers, each with the previous period of the same length and the change. Viewer role; 400 VALIDATION_FAILED for a bad period, 404 INTEGRATION_NOT_FOUND.';

create function api.analytics_aggregates(p_from date, p_to date, p_interval text, p_group_by text, p_integration_ids uuid[]) returns jsonb
language plpgsql stable as $$
begin
  perform app.require_role('viewer');
  return app.analytics_series(app.current_workspace_id(), p_from, p_to, p_interval, p_group_by, p_integration_ids);
end
$$;
comment on function api.analytics_aggregates(date, date, text, text, uuid[]) is 'Serves GET /v1/workspaces/{workspaceId}/analytics/aggregates (getAnalyticsAggregates_v1): time series of the gains by day, week or month (workspace-local), grouped by none, integration, platform, tag, pillar or campaign, read from the rollup app.analytics_daily. Viewer role.';

create function api.analytics_posts(p_filter jsonb, p_sort_by text, p_order text, p_limit integer, p_offset bigint) returns jsonb
language plpgsql stable as $$
begin
  perform app.require_role('viewer');
  return app.analytics_posts(app.current_workspace_id(), p_filter, p_sort_by, p_order, p_limit, p_offset);
end
$$;
comment on function api.analytics_posts(jsonb, text, text, integer, bigint) is 'Serves GET /v1/workspaces/{workspaceId}/analytics/posts (listAnalyticsPosts_v1): editions sent in the period with their latest counters (app.post_metrics_latest), filtered by integration, platform, tag, pillar or campaign, sorted, offset-paginated ({data, meta}). Viewer role.';

create function api.analytics_post(p_content_id uuid, p_from date, p_to date) returns jsonb
language plpgsql stable as $$
declare
  v_item app.content_items;
  v_latest app.post_metrics_latest;
  v_tz text;
  v_from date;
  v_to date;
  v_period date[];
  v_series jsonb;
begin
  perform app.require_role('viewer');
  select * into v_item from app.content_items i
  where i.id = p_content_id and i.workspace_id = app.current_workspace_id() and i.status = 'sent';
  if v_item.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No published content with this id in this workspace.', jsonb_build_object('id', p_content_id));
  end if;
  select w.timezone into v_tz from app.workspaces w where w.id = v_item.workspace_id;
  v_to := coalesce(p_to, app.analytics_local_day(v_item.workspace_id, now()));
  v_from := coalesce(p_from, greatest(app.analytics_local_day(v_item.workspace_id, v_item.sent_at), v_to - 89));
  v_period := app.analytics_period(v_item.workspace_id, v_from, v_to);
  select * into v_latest from app.post_metrics_latest l where l.content_item_id = v_item.id;
  with days as (
    select d::date as day from generate_series(v_period[1]::timestamp, v_period[2]::timestamp, interval '1 day') d
  ),
  base as (
    select coalesce(sum(m.impressions), 0) as impressions, coalesce(sum(m.reach), 0) as reach, coalesce(sum(m.likes), 0) as likes,
           coalesce(sum(m.comments), 0) as comments, coalesce(sum(m.shares), 0) as shares, coalesce(sum(m.saves), 0) as saves,
           coalesce(sum(m.clicks), 0) as clicks, coalesce(sum(m.video_views), 0) as video_views
    from app.post_metrics_daily m where m.content_item_id = v_item.id and m.day < v_period[1]
  ),
  points as (
    select d.day, m.impressions, m.reach, m.likes, m.comments, m.shares, m.saves, m.clicks, m.video_views,
      sum(coalesce(m.impressions, 0)) over w as c_impressions, sum(coalesce(m.reach, 0)) over w as c_reach,
      sum(coalesce(m.likes, 0)) over w as c_likes, sum(coalesce(m.comments, 0)) over w as c_comments,
      sum(coalesce(m.shares, 0)) over w as c_shares, sum(coalesce(m.saves, 0)) over w as c_saves,
      sum(coalesce(m.clicks, 0)) over w as c_clicks, sum(coalesce(m.video_views, 0)) over w as c_video_views
    from days d left join app.post_metrics_daily m on m.content_item_id = v_item.id and m.day = d.day
    window w as (order by d.day)
  )
  select jsonb_agg(jsonb_build_object('day', p.day,
    'gained', jsonb_build_object('impressions', coalesce(p.impressions, 0), 'reach', coalesce(p.reach, 0),
      'likes', coalesce(p.likes, 0), 'comments', coalesce(p.comments, 0), 'shares', coalesce(p.shares, 0),
      'saves', coalesce(p.saves, 0), 'clicks', coalesce(p.clicks, 0), 'videoViews', coalesce(p.video_views, 0)),
    'total', jsonb_build_object('impressions', b.impressions + p.c_impressions, 'reach', b.reach + p.c_reach,
      'likes', b.likes + p.c_likes, 'comments', b.comments + p.c_comments, 'shares', b.shares + p.c_shares,
      'saves', b.saves + p.c_saves, 'clicks', b.clicks + p.c_clicks, 'videoViews', b.video_views + p.c_video_views))
    order by p.day)
  into v_series
  from points p cross join base b;
  return app.analytics_post_json(v_item, v_latest) || jsonb_build_object(
    'period', jsonb_build_object('from', v_period[1], 'to', v_period[2], 'timezone', v_tz),
    'snapshots', (select count(*) from app.post_metric_snapshots s where s.content_item_id = v_item.id),
    'series', coalesce(v_series, '[]'::jsonb));
end
$$;
comment on function api.analytics_post(uuid, date, date) is 'Serves GET /v1/workspaces/{workspaceId}/analytics/posts/{contentId} (getAnalyticsPost_v1): a sent edition''s latest counters and its daily series (gained that day, and the running totals) over the period (default: from its publication, at most 90 days, to today). Viewer role; 404 NOT_FOUND for an edition that is not sent or not in the workspace.';

create function api.analytics_demographics(p_integration_ids uuid[], p_on date) returns jsonb
language plpgsql stable as $$
declare
  v_ws uuid := app.current_workspace_id();
  v_ids uuid[];
  v_on date;
  v_items jsonb;
  v_combined jsonb;
begin
  perform app.require_role('viewer');
  v_ids := app.analytics_check_integrations(v_ws, p_integration_ids);
  v_on := coalesce(p_on, app.analytics_local_day(v_ws, now()));
  with latest as (
    select distinct on (m.integration_id) m.integration_id, m.day, m.followers, m.demographics
    from app.integration_metrics_daily m
    where m.workspace_id = v_ws and m.day <= v_on and m.demographics is not null
      and (v_ids is null or m.integration_id = any (v_ids))
    order by m.integration_id, m.day desc
  )
  select coalesce(jsonb_agg(jsonb_build_object('integrationId', l.integration_id, 'name', g.name, 'platform', g.platform,
           'day', l.day, 'followers', l.followers,
           'age', app.analytics_breakdown(l.demographics -> 'age'),
           'gender', app.analytics_breakdown(l.demographics -> 'gender'),
           'country', app.analytics_breakdown(l.demographics -> 'country')) order by g.name, g.id), '[]'::jsonb)
  into v_items
  from latest l join app.integrations g on g.id = l.integration_id;
  with latest as (
    select distinct on (m.integration_id) m.demographics
    from app.integration_metrics_daily m
    where m.workspace_id = v_ws and m.day <= v_on and m.demographics is not null
      and (v_ids is null or m.integration_id = any (v_ids))
    order by m.integration_id, m.day desc
  ),
  summed as (
    select d.dimension, e.key, sum((e.value #>> '{}')::bigint) as value
    from latest l cross join unnest(array['age', 'gender', 'country']) d (dimension)
    cross join lateral jsonb_each(coalesce(l.demographics -> d.dimension, '{}'::jsonb)) e
    where jsonb_typeof(e.value) = 'number'
    group by d.dimension, e.key
  )
  select jsonb_build_object(
    'age', app.analytics_breakdown((select jsonb_object_agg(key, value) from summed where dimension = 'age')),
    'gender', app.analytics_breakdown((select jsonb_object_agg(key, value) from summed where dimension = 'gender')),
    'country', app.analytics_breakdown((select jsonb_object_agg(key, value) from summed where dimension = 'country')))
  into v_combined;
  return jsonb_build_object('on', v_on, 'integrationIds', to_jsonb(v_ids), 'integrations', v_items, 'combined', v_combined);
end
$$;
comment on function api.analytics_demographics(uuid[], date) is 'Serves GET /v1/workspaces/{workspaceId}/analytics/demographics (getAnalyticsDemographics_v1): each integration''s latest follower demographics on or before a day (age band, gender, country: counts and shares) and the combined breakdown. Viewer role; 404 INTEGRATION_NOT_FOUND.';

-- A demographics object {bucket: count} as [{key, count, sharePercent}], largest first.
create function app.analytics_breakdown(p_counts jsonb) returns jsonb
language sql immutable as $$
  with parts as (
    select e.key, (e.value #>> '{}')::bigint as value from jsonb_each(coalesce(p_counts, '{}'::jsonb)) e
    where jsonb_typeof(e.value) = 'number'
  )
  select coalesce(jsonb_agg(jsonb_build_object('key', p.key, 'count', p.value,
    'sharePercent', case when t.total > 0 then round(p.value * 100.0 / t.total, 1) else 0 end) order by p.value desc, p.key), '[]'::jsonb)
  from parts p cross join (select sum(value) as total from parts) t
$$;
grant execute on function app.analytics_breakdown(jsonb) to pressroom_api, pressroom_worker, pressroom_definer;

create function api.analytics_health() returns jsonb
language plpgsql stable as $$
declare
  v_ws uuid := app.current_workspace_id();
  v_since timestamptz := now() - interval '30 days';
begin
  perform app.require_role('viewer');
  return (
    select coalesce(jsonb_agg(jsonb_build_object(
      'integrationId', g.id, 'name', g.name, 'platform', g.platform, 'connector', g.connector,
      'connectionState', g.status,
      'lastSyncAt', s.last_attempt_at, 'lastSuccessfulSyncAt', s.last_success_at,
      'lastSyncError', case when s.last_error_at is not null and (s.last_success_at is null or s.last_error_at > s.last_success_at)
                            then s.last_error end,
      'publishing', (
        select jsonb_build_object('since', v_since, 'succeeded', count(*) filter (where a.outcome in ('published', 'resolved_published')),
          'failed', count(*) filter (where a.outcome in ('failed', 'resolved_failed', 'transient')),
          'successRatePercent', case when count(*) filter (where a.outcome in ('published', 'resolved_published', 'failed', 'resolved_failed', 'transient')) > 0
            then round(count(*) filter (where a.outcome in ('published', 'resolved_published')) * 100.0
                       / count(*) filter (where a.outcome in ('published', 'resolved_published', 'failed', 'resolved_failed', 'transient')), 1) end)
        from app.publish_attempts a join app.content_items i on i.id = a.content_item_id
        where i.integration_id = g.id and a.workspace_id = v_ws and a.started_at >= v_since),
      'awaitingConfirmation', (
        select count(*) from app.publishing_states p join app.content_items i on i.id = p.content_item_id
        where i.integration_id = g.id and p.workspace_id = v_ws and p.state = 'awaiting_confirmation'),
      'sync', (
        select jsonb_build_object('successes', coalesce(sum(d.successes), 0), 'failures', coalesce(sum(d.failures), 0),
          'rateLimitHits', coalesce(sum(d.rate_limit_hits), 0))
        from app.integration_sync_daily d where d.integration_id = g.id and d.day >= (v_since at time zone 'UTC')::date))
      order by g.name, g.id), '[]'::jsonb)
    from app.integrations g
    left join app.integration_sync_state s on s.integration_id = g.id
    where g.workspace_id = v_ws and g.deleted_at is null);
end
$$;
comment on function api.analytics_health() is 'Serves GET /v1/workspaces/{workspaceId}/analytics/health (getAnalyticsHealth_v1): per integration of the workspace (deleted ones left out) its connection state, last metric sync and last successful one, the last sync error, publish attempts over 30 days (succeeded, failed, success rate), editions awaiting confirmation, and metric sync outcomes over 30 days with the platform''s rate-limit refusals. Viewer role.';

create function api.ingest_metrics(p_integration_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  v_ws uuid := app.current_workspace_id();
  v_integration record;
  v_problems jsonb := '[]'::jsonb;
  v_post jsonb;
  v_n int := 0;
  v_item app.content_items;
  v_at timestamptz;
  v_items uuid[] := '{}';
  v_ats timestamptz[] := '{}';
  v_recorded int := 0;
  v_rows int;
  v_account jsonb := p_body -> 'account';
begin
  perform app.require_role('editor');
  select g.id, g.connector into v_integration from app.integrations g
  where g.id = p_integration_id and g.workspace_id = v_ws and g.deleted_at is null;
  if v_integration.id is null then
    perform app.raise(404, 'INTEGRATION_NOT_FOUND', 'No integration with this id in this workspace.', jsonb_build_object('id', p_integration_id));
  end if;
  if v_integration.connector <> 'webhook' then
    perform app.raise(409, 'METRICS_INGESTION_NOT_SUPPORTED',
      format('Metrics of a %s integration come from its connector; only webhook integrations push them.', v_integration.connector),
      jsonb_build_object('connector', v_integration.connector));
  end if;
  for v_post in select * from jsonb_array_elements(coalesce(p_body -> 'posts', '[]'::jsonb)) loop
    v_item := null;
    if v_post ? 'contentId' then
      select * into v_item from app.content_items i
      where i.id = (v_post ->> 'contentId')::uuid and i.integration_id = v_integration.id;
    elsif v_post ? 'platformPostId' then
      select * into v_item from app.content_items i
      where i.integration_id = v_integration.id and i.platform_post_id = v_post ->> 'platformPostId'
      order by i.sent_at desc nulls last limit 1;
    end if;
    v_at := (v_post ->> 'capturedAt')::timestamptz;
    if v_item.id is null then
      v_problems := v_problems || jsonb_build_object('field', format('body.posts[%s]', v_n), 'code', 'post_not_found',
        'message', 'no edition of this integration with this contentId or platformPostId');
    elsif v_item.status <> 'sent' then
      v_problems := v_problems || jsonb_build_object('field', format('body.posts[%s]', v_n), 'code', 'not_published',
        'message', 'the edition is not published');
    elsif v_at < v_item.sent_at - interval '1 minute' then
      v_problems := v_problems || jsonb_build_object('field', format('body.posts[%s].capturedAt', v_n), 'code', 'before_publication',
        'message', 'is before the edition was published');
    end if;
    if v_at > now() + interval '5 minutes' then
      v_problems := v_problems || jsonb_build_object('field', format('body.posts[%s].capturedAt', v_n), 'code', 'in_future',
        'message', 'is in the future');
    end if;
    if v_item.id is not null and (v_item.id, v_at) in (select * from unnest(v_items, v_ats)) then
      v_problems := v_problems || jsonb_build_object('field', format('body.posts[%s]', v_n), 'code', 'duplicate',
        'message', 'the same post and capturedAt appear twice');
    end if;
    v_problems := v_problems || app.analytics_metric_problems(v_post, format('body.posts[%s]', v_n));
    v_items := v_items || v_item.id;
    v_ats := v_ats || v_at;
    v_n := v_n + 1;
  end loop;
  if jsonb_typeof(v_account) = 'object' then
    if (v_account ->> 'capturedAt')::timestamptz > now() + interval '5 minutes' then
      v_problems := v_problems || jsonb_build_object('field', 'body.account.capturedAt', 'code', 'in_future', 'message', 'is in the future');
    end if;
    if app.analytics_count(v_account -> 'followers') = -1 or app.analytics_count(v_account -> 'profileViews') = -1 then
      v_problems := v_problems || jsonb_build_object('field', 'body.account', 'code', 'type',
        'message', 'followers and profileViews must be whole numbers from 0');
    end if;
  end if;
  perform app.raise_field_problems(case when jsonb_array_length(v_problems) > 0 then v_problems end,
    'The metrics break a rule; see details.fields. Nothing was recorded.');
  for v_post in select * from jsonb_array_elements(coalesce(p_body -> 'posts', '[]'::jsonb)) loop
    if v_post ? 'contentId' then
      select * into v_item from app.content_items i where i.id = (v_post ->> 'contentId')::uuid;
    else
      select * into v_item from app.content_items i
      where i.integration_id = v_integration.id and i.platform_post_id = v_post ->> 'platformPostId'
      order by i.sent_at desc nulls last limit 1;
    end if;
    insert into app.post_metric_snapshots (organization_id, workspace_id, content_item_id, integration_id, captured_at, source,
      impressions, reach, likes, comments, shares, saves, clicks, video_views)
    values (v_item.organization_id, v_item.workspace_id, v_item.id, v_item.integration_id, (v_post ->> 'capturedAt')::timestamptz, 'ingest',
      coalesce(app.analytics_count(v_post -> 'impressions'), 0), coalesce(app.analytics_count(v_post -> 'reach'), 0),
      coalesce(app.analytics_count(v_post -> 'likes'), 0), coalesce(app.analytics_count(v_post -> 'comments'), 0),
      coalesce(app.analytics_count(v_post -> 'shares'), 0), coalesce(app.analytics_count(v_post -> 'saves'), 0),
      coalesce(app.analytics_count(v_post -> 'clicks'), 0), coalesce(app.analytics_count(v_post -> 'videoViews'), 0))
    on conflict (content_item_id, captured_at) do nothing;
    get diagnostics v_rows = row_count;
    v_recorded := v_recorded + v_rows;
  end loop;
  if jsonb_typeof(v_account) = 'object' then
    perform app.analytics_record_account(v_integration.id, (v_account ->> 'capturedAt')::timestamptz, 'ingest', v_account);
  end if;
  perform app.analytics_note_sync(v_integration.id, 'ok', null, 1);
  return jsonb_build_object('integrationId', v_integration.id, 'postsReceived', v_n, 'postsRecorded', v_recorded,
    'postsAlreadyRecorded', v_n - v_recorded, 'accountRecorded', jsonb_typeof(v_account) = 'object');
end
$$;
comment on function api.ingest_metrics(uuid, jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/integrations/{id}/metrics (ingestIntegrationMetrics_v1): a webhook integration''s receiver pushes post snapshots (by contentId or platformPostId) and an account snapshot; all or nothing (400 VALIDATION_FAILED with one entry per problem), a snapshot already recorded (same post and capturedAt) is skipped, so a re-delivery is harmless. Editor role; 404 INTEGRATION_NOT_FOUND, 409 METRICS_INGESTION_NOT_SUPPORTED for other connectors.';

------------------------------------------------------------------------------
-- Reports
------------------------------------------------------------------------------

create function app.analytics_report_json(p_report app.analytics_reports) returns jsonb
language sql stable as $$
  select jsonb_build_object('id', p_report.id, 'status', p_report.status,
    'from', p_report.period_from, 'to', p_report.period_to, 'integrationIds', to_jsonb(p_report.integration_ids),
    'createdAt', p_report.created_at, 'startedAt', p_report.started_at, 'finishedAt', p_report.finished_at,
    'fileSize', p_report.file_size, 'error', p_report.error)
$$;
grant execute on function app.analytics_report_json(app.analytics_reports) to pressroom_api, pressroom_worker, pressroom_definer;

-- Inserts a report of the request's workspace (the caller has checked role,
-- plan, period and integrations); definer so a viewer may ask for one.
create function app.analytics_report_insert(p_from date, p_to date, p_ids uuid[]) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_report app.analytics_reports;
begin
  if app.current_workspace_id() is null or not app.current_workspace_accessible() then
    perform app.raise(403, 'WORKSPACE_REQUIRED', 'A report belongs to a workspace the caller may use.');
  end if;
  insert into app.analytics_reports (organization_id, workspace_id, period_from, period_to, integration_ids, created_by, api_key_id)
  values (app.current_organization_id(), app.current_workspace_id(), p_from, p_to, p_ids,
    nullif(current_setting('pressroom.user_id', true), '')::uuid, nullif(current_setting('pressroom.api_key_id', true), '')::uuid)
  returning * into v_report;
  return app.analytics_report_json(v_report);
end
$$;
alter function app.analytics_report_insert(date, date, uuid[]) owner to pressroom_definer;
grant execute on function app.analytics_report_insert(date, date, uuid[]) to pressroom_api, pressroom_definer;

create function api.create_analytics_report(p_from date, p_to date, p_integration_ids uuid[]) returns jsonb
language plpgsql as $$
declare
  v_ws uuid := app.current_workspace_id();
  v_plan text;
  v_period date[];
  v_ids uuid[];
begin
  perform app.require_role('viewer');
  select o.plan into v_plan from app.organizations o where o.id = app.current_organization_id();
  if app.plan_rank(v_plan) < app.plan_rank('standard') then
    perform app.raise(401, 'PLAN_REQUIRED', format('PDF reports need the standard plan or higher; this organization is on %s.', v_plan),
      jsonb_build_object('plan', v_plan, 'requiredPlan', 'standard'));
  end if;
  v_period := app.analytics_period(v_ws, p_from, p_to);
  v_ids := app.analytics_check_integrations(v_ws, p_integration_ids);
  return app.analytics_report_insert(v_period[1], v_period[2], v_ids);
end
$$;
comment on function api.create_analytics_report(date, date, uuid[]) is 'Serves POST /v1/workspaces/{workspaceId}/analytics/reports (createAnalyticsReport_v1): queues a PDF report of the period and integrations; its pg-boss job is written in the same transaction (trigger analytics_reports_30_job). Viewer role and the standard plan (401 PLAN_REQUIRED, as the gate also checks).';

create function api.get_analytics_report(p_id uuid) returns jsonb
language plpgsql stable as $$
declare
  v_report app.analytics_reports;
begin
  perform app.require_role('viewer');
  select * into v_report from app.analytics_reports r where r.id = p_id and r.workspace_id = app.current_workspace_id();
  if v_report.id is null then
    perform app.raise_not_found('report', p_id);
  end if;
  return app.analytics_report_json(v_report) || jsonb_build_object('storageKey', v_report.storage_key);
end
$$;
comment on function api.get_analytics_report(uuid) is 'Serves GET /v1/workspaces/{workspaceId}/analytics/reports/{id} (getAnalyticsReport_v1): the report''s status, and for a ready one its storage key, which the route turns into a signed download URL (and leaves out of the answer). Viewer role; 404 NOT_FOUND.';

create function app.tg_analytics_reports_job() returns trigger
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_queue record;
  v_job uuid := gen_random_uuid();
begin
  select * into v_queue from pgboss.queue where name = 'analytics.report';
  if v_queue.name is null then
    raise exception 'pg-boss queue analytics.report is not installed (server/jobs/queues.ts installQueues)';
  end if;
  insert into pgboss.job (id, name, data, priority, start_after, singleton_key, expire_seconds, deletion_seconds,
    keep_until, retry_limit, retry_delay, retry_backoff, retry_delay_max, policy, dead_letter, heartbeat_seconds)
  values (v_job, 'analytics.report', jsonb_build_object('reportId', new.id, 'workspaceId', new.workspace_id),
    0, now(), new.id::text, v_queue.expire_seconds, v_queue.deletion_seconds,
    now() + v_queue.retention_seconds * interval '1 second', v_queue.retry_limit, v_queue.retry_delay,
    v_queue.retry_backoff, v_queue.retry_delay_max, v_queue.policy, v_queue.dead_letter, v_queue.heartbeat_seconds);
  new.job_id := v_job;
  new.status := 'queued';
  return new;
end
$$;
alter function app.tg_analytics_reports_job() owner to pressroom_definer;
grant execute on function app.tg_analytics_reports_job() to pressroom_api, pressroom_worker, pressroom_definer;
create trigger analytics_reports_30_job before insert on app.analytics_reports
  for each row execute function app.tg_analytics_reports_job();

-- The report job: claims a report (queued or running after a lost worker) and
-- returns everything the PDF shows; null when there is nothing to do. Definer:
-- the worker reads no workspace row itself.
create function app.analytics_report_claim(p_id uuid) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_report app.analytics_reports;
  v_ws app.workspaces;
begin
  update app.analytics_reports set status = 'running', started_at = now()
  where id = p_id and status in ('queued', 'running')
  returning * into v_report;
  if v_report.id is null then
    return null;
  end if;
  select * into v_ws from app.workspaces where id = v_report.workspace_id;
  return jsonb_build_object(
    'report', app.analytics_report_json(v_report),
    'workspace', jsonb_build_object('id', v_ws.id, 'name', v_ws.name, 'timezone', v_ws.timezone),
    'integrations', (select coalesce(jsonb_agg(jsonb_build_object('id', g.id, 'name', g.name, 'platform', g.platform) order by g.name), '[]'::jsonb)
                     from app.integrations g where g.workspace_id = v_ws.id
                       and (v_report.integration_ids is null or g.id = any (v_report.integration_ids))
                       and (g.deleted_at is null or v_report.integration_ids is not null)),
    'summary', app.analytics_summary(v_ws.id, v_report.period_from, v_report.period_to, v_report.integration_ids),
    'daily', app.analytics_series(v_ws.id, v_report.period_from, v_report.period_to, 'day', 'none', v_report.integration_ids),
    'byPlatform', app.analytics_series(v_ws.id, v_report.period_from, v_report.period_to,
      case when v_report.period_to - v_report.period_from > 62 then 'week' else 'day' end, 'platform', v_report.integration_ids),
    'topPosts', app.analytics_posts(v_ws.id, jsonb_build_object('from', v_report.period_from, 'to', v_report.period_to,
      'integrationIds', to_jsonb(v_report.integration_ids)), 'impressions', 'desc', 10, 0) -> 'data');
end
$$;
alter function app.analytics_report_claim(uuid) owner to pressroom_definer;
grant execute on function app.analytics_report_claim(uuid) to pressroom_worker, pressroom_definer;

create function app.analytics_report_finish(p_id uuid, p_storage_key text, p_size bigint, p_sha256 text, p_error text) returns jsonb
language plpgsql as $$
declare
  v_report app.analytics_reports;
begin
  update app.analytics_reports set
    status = case when p_error is null then 'ready' else 'failed' end,
    storage_key = p_storage_key, file_size = p_size, checksum_sha256 = p_sha256,
    error = left(p_error, 1000), finished_at = now()
  where id = p_id and status = 'running'
  returning * into v_report;
  return app.analytics_report_json(v_report);
end
$$;
grant execute on function app.analytics_report_finish(uuid, text, bigint, text, text) to pressroom_worker, pressroom_definer;

-- Reports finished more than analytics_report_retention_days ago, for the
-- sync job: it deletes their files, then app.analytics_forget_reports the
-- rows (a run that dies in between deletes the files again: harmless).
create function app.analytics_expired_reports(p_limit integer) returns jsonb
language sql stable as $$
  select coalesce(jsonb_agg(jsonb_build_object('id', r.id, 'storageKey', r.storage_key)), '[]'::jsonb)
  from (select r.id, r.storage_key from app.analytics_reports r
        where r.status in ('ready', 'failed')
          and r.finished_at < now() - make_interval(days => app.setting_int('analytics_report_retention_days'))
        order by r.finished_at limit greatest(1, least(p_limit, 1000))) r
$$;
grant execute on function app.analytics_expired_reports(integer) to pressroom_worker, pressroom_definer;

create function app.analytics_forget_reports(p_ids uuid[]) returns integer
language plpgsql as $$
declare
  v int;
begin
  delete from app.analytics_reports r
  where r.id = any (p_ids) and r.status in ('ready', 'failed')
    and r.finished_at < now() - make_interval(days => app.setting_int('analytics_report_retention_days'));
  get diagnostics v = row_count;
  return v;
end
$$;
grant execute on function app.analytics_forget_reports(uuid[]) to pressroom_worker, pressroom_definer;
grant delete on app.analytics_reports to pressroom_worker;

-- The storage router (GET /storage/v1/reports/{id}), once the URL's signature is checked.
create function api.storage_report_object(p_id uuid) returns jsonb
language sql stable security definer set search_path = pg_catalog, app as $$
  select jsonb_build_object('id', r.id, 'storageKey', r.storage_key, 'contentType', 'application/pdf',
    'filename', format('analytics-%s-%s.pdf', r.period_from, r.period_to), 'fileSize', r.file_size,
    'checksumSha256', r.checksum_sha256)
  from app.analytics_reports r where r.id = p_id and r.status = 'ready'
$$;
alter function api.storage_report_object(uuid) owner to pressroom_definer;
comment on function api.storage_report_object(uuid) is 'Called by the storage router (server/storage/router.ts) for GET /storage/v1/reports/{reportId}, outside any request transaction, once the URL''s signature is checked: the PDF behind a signed report download URL; null unless the report is ready. Owned by pressroom_definer, executable by pressroom_app only.';
revoke all on function api.storage_report_object(uuid) from public;
grant execute on function api.storage_report_object(uuid) to pressroom_app;

select app.harden_api_functions();
