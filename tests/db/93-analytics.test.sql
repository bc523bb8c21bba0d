-- Analytics: the rollups the routes read (app.post_metrics_daily,
-- app.post_metrics_latest, app.analytics_daily) equal a scan of the raw
-- snapshots, whatever order snapshots arrive in and however roots change
-- tags, pillars and campaigns; days are workspace-local; snapshots are
-- append-only; the sync bookkeeping; roles (viewers read, editors ingest,
-- other workspaces see nothing) and the plan of PDF reports.
-- (db/migrations/committed/000008-analytics-metrics-rollups-reports.sql, split 14-analytics.sql)
begin;
select plan(36);

-- @include personas.sql

-- A1 (New York time): integrations x (sandbox), pinterest (sandbox) and a
-- webhook; tags t1, t2, pillar p1, campaigns c1, c2; root r1 (t1, p1, c1)
-- with sent editions e1 (x) and e2 (pinterest); root r2 (t2) with e3 (x);
-- e4 on the webhook; a draft d1. B1: one sent edition.
update app.workspaces set timezone = 'America/New_York' where id = pg_temp.id('A1');
insert into app.integrations (id, organization_id, workspace_id, connector, platform, name, settings, webhook_url, webhook_secret)
values (pg_temp.id('integ:x'), pg_temp.id('A'), pg_temp.id('A1'), 'sandbox', 'x', 'A1 on X', '{"behavior":"succeed"}', null, null),
       (pg_temp.id('integ:pin'), pg_temp.id('A'), pg_temp.id('A1'), 'sandbox', 'pinterest', 'A1 pins', '{"behavior":"succeed"}', null, null),
       (pg_temp.id('integ:hook'), pg_temp.id('A'), pg_temp.id('A1'), 'webhook', 'linkedin', 'A1 hook', '{}',
        'https://hooks.example.test/in', 'whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3'),
       (pg_temp.id('integ:B'), pg_temp.id('B'), pg_temp.id('B1'), 'sandbox', 'x', 'B1 on X', '{}', null, null);
insert into app.tags (id, organization_id, workspace_id, name) values
  (pg_temp.id('t1'), pg_temp.id('A'), pg_temp.id('A1'), 'Launch'),
  (pg_temp.id('t2'), pg_temp.id('A'), pg_temp.id('A1'), 'Tips');
insert into app.pillars (id, organization_id, workspace_id, name) values (pg_temp.id('p1'), pg_temp.id('A'), pg_temp.id('A1'), 'Education');
insert into app.campaigns (id, organization_id, workspace_id, name) values
  (pg_temp.id('c1'), pg_temp.id('A'), pg_temp.id('A1'), 'Summer'),
  (pg_temp.id('c2'), pg_temp.id('A'), pg_temp.id('A1'), 'Winter');
insert into app.content_roots (id, organization_id, workspace_id, caption, campaign_id) values
  (pg_temp.id('r1'), pg_temp.id('A'), pg_temp.id('A1'), 'Root one', pg_temp.id('c1')),
  (pg_temp.id('r2'), pg_temp.id('A'), pg_temp.id('A1'), 'Root two', null),
  (pg_temp.id('rB'), pg_temp.id('B'), pg_temp.id('B1'), 'Root B', null);
insert into app.content_root_tags (root_id, tag_id, workspace_id, organization_id) values
  (pg_temp.id('r1'), pg_temp.id('t1'), pg_temp.id('A1'), pg_temp.id('A')),
  (pg_temp.id('r2'), pg_temp.id('t2'), pg_temp.id('A1'), pg_temp.id('A'));
insert into app.content_root_pillars (root_id, pillar_id, workspace_id, organization_id) values
  (pg_temp.id('r1'), pg_temp.id('p1'), pg_temp.id('A1'), pg_temp.id('A'));
-- Editions as the engine leaves them (the content area's triggers are not the subject here).
set local session_replication_role = replica;
insert into app.content_items (id, organization_id, workspace_id, root_id, integration_id, status, sent_at, platform_post_id) values
  (pg_temp.id('e1'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('r1'), pg_temp.id('integ:x'), 'sent', now() - interval '3 days', 'x-1'),
  (pg_temp.id('e2'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('r1'), pg_temp.id('integ:pin'), 'sent', now() - interval '20 days', 'pin-1'),
  (pg_temp.id('e3'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('r2'), pg_temp.id('integ:x'), 'sent', now() - interval '2 days', 'x-2'),
  (pg_temp.id('e4'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('r2'), pg_temp.id('integ:hook'), 'sent', now() - interval '400 days', 'li-1'),
  (pg_temp.id('d1'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('r2'), pg_temp.id('integ:pin'), 'draft', null, null),
  (pg_temp.id('eB'), pg_temp.id('B'), pg_temp.id('B1'), pg_temp.id('rB'), pg_temp.id('integ:B'), 'sent', now() - interval '1 day', 'b-1');
set local session_replication_role = origin;

-- A snapshot of an edition: counters (impressions, reach, likes, comments, shares, saves, clicks, video views).
create function pg_temp.snap(p_item text, p_at timestamptz, p_m bigint[]) returns void
language sql as $$
  insert into app.post_metric_snapshots (organization_id, workspace_id, content_item_id, integration_id, captured_at, source,
    impressions, reach, likes, comments, shares, saves, clicks, video_views)
  select i.organization_id, i.workspace_id, i.id, i.integration_id, p_at, 'sync',
         p_m[1], p_m[2], p_m[3], p_m[4], p_m[5], p_m[6], p_m[7], p_m[8]
  from app.content_items i where i.id = pg_temp.id(p_item)
$$;

-- The scan: each snapshot minus the one before it (per edition, by time),
-- summed per day, then per dimension with the roots' current attributes.
create function pg_temp.scan_post_days() returns table (item uuid, day date, m bigint[])
language sql stable as $$
  select content_item_id, day, array[sum(d1), sum(d2), sum(d3), sum(d4), sum(d5), sum(d6), sum(d7), sum(d8)]::bigint[]
  from (select s.content_item_id, s.day,
          s.impressions - coalesce(lag(s.impressions) over w, 0) d1, s.reach - coalesce(lag(s.reach) over w, 0) d2,
          s.likes - coalesce(lag(s.likes) over w, 0) d3, s.comments - coalesce(lag(s.comments) over w, 0) d4,
          s.shares - coalesce(lag(s.shares) over w, 0) d5, s.saves - coalesce(lag(s.saves) over w, 0) d6,
          s.clicks - coalesce(lag(s.clicks) over w, 0) d7, s.video_views - coalesce(lag(s.video_views) over w, 0) d8
        from app.post_metric_snapshots s
        window w as (partition by s.content_item_id order by s.captured_at, s.id)) x
  group by content_item_id, day
$$;
create function pg_temp.scan_dims() returns table (dimension text, key uuid, integration_id uuid, day date, m bigint[])
language sql stable as $$
  select k.dimension, k.key, i.integration_id, p.day,
         array[sum(p.m[1]), sum(p.m[2]), sum(p.m[3]), sum(p.m[4]), sum(p.m[5]), sum(p.m[6]), sum(p.m[7]), sum(p.m[8])]::bigint[]
  from pg_temp.scan_post_days() p
  join app.content_items i on i.id = p.item
  join app.content_roots r on r.id = i.root_id
  cross join lateral (select 'total', i.integration_id
                      union all select 'tag', t.tag_id from app.content_root_tags t where t.root_id = r.id
                      union all select 'pillar', pl.pillar_id from app.content_root_pillars pl where pl.root_id = r.id
                      union all select 'campaign', r.campaign_id where r.campaign_id is not null) k (dimension, key)
  group by 1, 2, 3, 4
$$;
create function pg_temp.rollup_dims() returns table (dimension text, key uuid, integration_id uuid, day date, m bigint[])
language sql stable as $$
  select dimension, key, integration_id, day, array[impressions, reach, likes, comments, shares, saves, clicks, video_views]
  from app.analytics_daily
$$;
-- Rows that differ between two sets, all-zero rows ignored on both sides.
create function pg_temp.dims_differ() returns bigint
language sql stable as $$
  with z as (select array[0, 0, 0, 0, 0, 0, 0, 0]::bigint[] as zero),
  a as (select * from pg_temp.rollup_dims(), z where m <> z.zero),
  b as (select * from pg_temp.scan_dims(), z where m <> z.zero)
  select count(*) from ((select dimension, key, integration_id, day, m from a except select dimension, key, integration_id, day, m from b)
                        union all (select dimension, key, integration_id, day, m from b except select dimension, key, integration_id, day, m from a)) d
$$;
create function pg_temp.days_differ() returns bigint
language sql stable as $$
  select count(*) from ((select content_item_id, day, array[impressions, reach, likes, comments, shares, saves, clicks, video_views]
                         from app.post_metrics_daily except select * from pg_temp.scan_post_days())
                        union all (select * from pg_temp.scan_post_days() except
                         select content_item_id, day, array[impressions, reach, likes, comments, shares, saves, clicks, video_views]
                         from app.post_metrics_daily)) d
$$;
create function pg_temp.latest_differ() returns bigint
language sql stable as $$
  with l as (select content_item_id, captured_at, impressions, likes, video_views from app.post_metrics_latest),
  s as (select distinct on (content_item_id) content_item_id, captured_at, impressions, likes, video_views
        from app.post_metric_snapshots order by content_item_id, captured_at desc, id desc)
  select count(*) from ((select * from l except select * from s) union all (select * from s except select * from l)) d
$$;

------------------------------------------------------------------------------
-- Days are workspace-local.
------------------------------------------------------------------------------
select pg_temp.snap('e1', '2026-01-02T03:00:00Z', array[100, 80, 10, 1, 1, 0, 5, 0]);
select is((select day from app.post_metric_snapshots where content_item_id = pg_temp.id('e1')), '2026-01-01'::date,
  '03:00 UTC on Jan 2 is Jan 1 in New York');
select is((select array[impressions, likes] from app.post_metrics_daily where content_item_id = pg_temp.id('e1') and day = '2026-01-01'),
  array[100, 10]::bigint[], 'the first snapshot is the first day''s gain');

------------------------------------------------------------------------------
-- Rollups equal the scan: in order, out of order, several in one
-- statement, falling counters, several editions of a root.
------------------------------------------------------------------------------
select pg_temp.snap('e1', '2026-01-02T20:00:00Z', array[150, 100, 12, 2, 1, 1, 6, 0]);
select pg_temp.snap('e1', '2026-01-04T15:00:00Z', array[300, 200, 20, 3, 2, 1, 9, 0]);
-- Late arrival between two days already rolled up.
select pg_temp.snap('e1', '2026-01-03T15:00:00Z', array[200, 150, 11, 2, 1, 1, 7, 0]);
select is((select array[impressions, likes] from app.post_metrics_daily where content_item_id = pg_temp.id('e1') and day = '2026-01-03'),
  array[50, -1]::bigint[], 'a late snapshot: its day gains from the day before (likes fell by one)');
select is((select array[impressions, likes] from app.post_metrics_daily where content_item_id = pg_temp.id('e1') and day = '2026-01-04'),
  array[100, 9]::bigint[], '... and the next day now gains from it');
-- Several in one statement, out of order, for two editions.
insert into app.post_metric_snapshots (organization_id, workspace_id, content_item_id, integration_id, captured_at, source,
  impressions, reach, likes, comments, shares, saves, clicks, video_views)
select i.organization_id, i.workspace_id, i.id, i.integration_id, v.at, 'sync', v.imp, v.imp / 2, v.imp / 10, 1, 0, 0, v.imp / 20, v.imp * 2
from (values ('e2', '2026-01-05T12:00:00Z'::timestamptz, 900), ('e2', '2026-01-02T12:00:00Z', 400), ('e3', '2026-01-03T12:00:00Z', 50),
             ('e2', '2026-01-03T12:00:00Z', 600), ('e3', '2026-01-03T18:00:00Z', 70), ('e2', '2026-01-05T23:00:00Z', 1000)) v (item, at, imp)
join app.content_items i on i.id = pg_temp.id(v.item);
select pg_temp.snap('e4', '2026-01-03T10:00:00Z', array[30, 20, 3, 0, 0, 0, 1, 0]);
select is(pg_temp.days_differ(), 0::bigint, 'post_metrics_daily equals the scan of the snapshots');
select is(pg_temp.dims_differ(), 0::bigint, 'analytics_daily (total, tag, pillar, campaign) equals the scan');
select is(pg_temp.latest_differ(), 0::bigint, 'post_metrics_latest is each edition''s latest snapshot');
select is((select sum(impressions) from app.analytics_daily where dimension = 'total'),
  (select sum(impressions) from app.post_metrics_latest), 'the totals of all days are the latest counters');

------------------------------------------------------------------------------
-- Roots change: a tag added and removed, a pillar removed, a campaign moved.
------------------------------------------------------------------------------
insert into app.content_root_tags (root_id, tag_id, workspace_id, organization_id)
values (pg_temp.id('r1'), pg_temp.id('t2'), pg_temp.id('A1'), pg_temp.id('A'));
select is(pg_temp.dims_differ(), 0::bigint, 'a tag added to a root: its editions'' history moves into the tag');
delete from app.content_root_tags where root_id = pg_temp.id('r1') and tag_id = pg_temp.id('t1');
delete from app.content_root_pillars where root_id = pg_temp.id('r1');
update app.content_roots set campaign_id = pg_temp.id('c2') where id = pg_temp.id('r1');
update app.content_roots set campaign_id = pg_temp.id('c1') where id = pg_temp.id('r2');
select is(pg_temp.dims_differ(), 0::bigint, 'tag and pillar removed, campaigns moved: still the scan');
select is((select sum(impressions) from app.analytics_daily where dimension = 'tag' and key = pg_temp.id('t1')), 0::numeric,
  'the removed tag keeps nothing');
select pg_temp.snap('e3', '2026-01-06T12:00:00Z', array[90, 60, 9, 1, 0, 0, 4, 0]);
select is(pg_temp.dims_differ(), 0::bigint, 'snapshots after the changes follow the new attributes');

------------------------------------------------------------------------------
-- A rebuild from the snapshots gives the same rollups.
------------------------------------------------------------------------------
create temp table before_rebuild as select * from pg_temp.rollup_dims() where m <> array[0, 0, 0, 0, 0, 0, 0, 0]::bigint[];
select is(app.analytics_rebuild(pg_temp.id('A1')), 12::bigint, 'rebuild reads every snapshot of the workspace');
select is((select count(*) from ((select * from before_rebuild except select * from pg_temp.rollup_dims())
                                 union all (select * from pg_temp.rollup_dims() except select * from before_rebuild)) d),
  0::bigint, 'the rebuilt rollup equals the incremental one');
select is(pg_temp.days_differ() + pg_temp.latest_differ(), 0::bigint, '... and so do the per-post rollups');

------------------------------------------------------------------------------
-- Append-only; the request role only through its functions and policies.
------------------------------------------------------------------------------
select is(pg_temp.sqlerr(format($$update app.post_metric_snapshots set likes = 0 where content_item_id = %L$$, pg_temp.id('e1'))),
  'PT409 METRICS_APPEND_ONLY', 'a snapshot never changes');
select is(pg_temp.sqlerr(format($$delete from app.post_metric_snapshots where content_item_id = %L$$, pg_temp.id('e1'))),
  'PT409 METRICS_APPEND_ONLY', 'nor goes away');

select pg_temp.act_as('A.viewer', 'A1');
select is((api.analytics_summary('2026-01-01', '2026-01-07', null) #>> '{metrics,impressions,value}')::bigint,
  (select sum(s.m[1])::bigint from pg_temp.scan_post_days() s where s.day between '2026-01-01' and '2026-01-07'),
  'the summary''s impressions are the scan''s for the period');
select is(api.analytics_summary('2026-01-01', '2026-01-07', null) #>> '{previousPeriod,from}', '2025-12-25',
  'the previous period has the same length, just before');
select is(jsonb_array_length(api.analytics_aggregates('2026-01-01', '2026-01-07', 'day', 'tag', null) -> 'series'), 1,
  'aggregates by tag: one series per tag with gains (t2; t1 lost its only root)');
select is(pg_temp.sqlerr($$select api.analytics_summary('2026-01-07', '2026-01-01', null)$$), 'PT400 VALIDATION_FAILED', 'from after to: 400');
select is(pg_temp.sqlerr($$select api.analytics_summary('2025-01-01', '2026-01-07', null)$$), 'PT400 VALIDATION_FAILED', 'more than 366 days: 400');
select is(pg_temp.sqlerr(format($$select api.analytics_summary(null, null, array[%L]::uuid[])$$, pg_temp.id('integ:B'))),
  'PT404 INTEGRATION_NOT_FOUND', 'an integration of another organization: 404');
select is(pg_temp.sqlerr(format($$select api.ingest_metrics(%L, '{"posts":[]}')$$, pg_temp.id('integ:hook'))),
  'PT403 ROLE_REQUIRED', 'a viewer cannot ingest');
select is(pg_temp.sqlerr($$select api.create_analytics_report(null, null, null)$$), 'PT401 PLAN_REQUIRED',
  'a basic organization gets no PDF report');

select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr(format($$select api.ingest_metrics(%L, '{"posts":[]}')$$, pg_temp.id('integ:x'))),
  'PT409 METRICS_INGESTION_NOT_SUPPORTED', 'a sandbox integration takes no pushed metrics');
select is(api.ingest_metrics(pg_temp.id('integ:hook'), jsonb_build_object('posts', jsonb_build_array(
    jsonb_build_object('platformPostId', 'li-1', 'capturedAt', '2026-01-04T10:00:00Z', 'impressions', 45, 'likes', 5),
    jsonb_build_object('contentId', pg_temp.id('e4'), 'capturedAt', '2026-01-03T10:00:00Z', 'impressions', 30)),
  'account', jsonb_build_object('capturedAt', '2026-01-04T10:00:00Z', 'followers', 1200,
    'demographics', jsonb_build_object('age', jsonb_build_object('18-24', 30, '25-34', 70))))) - 'integrationId',
  '{"postsReceived": 2, "postsRecorded": 1, "postsAlreadyRecorded": 1, "accountRecorded": true}'::jsonb,
  'an editor pushes a webhook integration''s metrics; a snapshot already recorded is skipped');
select is(pg_temp.sqlerr(format($$select api.ingest_metrics(%L, '{"posts":[{"contentId":"%s","capturedAt":"2026-01-04T10:00:00Z"}]}')$$,
    pg_temp.id('integ:hook'), pg_temp.id('d1'))),
  'PT400 VALIDATION_FAILED', 'an edition of another integration (or not sent): 400');
select is((api.analytics_demographics(null, null) #>> '{combined,age,0,key}'), '25-34', 'demographics: the largest age band first');

select pg_temp.act_as('B.owner', 'B1');
select is((select count(*) from app.post_metric_snapshots), 0::bigint, 'another organization sees no snapshot of A');
select is((select count(*) from app.analytics_daily), 0::bigint, '... and no rollup');
select pg_temp.act_as('A.stranger', 'A1');
select is(pg_temp.sqlerr($$select api.analytics_summary(null, null, null)$$), 'PT403 ROLE_REQUIRED', 'no role in the workspace: 403');

------------------------------------------------------------------------------
-- Reports (standard plan) and their job; sync bookkeeping.
------------------------------------------------------------------------------
select pg_temp.act_as_owner();
update app.organizations set plan = 'standard' where id = pg_temp.id('A');
select pg_temp.act_as('A.viewer', 'A1');
select set_config('test.report', api.create_analytics_report('2026-01-01', '2026-01-07', null) ->> 'id', true);
select pg_temp.act_as_owner();
select is((select status || ' ' || (select count(*) from pgboss.job j where j.id = a.job_id and j.name = 'analytics.report')
           from app.analytics_reports a where a.id = current_setting('test.report')::uuid),
  'queued 1', 'a standard organization''s viewer queues a report; its job is written with it');

select is((select array_agg(x ->> 'contentId' order by x ->> 'contentId') from jsonb_array_elements(app.analytics_due_posts(100)) x),
  (select array_agg(id::text order by id::text) from app.content_items where id in (pg_temp.id('e1'), pg_temp.id('e2'), pg_temp.id('e3'), pg_temp.id('eB'))),
  'due: sent editions of active integrations, none older than a year');
select app.analytics_record_sync(jsonb_build_object('posts', jsonb_build_array(
  jsonb_build_object('contentId', pg_temp.id('e1'), 'outcome', 'ok', 'metrics', jsonb_build_object('impressions', 500)),
  jsonb_build_object('contentId', pg_temp.id('e3'), 'outcome', 'rate_limited', 'error', 'slow down'))));
select is((select count(*) from jsonb_array_elements(app.analytics_due_posts(100)) x
           where x ->> 'contentId' in (pg_temp.id('e1')::text, pg_temp.id('e3')::text)), 0::bigint,
  'a synced (or refused) edition is not due again before its interval');
select pg_temp.act_as('A.viewer', 'A1');
select is((select x #>> '{sync,rateLimitHits}' from jsonb_array_elements(api.analytics_health()) x
           where x ->> 'integrationId' = pg_temp.id('integ:x')::text), '1', 'health counts the platform''s rate-limit refusals');

select * from finish();
rollback;
