--! Previous: sha1:b97f2439d49172b76486bf5bd0ca00add631a949
--! Hash: sha1:e0581ffdd6413fd66a2c6c0d224aff84e35ea834
--! Message: joins pair the workspace

--! split: 01-current.sql
-- Joins of two workspace tables pair workspace_id (docs/citus.md, "Functions"). Every foreign
-- key between workspace tables pairs workspace_id (committed/000043), so two joined rows are of
-- one workspace; but Citus plans a join of two distributed tables, or a subquery correlated
-- with one, only when the query says so:
--   complex joins are only supported when all distributed tables are co-located and joined on
--   their distribution columns
-- (app.content_list_items_json: `join app.content_roots r on r.id = i.root_id`). Each join of a
-- workspace table to another one, and each subquery of a workspace table correlated with
-- another, now also says `and r.workspace_id = i.workspace_id`. That changes no answer (the keys
-- already pair the rows) and lets Citus run the join on one shard. 130 conditions in the 59
-- functions below; nothing else in them changes. tests/db/10-distributable.test.sql fails on a
-- join written the old way.
CREATE OR REPLACE FUNCTION app.analytics_add_dimensions(p_item uuid, p_day date, p_d bigint[])
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v record;
begin
  if p_d = array[0, 0, 0, 0, 0, 0, 0, 0]::bigint[] then
    return;
  end if;
  select i.organization_id, i.workspace_id, i.integration_id, i.root_id, r.campaign_id into v
  from app.content_items i join app.content_roots r on r.id = i.root_id and r.workspace_id = i.workspace_id where i.id = p_item;
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
$function$;

CREATE OR REPLACE FUNCTION app.analytics_due_accounts(p_limit integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(jsonb_agg(x), '[]'::jsonb) from (
      select jsonb_build_object('id', g.id, 'connector', g.connector, 'platform', g.platform, 'name', g.name,
               'username', g.username, 'settings', g.settings, 'capabilities', p.capabilities) as x
      from app.integrations g
      join app.platforms p on p.code = g.platform
      left join app.integration_sync_state s on s.integration_id = g.id and s.workspace_id = g.workspace_id
      where g.deleted_at is null and g.status = 'active'
        and (s.account_attempt_at is null
             or s.account_attempt_at <= now() - make_interval(mins => app.setting_int('analytics_account_sync_minutes')))
      order by coalesce(s.account_attempt_at, '-infinity'::timestamptz), g.id
      limit greatest(1, least(p_limit, 1000))
    ) d
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.analytics_due_posts(p_limit integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(jsonb_agg(d.x order by d.ord_key), '[]'::jsonb) from (
      select jsonb_build_object('contentId', i.id, 'platformPostId', i.platform_post_id, 'sentAt', i.sent_at,
               'integration', jsonb_build_object('id', g.id, 'connector', g.connector, 'platform', g.platform, 'name', g.name,
                 'username', g.username, 'settings', g.settings, 'capabilities', p.capabilities)) as x,
             coalesce(s.last_attempt_at, '-infinity'::timestamptz) as ord_key
      from app.content_items i
      join app.integrations g on g.id = i.integration_id and g.deleted_at is null and g.status = 'active' and g.workspace_id = i.workspace_id
      join app.platforms p on p.code = g.platform
      left join app.analytics_post_sync s on s.content_item_id = i.id and s.workspace_id = i.workspace_id
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
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.analytics_move_root(p_root uuid, p_dimension text, p_key uuid, p_sign integer)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
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
  from app.post_metrics_daily d join app.content_items i on i.id = d.content_item_id and i.workspace_id = d.workspace_id
  where i.root_id = p_root
  group by d.organization_id, d.workspace_id, d.integration_id, d.day
  on conflict (workspace_id, dimension, key, integration_id, day) do update set
    impressions = a.impressions + excluded.impressions, reach = a.reach + excluded.reach,
    likes = a.likes + excluded.likes, comments = a.comments + excluded.comments,
    shares = a.shares + excluded.shares, saves = a.saves + excluded.saves,
    clicks = a.clicks + excluded.clicks, video_views = a.video_views + excluded.video_views;
end
$function$;

CREATE OR REPLACE FUNCTION app.analytics_posts(p_workspace_id uuid, p_filter jsonb, p_sort_by text, p_order text, p_limit integer, p_offset bigint)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
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
    left join app.post_metrics_latest l on l.content_item_id = i.id and l.workspace_id = i.workspace_id
    where i.workspace_id = p_workspace_id and i.status = 'sent'
      and i.sent_at >= (v_period[1]::timestamp at time zone v_tz) and i.sent_at < ((v_period[2] + 1)::timestamp at time zone v_tz)
      and (v_ids is null or i.integration_id = any (v_ids))
      and (p_filter ->> 'platform' is null
           or exists (select 1 from app.integrations g where g.id = i.integration_id and g.platform = p_filter ->> 'platform' and g.workspace_id = i.workspace_id))
      and (p_filter ->> 'tagId' is null
           or exists (select 1 from app.content_root_tags t where t.root_id = i.root_id and t.tag_id = (p_filter ->> 'tagId')::uuid and t.workspace_id = i.workspace_id))
      and (p_filter ->> 'pillarId' is null
           or exists (select 1 from app.content_root_pillars p where p.root_id = i.root_id and p.pillar_id = (p_filter ->> 'pillarId')::uuid and p.workspace_id = i.workspace_id))
      and (p_filter ->> 'campaignId' is null
           or exists (select 1 from app.content_roots r where r.id = i.root_id and r.campaign_id = (p_filter ->> 'campaignId')::uuid and r.workspace_id = i.workspace_id))
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
$function$;

CREATE OR REPLACE FUNCTION app.analytics_rebuild(p_workspace_id uuid)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_inserted bigint; -- rows of the INSERT ... SELECTs below (see this migration)
  v_count bigint;
begin
  perform pg_advisory_xact_lock(hashtextextended('pressroom.analytics-rebuild:' || p_workspace_id::text, 0));
  delete from app.analytics_daily where workspace_id = p_workspace_id;
  delete from app.post_metrics_daily where workspace_id = p_workspace_id;
  delete from app.post_metrics_latest where workspace_id = p_workspace_id;
  select count(*) into v_count from app.post_metric_snapshots where workspace_id = p_workspace_id;
  with inserted as (
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
    group by organization_id, workspace_id, content_item_id, integration_id, day
    returning 1)
  select count(*) into v_inserted from inserted;
  with inserted as (
    insert into app.post_metrics_latest (content_item_id, organization_id, workspace_id, integration_id, captured_at,
      impressions, reach, likes, comments, shares, saves, clicks, video_views)
    select distinct on (s.content_item_id) s.content_item_id, s.organization_id, s.workspace_id, s.integration_id, s.captured_at,
           s.impressions, s.reach, s.likes, s.comments, s.shares, s.saves, s.clicks, s.video_views
    from app.post_metric_snapshots s where s.workspace_id = p_workspace_id
    order by s.content_item_id, s.captured_at desc, s.id desc
    returning 1)
  select count(*) into v_inserted from inserted;
  with inserted as (
    insert into app.analytics_daily (organization_id, workspace_id, integration_id, dimension, key, day,
      impressions, reach, likes, comments, shares, saves, clicks, video_views)
    select d.organization_id, d.workspace_id, d.integration_id, k.dimension, k.key, d.day,
           sum(d.impressions), sum(d.reach), sum(d.likes), sum(d.comments), sum(d.shares), sum(d.saves), sum(d.clicks), sum(d.video_views)
    from app.post_metrics_daily d
    join app.content_items i on i.id = d.content_item_id and i.workspace_id = d.workspace_id
    join app.content_roots r on r.id = i.root_id and r.workspace_id = i.workspace_id
    cross join lateral (
      select 'total'::text, d.integration_id
      union all select 'tag', t.tag_id from app.content_root_tags t where t.root_id = r.id and t.workspace_id = r.workspace_id
      union all select 'pillar', p.pillar_id from app.content_root_pillars p where p.root_id = r.id and p.workspace_id = r.workspace_id
      union all select 'campaign', r.campaign_id where r.campaign_id is not null) k (dimension, key)
    where d.workspace_id = p_workspace_id
    group by d.organization_id, d.workspace_id, d.integration_id, k.dimension, k.key, d.day
    returning 1)
  select count(*) into v_inserted from inserted;
  return v_count;
end
$function$;

CREATE OR REPLACE FUNCTION app.analytics_series(p_workspace_id uuid, p_from date, p_to date, p_interval text, p_group_by text, p_ids uuid[])
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
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
    join app.integrations g on g.id = a.integration_id and g.workspace_id = a.workspace_id
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
$function$;

CREATE OR REPLACE FUNCTION app.article_for(p_id uuid, p_lock boolean)
 RETURNS app.articles
 LANGUAGE plpgsql
AS $function$
declare
  v app.articles;
begin
  if p_lock then
    perform 1 from app.content_items i
    where i.id = p_id and i.workspace_id = app.current_workspace_id() and i.deleted_at is null and i.kind = 'article'
    for update;
    select a.* into v from app.articles a
    join app.content_items i on i.id = a.content_item_id and i.workspace_id = a.workspace_id
    where a.content_item_id = p_id and a.workspace_id = app.current_workspace_id() and i.deleted_at is null
    for update of a;
  else
    select a.* into v from app.articles a
    join app.content_items i on i.id = a.content_item_id and i.workspace_id = a.workspace_id
    where a.content_item_id = p_id and a.workspace_id = app.current_workspace_id() and i.deleted_at is null;
  end if;
  if v.content_item_id is null then
    perform app.raise_not_found('article', p_id);
  end if;
  return v;
end
$function$;

CREATE OR REPLACE FUNCTION app.article_integration_ref(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_ws uuid := app.current_workspace_id();
  v jsonb;
begin
  if v_ws is null or app.role_rank(app.current_workspace_role()) < 2
     or not app.current_workspace_accessible() then
    perform app.raise(403, 'ROLE_REQUIRED', 'This operation needs the editor role in this workspace.',
      jsonb_build_object('requiredRole', 'editor', 'role', app.current_workspace_role()));
  end if;
  select jsonb_build_object(
    'id', g.id, 'connector', g.connector, 'platform', g.platform, 'name', g.name, 'username', g.username,
    'status', g.status, 'deleted', g.deleted_at is not null,
    'settings', g.settings, 'capabilities', app.platform_capabilities_json(g.platform),
    'webhookUrl', g.webhook_url, 'webhookSecret', g.webhook_secret)
  into v
  from app.content_items i join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
  where i.id = p_id and i.workspace_id = v_ws and i.kind = 'article' and i.deleted_at is null;
  if v is null then
    perform app.raise_not_found('article', p_id);
  end if;
  return v;
end
$function$;

CREATE OR REPLACE FUNCTION app.article_json(p_id uuid, p_detail boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object(
      'contentId', i.id,
      'rootId', i.root_id,
      'title', a.title,
      'status', i.status,
      'workflowStatus', app.content_workflow_status(i.status, i.scheduled_at),
      'editable', i.status = 'draft',
      'destination', jsonb_build_object(
        'integrationId', g.id, 'platform', g.platform, 'username', g.username, 'name', g.name,
        'canPublishArticles', coalesce((p.capabilities ->> 'canPublishArticles')::boolean, false)),
      'cover', case when a.cover_media_id is null then null else app.article_media_json(a.cover_media_id) end,
      'scheduledAt', i.scheduled_at,
      'sentAt', i.sent_at,
      'permalink', i.permalink,
      'platformDraft', case when a.platform_draft_article_id is null then null
        else jsonb_build_object('articleId', a.platform_draft_article_id, 'sentAt', a.platform_draft_sent_at) end,
      'updatedAt', greatest(a.updated_at, i.updated_at))
    || case when p_detail then jsonb_build_object(
      'bodyHtml', a.body_html,
      'bodyVersion', a.body_version::text,
      'images', coalesce((select jsonb_agg(app.article_media_json(x.media_id) order by x.position)
                          from app.article_images x where x.content_item_id = a.content_item_id and x.workspace_id = a.workspace_id), '[]'),
      'characterCount', a.character_count,
      'error', case when i.status = 'failed' then i.error end)
    else '{}'::jsonb end
    from app.articles a
    join app.content_items i on i.id = a.content_item_id and i.workspace_id = a.workspace_id
    join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
    join app.platforms p on p.code = g.platform
    where a.content_item_id = p_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.content_detail_json(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select app.content_list_item_json(row(i.*)::app.content_items, row(r.*)::app.content_roots, g.platform, cardinality(app.content_item_media_ids(i.id, i.root_id, i.own_media)),
             app.content_recurring_metadata(i.root_id), true) || jsonb_build_object(
      'integration', jsonb_build_object('id', g.id, 'platform', g.platform, 'connector', g.connector, 'name', g.name,
                                        'username', g.username, 'status', case when g.deleted_at is not null then 'deleted' else g.status end),
      'captionOverride', i.caption,
      'rootCaption', r.caption,
      'ownMedia', i.own_media,
      'mediaIds', to_jsonb(app.content_item_media_ids(i.id, i.root_id, i.own_media)),
      'media', app.content_media_json(app.content_item_media_ids(i.id, i.root_id, i.own_media)),
      'thread', (select coalesce(jsonb_agg(jsonb_build_object('caption', coalesce(e ->> 'caption', ''),
                   'mediaIds', coalesce(e -> 'mediaIds', '[]'),
                   'media', app.content_media_json(app.jsonb_uuids(coalesce(e -> 'mediaIds', '[]')))) order by n), '[]')
                 from jsonb_array_elements(i.thread) with ordinality t (e, n)),
      'settings', app.sanitize_settings(g.platform, i.settings),
      'metadata', app.content_root_metadata_json(r.id),
      'notes', r.notes #>> '{}',
      'platformPostId', i.platform_post_id)
    from app.content_items i
    join app.content_roots r on r.id = i.root_id and r.workspace_id = i.workspace_id
    join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
    where i.id = p_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.content_item_problems(p_item_id uuid, p_prefix text DEFAULT ''::text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v record;
  v_platform app.platforms;
  v_out jsonb := '[]';
  v_caption text;
  v_media uuid[];
  v_msg jsonb;
  v_i int := 0;
begin
  select i.id, i.workspace_id, i.root_id, i.kind, i.caption, i.thread, i.settings, i.own_media, i.integration_id,
         r.caption as root_caption, g.platform, g.status as integration_status, g.deleted_at as integration_deleted_at
  into v
  from app.content_items i
  join app.content_roots r on r.id = i.root_id and r.workspace_id = i.workspace_id
  join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
  where i.id = p_item_id;
  if v.id is null then
    return '[]';
  end if;
  v_platform := app.integration_platform_rules(v.platform, v.integration_id);
  if v.integration_deleted_at is not null or v.integration_status <> 'active' then
    v_out := v_out || app.field_problem(p_prefix || 'integrationId', 'integration_unavailable',
      'The channel is disconnected or deleted; reconnect it or choose another channel.');
  end if;
  -- Articles carry a body of their own; their rules belong to the articles
  -- engine. Only the channel is checked here.
  if v.kind = 'article' then
    return v_out;
  end if;
  v_caption := coalesce(v.caption, v.root_caption, '');
  select app.content_item_media_ids(v.id, v.root_id, v.own_media) into v_media;
  if length(v_caption) > v_platform.caption_max_length then
    v_out := v_out || app.field_problem(p_prefix || 'caption', 'caption_too_long',
      format('%s captions have at most %s characters; this one has %s.', v_platform.name,
             v_platform.caption_max_length, length(v_caption)));
  end if;
  if btrim(v_caption) = '' and cardinality(v_media) = 0 then
    v_out := v_out || app.field_problem(p_prefix || 'caption', 'content_empty', 'A post needs a caption or media.');
  end if;
  v_out := v_out || app.media_rule_problems(v_platform, v.workspace_id, v_media, p_prefix || 'mediaIds');
  if jsonb_array_length(v.thread) > 0 and not coalesce((v_platform.capabilities ->> 'threads')::boolean, false) then
    v_out := v_out || app.field_problem(p_prefix || 'thread', 'threads_not_supported',
      format('%s does not publish threads.', v_platform.name));
  end if;
  for v_msg in select e from jsonb_array_elements(v.thread) e loop
    if length(coalesce(v_msg ->> 'caption', '')) > v_platform.caption_max_length then
      v_out := v_out || app.field_problem(p_prefix || 'thread.' || v_i || '.caption', 'caption_too_long',
        format('%s captions have at most %s characters.', v_platform.name, v_platform.caption_max_length));
    end if;
    if btrim(coalesce(v_msg ->> 'caption', '')) = '' and coalesce(jsonb_array_length(v_msg -> 'mediaIds'), 0) = 0 then
      v_out := v_out || app.field_problem(p_prefix || 'thread.' || v_i, 'content_empty', 'A thread message needs a caption or media.');
    end if;
    if coalesce(jsonb_array_length(v_msg -> 'mediaIds'), 0) > 0 then
      -- Thread messages follow the same media rules, except that media is optional.
      v_out := v_out || (
        select coalesce(jsonb_agg(p), '[]') from jsonb_array_elements(
          app.media_rule_problems(v_platform, v.workspace_id, app.jsonb_uuids(v_msg -> 'mediaIds'),
                                  p_prefix || 'thread.' || v_i || '.mediaIds')) p
        where p ->> 'code' not in ('media_required', 'too_few_media'));
    end if;
    v_i := v_i + 1;
  end loop;
  v_out := v_out || app.settings_problems(v.platform, v.settings, p_prefix, true);
  return v_out;
end
$function$;

-- (In two steps on Citus's account: the rows first, then the JSON. Its per-row helpers read tables
-- (app.publishing_json, the review lifecycle, the recurring metadata); inside the query on the
-- editions they ran on the shards, where Citus refuses a read. Built from values, they run on the
-- coordinator.)
CREATE OR REPLACE FUNCTION app.content_list_items_json(p_ids uuid[], p_review boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  v_items app.content_items[] := '{}';
  v_roots app.content_roots[] := '{}';
  v_platforms text[] := '{}';
  v_media int[] := '{}';
  v_recurring jsonb;
  v_row record;
begin
  for v_row in
    select row(i.*)::app.content_items as item, row(r.*)::app.content_roots as root, g.platform,
           case when i.own_media then (select count(*) from app.content_item_media m where m.content_item_id = i.id and m.workspace_id = i.workspace_id)
                else (select count(*) from app.content_root_media m where m.root_id = i.root_id and m.workspace_id = i.workspace_id) end::int as media_count
    from unnest(p_ids) with ordinality x (id, n)
    join app.content_items i on i.id = x.id
    join app.content_roots r on r.id = i.root_id and r.workspace_id = i.workspace_id
    join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
    order by x.n
  loop
    v_items := v_items || v_row.item;
    v_roots := v_roots || v_row.root;
    v_platforms := v_platforms || v_row.platform;
    v_media := v_media || v_row.media_count;
  end loop;
  select jsonb_object_agg(b.root_id, b.metadata) into v_recurring
  from app.content_recurring_metadata_batch(array(select (e).root_id from unnest(v_items) e)) b;
  return (
    select coalesce(jsonb_agg(
      case when (v_items[k]).deleted_at is not null
        then jsonb_build_object('id', (v_items[k]).id, 'rootId', (v_items[k]).root_id, 'deleted', true, 'deletedAt', (v_items[k]).deleted_at)
        else app.content_list_item_json(v_items[k], v_roots[k], v_platforms[k], v_media[k],
               v_recurring -> ((v_items[k]).root_id::text), p_review)
      end order by k), '[]')
    from generate_subscripts(v_items, 1) k);
end
$function$;

-- (PL/pgSQL, with the occurrences read first and the next occurrence read for each: as SQL,
-- Citus could not plan it when PostgreSQL did not inline it, "could not create distributed
-- plan", and the subquery correlated with the CTE would not distribute. The rows are read into
-- a value before the loop, since a query inside a loop over an open query on Citus tables
-- fails: "the backend has already been assigned a transaction id".)
CREATE OR REPLACE FUNCTION app.content_recurring_metadata_batch(p_root_ids uuid[])
 RETURNS TABLE(root_id uuid, metadata jsonb)
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
declare
  v_rows jsonb;
  occ record;
  v_effective uuid;
begin
  select coalesce(jsonb_agg(jsonb_build_object('id', o.id, 'workspace_id', o.workspace_id, 'series_id', o.series_id,
           'occurrence_index', o.occurrence_index, 'starts_at', o.starts_at, 'root_id', o.root_id, 'status', o.status,
           'series_version', s.version, 'series_status', s.status,
           'published', exists (select 1 from app.content_items i where i.root_id = o.root_id and i.status = 'sent' and i.deleted_at is null and i.workspace_id = o.workspace_id))), '[]')
    into v_rows
  from app.recurring_occurrences o
  join app.recurring_series s on s.id = o.series_id and s.workspace_id = o.workspace_id
  where o.root_id = any (p_root_ids);
  for occ in
    select * from jsonb_to_recordset(v_rows) as x (id uuid, workspace_id uuid, series_id uuid, occurrence_index integer,
      starts_at timestamptz, root_id uuid, status text, series_version integer, series_status text, published boolean)
  loop
    if occ.status = 'materialized' and not occ.published then
      v_effective := occ.id;
    else
      select n.id into v_effective from app.recurring_occurrences n
      where n.workspace_id = occ.workspace_id and n.series_id = occ.series_id
        and n.occurrence_index > occ.occurrence_index and n.status = 'materialized'
        and not exists (select 1 from app.content_items i where i.root_id = n.root_id and i.status = 'sent' and i.deleted_at is null and i.workspace_id = n.workspace_id)
      order by n.occurrence_index limit 1;
    end if;
    root_id := occ.root_id;
    metadata := jsonb_build_object(
      'seriesId', occ.series_id,
      'occurrenceId', occ.id,
      'seriesVersion', occ.series_version,
      'effectiveOccurrenceId', v_effective,
      'startsAt', occ.starts_at,
      'occurrenceStatus', case when occ.status = 'materialized' and occ.published then 'published' else occ.status end,
      'seriesStatus', occ.series_status);
    return next;
  end loop;
end
$function$;

CREATE OR REPLACE FUNCTION app.content_resolution(p_content uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object('contentId', i.id, 'rootId', i.root_id, 'integrationId', i.integration_id,
      'platform', g.platform, 'contentVersion', i.version, 'status', i.status,
      'workflow', case when w.id is not null then jsonb_build_object('id', w.id, 'name', w.name) end,
      'reviewRequired', app.review_policy(i.workspace_id) = 'required',
      'approved', app.content_review_approved(i.id))
    from app.content_items i
    join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
    join app.content_roots r on r.id = i.root_id and r.workspace_id = i.workspace_id
    left join lateral app.route_channel(i.integration_id, g.platform,
      array(select t.tag_id from app.content_root_tags t where t.root_id = r.id and t.workspace_id = r.workspace_id), r.campaign_id) w on true
    where i.id = p_content
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.content_review_approved(p_content uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select exists (select 1 from app.review_items ri join app.content_items i on i.id = ri.content_id and i.workspace_id = ri.workspace_id
                   where ri.content_id = p_content and ri.state = 'approved' and ri.approved_version = i.version)
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.content_review_lifecycle_of(i app.content_items)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    with it as (
      select ri.*, exists (select 1 from app.review_links l where l.review_id = ri.review_id and l.workspace_id = ri.workspace_id) as has_clients
      from app.review_items ri where ri.content_id = i.id and ri.state <> 'removed'
      order by ri.created_at desc, ri.id desc limit 1
    ), x as (
      select it.*, case
          when i.status = 'pending_approval' then 'pending'
          when i.status = 'rejected' then 'changes_requested'
          when it.state = 'approved' and it.approved_version = i.version then 'approved'
          else 'not_requested' end as lc_state,
        app.review_policy(i.workspace_id) = 'required' as required
      from (select 1) one left join it on true
    ), y as (
      select x.*, case
          when lc_state = 'pending' then 'review_pending'
          when lc_state = 'changes_requested' then 'changes_requested'
          when lc_state <> 'approved' and required and i.status = 'draft' then 'review_required'
          else 'none' end as blocker
      from x
    )
    select jsonb_build_object(
      'phase', case lc_state when 'pending' then 'review' when 'not_requested' then 'none' else 'decided' end,
      'state', lc_state,
      'blocksPublishing', blocker <> 'none',
      'actor', case when lc_state <> 'pending' or cardinality(coalesce(waiting_on, '{}')) = 0 then 'none'
                    when not exists (select 1 from unnest(waiting_on) k where k like 'client:%') then 'team'
                    when not exists (select 1 from unnest(waiting_on) k where k like 'user:%') then 'client'
                    else 'mixed' end,
      'nextAction', case blocker when 'review_pending' then 'decide' when 'changes_requested' then 'edit'
                      when 'review_required' then 'submit'
                      else case when lc_state = 'approved' and i.status = 'draft' then 'schedule' else 'none' end end,
      'blocker', blocker,
      'clientReview', case when has_clients then jsonb_build_object('batchId', review_id, 'itemId', id) end)
    from y
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.content_snapshot(p_item_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object(
      'caption', i.caption,
      'effectiveCaption', coalesce(i.caption, r.caption),
      'thread', i.thread,
      'settings', i.settings,
      'ownMedia', i.own_media,
      'mediaIds', to_jsonb(app.content_item_own_media_ids(i.id)),
      'effectiveMediaIds', to_jsonb(app.content_item_media_ids(i.id, i.root_id, i.own_media)))
    from app.content_items i join app.content_roots r on r.id = i.root_id and r.workspace_id = i.workspace_id
    where i.id = p_item_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.credentials_store(p_integration uuid, p_credential jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
begin
  perform app.credentials_put(p_integration, p_credential);
  return (select app.credentials_row_json(row(i.*)::app.integrations, row(c.*)::app.integration_credentials) - 'ciphertext' from app.integrations i
          join app.integration_credentials c on c.integration_id = i.id and c.workspace_id = i.workspace_id where i.id = p_integration);
end
$function$;

CREATE OR REPLACE FUNCTION app.grid_edition_key(p_item app.content_items, p_exclude uuid)
 RETURNS text
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  v_prev text;
  v_next text;
begin
  if p_item.status = 'scheduled' then
    select t.position_key into v_prev
    from app.grid_tiles t join app.content_items i on i.id = t.content_item_id and i.workspace_id = t.workspace_id
    where t.integration_id = p_item.integration_id and t.position_key is not null and t.id is distinct from p_exclude
      and i.status = 'scheduled' and i.deleted_at is null and i.id <> p_item.id and i.scheduled_at <= p_item.scheduled_at
    order by i.scheduled_at desc, t.position_key desc limit 1;
    if v_prev is null then
      select t.position_key into v_next
      from app.grid_tiles t join app.content_items i on i.id = t.content_item_id and i.workspace_id = t.workspace_id
      where t.integration_id = p_item.integration_id and t.position_key is not null and t.id is distinct from p_exclude
        and i.status = 'scheduled' and i.deleted_at is null and i.id <> p_item.id
      order by t.position_key limit 1;
      if v_next is null then
        select min(position_key) into v_next from app.grid_tiles
        where integration_id = p_item.integration_id and position_key is not null and id is distinct from p_exclude;
      end if;
      select max(position_key) into v_prev from app.grid_tiles
      where integration_id = p_item.integration_id and position_key < v_next and id is distinct from p_exclude;
      return app.grid_key_between(v_prev, v_next);
    end if;
  else
    select max(t.position_key) into v_prev from app.grid_tiles t
    where t.integration_id = p_item.integration_id and t.content_item_id is not null and t.id is distinct from p_exclude;
  end if;
  select min(position_key) into v_next from app.grid_tiles
  where integration_id = p_item.integration_id and position_key > coalesce(v_prev, '') and id is distinct from p_exclude;
  return app.grid_key_between(v_prev, v_next);
end
$function$;

CREATE OR REPLACE FUNCTION app.grid_in_time_order(p_tile_id uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select not exists (
      select 1
      from app.grid_tiles me
      join app.content_items mi on mi.id = me.content_item_id and mi.workspace_id = me.workspace_id
      join app.grid_tiles t on t.integration_id = me.integration_id and t.id <> me.id and t.position_key is not null and t.workspace_id = me.workspace_id
      join app.content_items i on i.id = t.content_item_id and i.status = 'scheduled' and i.deleted_at is null and i.workspace_id = t.workspace_id
      where me.id = p_tile_id
        and ((t.position_key < me.position_key and i.scheduled_at > mi.scheduled_at)
          or (t.position_key > me.position_key and i.scheduled_at < mi.scheduled_at)))
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.grid_neighbours_in_time_order(p_tile_id uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE
 SET enable_seqscan TO 'off'
AS $function$
declare
  me record;
  v_item uuid;
  v_any boolean;
  v_before timestamptz;
  v_after timestamptz;
begin
  select t.integration_id, t.position_key, i.scheduled_at into me
  from app.grid_tiles t join app.content_items i on i.id = t.content_item_id and i.workspace_id = t.workspace_id where t.id = p_tile_id;
  if me.position_key is null or me.scheduled_at is null then
    return true;
  end if;
  -- The tile next to this one each way (one probe of the grid's key index); when it is not a
  -- scheduled edition's, walk on to the first one that is (a loop: one statement joining the
  -- editions was planned as a scan of every scheduled edition).
  select t.content_item_id into v_item from app.grid_tiles t
  where t.integration_id = me.integration_id and t.position_key < me.position_key
  order by t.position_key desc limit 1;
  v_any := found;
  select i.scheduled_at into v_before from app.content_items i where i.id = v_item and i.status = 'scheduled' and i.deleted_at is null;
  if v_any and v_before is null then
    for v_item in select t.content_item_id from app.grid_tiles t
                  where t.integration_id = me.integration_id and t.position_key < me.position_key and t.content_item_id is not null
                  order by t.position_key desc loop
      select i.scheduled_at into v_before from app.content_items i where i.id = v_item and i.status = 'scheduled' and i.deleted_at is null;
      exit when v_before is not null;
    end loop;
  end if;
  select t.content_item_id into v_item from app.grid_tiles t
  where t.integration_id = me.integration_id and t.position_key > me.position_key
  order by t.position_key limit 1;
  v_any := found;
  select i.scheduled_at into v_after from app.content_items i where i.id = v_item and i.status = 'scheduled' and i.deleted_at is null;
  if v_any and v_after is null then
    for v_item in select t.content_item_id from app.grid_tiles t
                  where t.integration_id = me.integration_id and t.position_key > me.position_key and t.content_item_id is not null
                  order by t.position_key loop
      select i.scheduled_at into v_after from app.content_items i where i.id = v_item and i.status = 'scheduled' and i.deleted_at is null;
      exit when v_after is not null;
    end loop;
  end if;
  return (v_before is null or v_before <= me.scheduled_at) and (v_after is null or v_after >= me.scheduled_at);
end
$function$;

CREATE OR REPLACE FUNCTION app.grid_ordered(p_integration_id uuid)
 RETURNS TABLE(tile_id uuid, pos integer, section integer, sent_at timestamp with time zone, position_key text)
 LANGUAGE sql
 STABLE
AS $function$
  select t.id, (row_number() over w - 1)::int, case when t.position_key is null then 0 else 1 end, i.sent_at, t.position_key
  from app.grid_tiles t left join app.content_items i on i.id = t.content_item_id and i.workspace_id = t.workspace_id
  where t.integration_id = p_integration_id
  window w as (order by t.position_key is not null, i.sent_at desc nulls last, t.position_key, t.id)
$function$;

CREATE OR REPLACE FUNCTION app.grid_place_editions(p_ids uuid[])
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
 SET enable_seqscan TO 'off'
AS $function$
declare
  v_channel uuid;
  v_tiles uuid[];
  v_items uuid[];
  v_anchors text[];
  v_keys text[] := '{}';
  v_key text;
  v_item uuid;
  v_first text;
  v_lo text;
  v_hi text;
  i int;
  j int;
begin
  -- The scheduled post editions among p_ids, by feed-grid channel; the caller holds their rows.
  for v_channel in
    select distinct c.integration_id from app.content_items c
    join app.integrations g on g.id = c.integration_id and g.workspace_id = c.workspace_id join app.platforms p on p.code = g.platform
    where c.id = any (p_ids) and c.status = 'scheduled' and c.deleted_at is null and c.kind = 'post' and p.feed_grid
    order by 1
  loop
    perform app.grid_lock(v_channel);
    -- Each tile of the set with its anchor: the greatest key among the channel's other
    -- scheduled tiles at or before its time (they are in time order), in time order.
    select array_agg(z.tile_id order by z.at, z.item_id), array_agg(z.item_id order by z.at, z.item_id),
           array_agg(z.anchor order by z.at, z.item_id)
    into v_tiles, v_items, v_anchors
    from (
      select m.src, m.tile_id, m.item_id, m.at,
             max(m.k collate "C") over (order by m.at, m.src, m.k collate "C", m.item_id rows between unbounded preceding and current row) as anchor
      from (
        select 0 as src, t.position_key as k, i.scheduled_at as at, null::uuid as tile_id, i.id as item_id
        from app.grid_tiles t join app.content_items i on i.id = t.content_item_id and i.workspace_id = t.workspace_id
        where t.integration_id = v_channel and t.position_key is not null
          and i.status = 'scheduled' and i.deleted_at is null and not (i.id = any (p_ids))
        union all
        select 1, null, i.scheduled_at, t.id, i.id
        from app.content_items i join app.grid_tiles t on t.content_item_id = i.id and t.workspace_id = i.workspace_id
        where i.id = any (p_ids) and i.integration_id = v_channel and i.status = 'scheduled' and i.deleted_at is null
          and i.kind = 'post' and t.integration_id = v_channel
      ) m
    ) z
    where z.src = 1;
    if v_tiles is null then
      continue;
    end if;
    -- Before the first scheduled tile (or the first tile) when nothing scheduled comes earlier.
    v_first := null;
    for v_key, v_item in select t.position_key, t.content_item_id from app.grid_tiles t
                         where t.integration_id = v_channel and t.position_key is not null and t.content_item_id is not null
                           and not (t.content_item_id = any (p_ids))
                         order by t.position_key loop
      if exists (select 1 from app.content_items i where i.id = v_item and i.status = 'scheduled' and i.deleted_at is null) then
        v_first := v_key;
        exit;
      end if;
    end loop;
    if v_first is null then
      select min(position_key) into v_first from app.grid_tiles
      where integration_id = v_channel and position_key is not null and not (id = any (v_tiles));
    end if;
    v_keys := '{}';
    i := 1;
    while i <= cardinality(v_tiles) loop
      j := i;
      while j < cardinality(v_tiles) and v_anchors[j + 1] is not distinct from v_anchors[i] loop
        j := j + 1;
      end loop;
      -- Tiles i..j share a gap: right after their anchor, before whatever tile (not of the set) follows it.
      if v_anchors[i] is null then
        v_hi := v_first;
        select max(position_key) into v_lo from app.grid_tiles
        where integration_id = v_channel and position_key < v_hi and not (id = any (v_tiles));
      else
        v_lo := v_anchors[i];
        select min(position_key) into v_hi from app.grid_tiles
        where integration_id = v_channel and position_key > v_lo and not (id = any (v_tiles));
      end if;
      v_keys := v_keys || app.grid_keys_between(v_lo, v_hi, j - i + 1);
      i := j + 1;
    end loop;
    update app.grid_tiles t set position_key = x.k
    from unnest(v_tiles, v_keys) x (id, k)
    where t.id = x.id and t.position_key is distinct from x.k;
    perform app.grid_rebalance(v_channel);
    -- The deferred trigger of these editions checks them against their neighbours only.
    -- Session-level (a function's SET clause undoes a local setting at its exit; the trigger runs at
    -- commit), scoped by the transaction id: another transaction of the session reads nothing from it.
    perform set_config('pressroom.grid_placed',
      txid_current()::text || ':' || array_to_string(v_items, ',') || coalesce(',' || nullif(split_part(
        case when current_setting('pressroom.grid_placed', true) like txid_current()::text || ':%'
             then current_setting('pressroom.grid_placed', true) end, ':', 2), ''), ''), false);
  end loop;
end
$function$;

CREATE OR REPLACE FUNCTION app.grid_retime(p_integration_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  v_plan jsonb;
begin
  with s as (
    select i.id, t.id tile_id, i.scheduled_at, row_number() over (order by t.position_key) rn
    from app.grid_tiles t join app.content_items i on i.id = t.content_item_id and i.workspace_id = t.workspace_id
    where t.integration_id = p_integration_id and t.position_key is not null
      and i.status = 'scheduled' and i.deleted_at is null),
  times as (select scheduled_at, row_number() over (order by scheduled_at) rn from s)
  select coalesce(jsonb_agg(jsonb_build_object('contentId', s.id, 'tileId', s.tile_id,
           'previousScheduledAt', s.scheduled_at, 'scheduledAt', times.scheduled_at) order by times.scheduled_at), '[]')
  into v_plan
  from s join times using (rn)
  where s.scheduled_at <> times.scheduled_at;
  if exists (select 1 from jsonb_array_elements(v_plan) p where (p ->> 'scheduledAt')::timestamptz <= now()
                                                              or (p ->> 'previousScheduledAt')::timestamptz <= now()) then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('position', 'in_past',
        'the move would exchange a publish time that has already come; wait until that edition is published')),
      'The move would exchange a publish time that has already come.', jsonb_build_object('rescheduled', v_plan));
  end if;
  update app.content_items c set scheduled_at = (p ->> 'scheduledAt')::timestamptz
  from jsonb_array_elements(v_plan) p
  where c.id = (p ->> 'contentId')::uuid;
  -- The move touched these editions: each gets a version (its history shows who moved it, when).
  perform app.record_content_version((p ->> 'contentId')::uuid, 'update', null, true)
  from jsonb_array_elements(v_plan) p;
  return v_plan;
end
$function$;

CREATE OR REPLACE FUNCTION app.media_json_list(p_rows app.media_items[])
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_ws uuid := app.current_workspace_id();
  v_ids uuid[];
  v_labels jsonb := '{}';
  v_usage jsonb := '{}';
begin
  if coalesce(cardinality(p_rows), 0) = 0 then
    return '[]';
  end if;
  if app.current_workspace_accessible() then
    v_ids := array(select (p_rows[i]).id from generate_subscripts(p_rows, 1) i where (p_rows[i]).workspace_id = v_ws);
    select coalesce(jsonb_object_agg(media_id, labels), '{}') into v_labels from (
      select x.media_id, jsonb_agg(jsonb_build_object('id', l.id, 'name', l.name, 'color', l.color, 'groupId', l.group_id)
                                   order by lower(l.name), l.id) as labels
      from app.media_item_labels x join app.media_labels l on l.id = x.label_id and l.workspace_id = x.workspace_id
      where x.media_id = any (v_ids) and x.workspace_id = v_ws
      group by x.media_id) s;
    select coalesce(jsonb_object_agg(media_id, n), '{}') into v_usage from (
      select media_id, count(distinct root_id) as n from (
        select cim.media_id, ci.root_id from app.content_item_media cim
        join app.content_items ci on ci.id = cim.content_item_id and ci.workspace_id = cim.workspace_id
        where cim.media_id = any (v_ids) and cim.workspace_id = v_ws and ci.deleted_at is null
        union all
        select crm.media_id, crm.root_id from app.content_root_media crm
        join app.content_roots r on r.id = crm.root_id and r.workspace_id = crm.workspace_id
        where crm.media_id = any (v_ids) and crm.workspace_id = v_ws and r.deleted_at is null) u
      group by media_id) s;
  end if;
  return (select jsonb_agg(app.media_record_json(p_rows[i], v_labels -> (p_rows[i]).id::text,
                                                 (v_usage ->> (p_rows[i]).id::text)::int) order by i)
          from generate_subscripts(p_rows, 1) i);
end
$function$;

CREATE OR REPLACE FUNCTION app.media_label_json(l app.media_labels)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object(
      'id', l.id,
      'name', l.name,
      'color', l.color,
      'groupId', l.group_id,
      'mergedIntoId', l.merged_into_id,
      'mergedAt', l.merged_at,
      'mediaCount', (select count(*)::int from app.media_item_labels x join app.media_items m on m.id = x.media_id and m.workspace_id = x.workspace_id
                     where x.label_id = l.id and m.state = 'active'),
      'createdAt', l.created_at,
      'updatedAt', l.updated_at)
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.media_scheduled_content_ids(p_media_id uuid)
 RETURNS uuid[]
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(array_agg(id order by id), '{}') from (
      select ci.id from app.content_item_media cim
      join app.content_items ci on ci.id = cim.content_item_id and ci.workspace_id = cim.workspace_id
      where cim.media_id = p_media_id and ci.status = 'scheduled' and ci.deleted_at is null
      union
      select ci.id from app.content_root_media crm
      join app.content_items ci on ci.root_id = crm.root_id and ci.workspace_id = crm.workspace_id
      where crm.media_id = p_media_id and ci.status = 'scheduled' and ci.deleted_at is null) s
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.publish_claim_batch(p_jobs jsonb, p_resendable text[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'app'
 SET enable_seqscan TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
declare
  v_batch uuid := gen_random_uuid();
  g record;
  l record;
  w_take record;
  k int;
  v_claims jsonb;
  v_claim_list jsonb[] := '{}';  -- appended in place; to_jsonb once at the end
  v_allowed int;
  v_until timestamptz;
  v_step interval;       -- the time between two paced editions of one integration
  v_start timestamptz;   -- when the first of them may go
  v_retry_ms int := app.setting_int('publish_limit_retry_ms');
begin
  -- p_jobs: [{"jobId", "contentId"}] as pg-boss fetched them. Locks are taken
  -- in one order by every worker: the app windows of the connectors involved,
  -- then integration by integration (its row when it has an in-flight limit,
  -- its window, then its editions by id).
  -- (Each statement starts from the jobs and looks rows up by key, one lateral look-up each:
  -- a generic plan cannot walk a whole index of a table that grows during a burst.)
  perform 1 from app.publish_windows w
  where w.scope = 'app' and w.key in (
    select distinct c.connector from jsonb_array_elements(p_jobs) e
    cross join lateral (select c.connector from app.content_items i join app.integrations c on c.id = i.integration_id and c.workspace_id = i.workspace_id
                        where i.id = (e ->> 'contentId')::uuid offset 0) c)
  order by w.key for update;

  for g in
    select i.integration_id,
      -- editions with an attempt in flight first: their claim settles it whatever the limits
      array_agg((e ->> 'jobId')::uuid order by o.open desc, (e ->> 'contentId')::uuid) as job_ids,
      array_agg((e ->> 'contentId')::uuid order by o.open desc, (e ->> 'contentId')::uuid) as content_ids,
      count(*) filter (where o.open)::int as resumed
    from jsonb_array_elements(p_jobs) e
    left join lateral (select i.integration_id from app.content_items i where i.id = (e ->> 'contentId')::uuid offset 0) i on true
    -- An attempt in flight: the edition's attempts looked up by the edition alone (a plan may
    -- otherwise walk the partial index of every open attempt of the channel, filtering on the edition).
    cross join lateral (select exists (select 1 from (select a.finished_at from app.publish_attempts a
                                                      where a.content_item_id = (e ->> 'contentId')::uuid offset 0) a
                                       where a.finished_at is null) as open) o
    group by i.integration_id
    order by i.integration_id nulls first
  loop
    -- How many of this integration's editions may go now (limits counted once per integration).
    v_allowed := cardinality(g.job_ids);
    v_until := null;
    v_step := interval '0';
    if g.integration_id is not null then
      select * into l from app.publish_limits_of(g.integration_id);
      if l.max_in_flight is not null then
        -- Claims of one integration count its attempts in flight one after the other
        -- (the integration's row, locked in integration order, as every worker does).
        perform 1 from app.integrations i where i.id = g.integration_id for no key update;
        v_allowed := greatest(least(v_allowed, l.max_in_flight - (select count(*) from app.publish_attempts a
                                      where a.integration_id = g.integration_id and a.finished_at is null)::int), 0);
        if v_allowed < cardinality(g.job_ids) then
          -- Every slot is taken: one frees about every (how long a post holds one) / (slots).
          v_step := app.publish_hold_estimate(g.integration_id, v_retry_ms) / l.max_in_flight;
          v_until := clock_timestamp() + v_step;
        end if;
      end if;
      if l.max_per_window is not null and v_allowed > 0 then
        select * into w_take from app.publish_window_take('integration', g.integration_id::text, l.max_per_window, l.window_seconds, v_allowed);
        v_allowed := w_take.granted;
        if w_take.frees_at is not null then
          v_until := greatest(v_until, w_take.frees_at);
          v_step := greatest(v_step, l.window_seconds * interval '1 second' / l.max_per_window);
        end if;
      end if;
      if l.app_max_per_window is not null and v_allowed > 0 then
        select * into w_take from app.publish_window_take('app', l.connector, l.app_max_per_window, l.app_window_seconds, v_allowed);
        v_allowed := w_take.granted;
        if w_take.frees_at is not null then
          v_until := greatest(v_until, w_take.frees_at);
          v_step := greatest(v_step, l.app_window_seconds * interval '1 second' / l.app_max_per_window);
        end if;
      end if;
      v_allowed := greatest(v_allowed, g.resumed);
      if v_allowed < cardinality(g.job_ids) then
        -- The editions put back are paced at the rate the limit lets through, after those this
        -- integration already put back (app.publish_pacing): each comes back about when it can go,
        -- instead of every one coming back together at each retry and going back again.
        insert into app.publish_pacing as p (integration_id, organization_id, workspace_id, next_at)
        select i.id, i.organization_id, i.workspace_id, v_until from app.integrations i where i.id = g.integration_id
        on conflict (integration_id, workspace_id) do nothing;
        -- At most 10 s of pace ahead of the limit's own next opening: a pace that ran ahead (a
        -- long burst, or a hold measured while slots were stuck) costs a look every 10 s at most.
        select greatest(v_until, least(p.next_at, v_until + interval '10 seconds')) into v_start from app.publish_pacing p
        where p.integration_id = g.integration_id for update;
        update app.publish_pacing set next_at = v_start + (cardinality(g.job_ids) - v_allowed) * v_step
        where integration_id = g.integration_id;
      end if;
    end if;
    -- The first v_allowed editions are claimed together (the common case set-based, the rest one by one).
    if v_allowed > 0 then
      v_claim_list := v_claim_list || app.publish_claim_editions(g.content_ids[1:v_allowed], g.job_ids[1:v_allowed], p_resendable, v_batch);
    end if;
    for k in v_allowed + 1 .. cardinality(g.job_ids) loop
      -- Over a limit: the job goes back with a later start, its turn in the pace; no attempt is written.
      v_until := v_start + (k - v_allowed - 1) * v_step;
      perform app.publish_defer_job(g.job_ids[k], v_until);
      v_claim_list := array_append(v_claim_list, jsonb_build_object('action', 'deferred', 'reason', 'rate_limited', 'until', v_until,
        'jobId', g.job_ids[k], 'contentId', g.content_ids[k]));
    end loop;
  end loop;

  v_claims := to_jsonb(v_claim_list);
  return jsonb_build_object('batch', v_batch, 'claims', v_claims,
    -- Where the media of the editions to send are stored, for signed URLs.
    'media', (select coalesce(jsonb_agg(jsonb_build_object('id', m.id, 'key', m.storage_key, 'filename', m.filename,
                'contentType', m.content_type)), '[]')
              from app.media_items m
              where m.id in (
                select (x ->> 'id')::uuid from jsonb_array_elements(v_claims) c, jsonb_array_elements(c #> '{edition,media}') x
                where c ->> 'action' = 'send'
                union
                select y::uuid from jsonb_array_elements(v_claims) c, jsonb_array_elements(c #> '{edition,thread}') t,
                  jsonb_array_elements_text(t -> 'mediaIds') y
                where c ->> 'action' = 'send')));
end
$function$;

CREATE OR REPLACE FUNCTION app.publish_claim_editions(p_content_ids uuid[], p_job_ids uuid[], p_resendable text[], p_batch uuid)
 RETURNS jsonb[]
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_fast uuid[];         -- the jobs of the common case
  v_sent jsonb := '{}';  -- their claims, by job id
  v_out jsonb[];
  v_now timestamptz := now();
begin
  -- The editions, locked in the order given (the claim's order: in flight first, then by id).
  perform 1 from unnest(p_content_ids) with ordinality u (id, n)
    join app.content_items i on i.id = u.id
  order by u.n for update of i;
  -- Their publishing states, by edition.
  perform 1 from app.publishing_states s where s.content_item_id = any (p_content_ids)
  order by s.content_item_id for update;
  -- The common case: what app.publish_claim_attempt would send as a first attempt of this job
  -- (the edition's own job, so at most one per edition).
  select coalesce(array_agg(f.job_id), '{}') into v_fast
  from (select distinct on (u.id) u.job_id
        from unnest(p_content_ids, p_job_ids) u (id, job_id)
        join app.content_items i on i.id = u.id
        join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
        left join app.publishing_states s on s.content_item_id = i.id and s.workspace_id = i.workspace_id
        where i.deleted_at is null and i.status = 'scheduled' and i.publish_job_id = u.job_id
          and not (s.state is not distinct from 'awaiting_confirmation' and s.job_id is not distinct from u.job_id)
          and g.deleted_at is null and g.status <> 'disconnected'
          -- (by the edition alone, as in app.publish_claim_batch)
          and not exists (select 1 from (select a.finished_at from app.publish_attempts a where a.content_item_id = i.id and a.workspace_id = i.workspace_id offset 0) a
                          where a.finished_at is null)
        order by u.id) f;

  if cardinality(v_fast) > 0 then
    with f as (
      select distinct u.id, u.job_id from unnest(p_content_ids, p_job_ids) u (id, job_id) where u.job_id = any (v_fast)
    ),
    a as (
      insert into app.publish_attempts (organization_id, workspace_id, content_item_id, attempt, run_attempt, job_id, connector,
        idempotency_token, integration_id, claim_batch)
      select i.organization_id, i.workspace_id, i.id,
        coalesce((select max(x.attempt) from app.publish_attempts x where x.content_item_id = i.id and x.workspace_id = i.workspace_id), 0) + 1,
        case when s.job_id is not distinct from f.job_id then coalesce(s.run_attempts, 0) + 1 else 1 end,
        f.job_id, g.connector,
        -- One token per edition and version: the same post whatever the attempt.
        'pr_' || replace(i.id::text, '-', '') || '_v' || i.version, i.integration_id, p_batch
      from f
      join app.content_items i on i.id = f.id
      join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
      left join app.publishing_states s on s.content_item_id = i.id and s.workspace_id = i.workspace_id
      order by i.id
      returning id, content_item_id, attempt, run_attempt, job_id, idempotency_token, organization_id, workspace_id
    ),
    s as (
      insert into app.publishing_states as ps (content_item_id, organization_id, workspace_id, job_id, state, run_attempts)
      select a.content_item_id, a.organization_id, a.workspace_id, a.job_id, 'publishing', a.run_attempt from a
      order by a.content_item_id
      on conflict (content_item_id, workspace_id) do update set job_id = excluded.job_id, state = 'publishing',
        run_attempts = excluded.run_attempts, next_attempt_at = null, updated_at = v_now
    )
    -- (s, a data-modifying part, runs to completion whether read or not.)
    select jsonb_object_agg(a.job_id::text, jsonb_build_object('action', 'send', 'attemptId', a.id, 'attempt', a.attempt,
             'runAttempt', a.run_attempt, 'token', a.idempotency_token, 'resend', false, 'edition', e.edition,
             'jobId', a.job_id, 'contentId', a.content_item_id))
    into v_sent
    from a join app.publish_editions_json(array(select f.id from f)) e on e.id = a.content_item_id;
  end if;

  -- Every claim in the order given; the others one by one, exactly as a claim alone.
  select array_agg(coalesce(v_sent -> u.job_id::text,
           app.publish_claim(u.id, u.job_id, p_resendable, p_batch) || jsonb_build_object('jobId', u.job_id, 'contentId', u.id))
         order by u.n)
  into v_out
  from unnest(p_content_ids, p_job_ids) with ordinality u (id, job_id, n);
  return coalesce(v_out, '{}');
end
$function$;

CREATE OR REPLACE FUNCTION app.publish_editions_json(p_item_ids uuid[])
 RETURNS TABLE(id uuid, edition jsonb)
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'app'
AS $function$
begin
  -- PL/pgSQL keeps this plan for the session (a SQL function would plan it at every call: once per integration of a batch).
  return query
  select i.id, jsonb_build_object(
    'id', i.id, 'rootId', i.root_id, 'workspaceId', i.workspace_id, 'version', i.version,
    'caption', coalesce(i.caption, r.caption, ''),
    'title', r.title,
    'settings', case when i.settings = '{}' then '{}'::jsonb else app.sanitize_settings(g.platform, i.settings) end,
    'scheduledAt', i.scheduled_at,
    'media', (select coalesce(jsonb_agg(jsonb_build_object('id', m.id, 'type', m.type, 'contentType', m.content_type,
                'altText', m.alt_text) order by x.n), '[]')
              from unnest(case when i.own_media then
                            (select coalesce(array_agg(cm.media_id order by cm.position), '{}') from app.content_item_media cm
                             where cm.content_item_id = i.id and cm.workspace_id = i.workspace_id)
                          else (select coalesce(array_agg(rm.media_id order by rm.position), '{}') from app.content_root_media rm
                                where rm.root_id = i.root_id and rm.workspace_id = i.workspace_id) end) with ordinality x (id, n)
              join app.media_items m on m.id = x.id),
    'thread', (select coalesce(jsonb_agg(jsonb_build_object('caption', coalesce(e ->> 'caption', ''),
                 'mediaIds', coalesce(e -> 'mediaIds', '[]')) order by n), '[]')
               from jsonb_array_elements(i.thread) with ordinality t (e, n)),
    'integration', jsonb_build_object('id', g.id, 'connector', g.connector, 'platform', g.platform, 'name', g.name,
      'username', g.username, 'settings', g.settings, 'webhookUrl', g.webhook_url, 'webhookSecret', g.webhook_secret,
      'status', g.status, 'deleted', g.deleted_at is not null))
  from app.content_items i
  join app.content_roots r on r.id = i.root_id and r.workspace_id = i.workspace_id
  join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
  where i.id = any (p_item_ids);
end
$function$;

CREATE OR REPLACE FUNCTION app.publish_limits_of(p_integration_id uuid)
 RETURNS TABLE(connector text, max_in_flight integer, max_per_window integer, window_seconds integer, app_max_per_window integer, app_window_seconds integer)
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return query
  select g.connector,
    nullif(least(coalesce(c.integration_max_in_flight, 2147483647), coalesce(o.max_in_flight, 2147483647)), 2147483647),
    case when c.integration_max_per_window is null then o.max_per_window
         when o.max_per_window is null then c.integration_max_per_window
         -- the stricter of the two rates
         when o.max_per_window::numeric / o.window_seconds < c.integration_max_per_window::numeric / c.integration_window_seconds
           then o.max_per_window else c.integration_max_per_window end,
    case when c.integration_max_per_window is null then o.window_seconds
         when o.max_per_window is null then c.integration_window_seconds
         when o.max_per_window::numeric / o.window_seconds < c.integration_max_per_window::numeric / c.integration_window_seconds
           then o.window_seconds else c.integration_window_seconds end,
    c.app_max_per_window, c.app_window_seconds
  from app.integrations g
  left join app.connector_publish_limits c on c.connector = g.connector
  left join app.integration_publish_limits o on o.integration_id = g.id and o.workspace_id = g.workspace_id
  where g.id = p_integration_id;
end
$function$;

CREATE OR REPLACE FUNCTION app.published_caption_secret(p_id uuid)
 RETURNS text
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_secret text;
begin
  perform app.require_role('editor');
  select g.webhook_secret into v_secret
  from app.content_items i join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
  where i.id = p_id and i.workspace_id = app.current_workspace_id() and i.deleted_at is null and i.status = 'sent'
    and g.connector = 'webhook' and g.deleted_at is null;
  return v_secret;
end
$function$;

CREATE OR REPLACE FUNCTION app.publishing_item_json(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object('id', i.id, 'rootId', i.root_id, 'integrationId', i.integration_id, 'status', i.status,
      'scheduledAt', i.scheduled_at, 'sentAt', i.sent_at, 'permalink', i.permalink, 'platformPostId', i.platform_post_id,
      'error', i.error, 'caption', coalesce(i.caption, r.caption),
      'publishedCaption', case when i.status = 'sent' then coalesce(pc.caption, i.caption, r.caption) end,
      'publishing', app.publishing_json(i.id))
    from app.content_items i join app.content_roots r on r.id = i.root_id and r.workspace_id = i.workspace_id
    left join app.published_captions pc on pc.content_item_id = i.id and pc.workspace_id = i.workspace_id
    where i.id = p_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.publishing_json(p_content_item_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select app.publishing_json_of(row(i.*)::app.content_items, row(s.*)::app.publishing_states, (select count(*) from app.publish_attempts a where a.content_item_id = i.id and a.workspace_id = i.workspace_id))
    from app.content_items i
    left join app.publishing_states s on s.content_item_id = i.id and s.workspace_id = i.workspace_id
    where i.id = p_content_item_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.review_content_eligibility(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select case
      when i.id is null then jsonb_build_object('contentId', p_id, 'eligible', false, 'reason', 'not_found')
      when exists (select 1 from app.review_items x where x.content_id = i.id and x.open and x.workspace_id = i.workspace_id)
        then jsonb_build_object('contentId', p_id, 'eligible', false, 'reason', 'in_review',
               'reviewId', (select x.review_id from app.review_items x where x.content_id = i.id and x.open and x.workspace_id = i.workspace_id limit 1))
      when i.status not in ('draft', 'scheduled')
        then jsonb_build_object('contentId', p_id, 'eligible', false, 'reason', 'status_' || i.status)
      else jsonb_build_object('contentId', p_id, 'eligible', true, 'reason', null)
    end
    from (select p_id as pid) q
    left join app.content_items i on i.id = q.pid and i.workspace_id = app.current_workspace_id() and i.deleted_at is null
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.review_inbox_rows(p_key text)
 RETURNS TABLE(item app.review_items, review app.reviews, platform text, due_at timestamp with time zone, urgency text)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return query
  select it, r, g.platform, app.review_item_due_at(row(r.*)::app.reviews, row(it.*)::app.review_items), app.review_urgency(app.review_item_due_at(row(r.*)::app.reviews, row(it.*)::app.review_items), w.timezone)
  from app.review_items it
  join app.reviews r on r.id = it.review_id and r.status = 'active' and r.workspace_id = it.workspace_id
  join app.content_items i on i.id = it.content_id and i.workspace_id = it.workspace_id
  join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
  join app.workspaces w on w.id = it.workspace_id
  where it.workspace_id = app.current_workspace_id() and it.organization_id = app.current_organization_id()
    and it.waiting_on @> array[p_key] and cardinality(it.waiting_on) > 0;
end
$function$;

CREATE OR REPLACE FUNCTION app.review_item_json(r app.reviews, it app.review_items)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object('id', it.id, 'reviewId', it.review_id, 'contentId', it.content_id, 'state', it.state,
      'currentStage', it.current_stage,
      'currentStageName', case when it.state = 'pending' then r.stages -> it.current_stage ->> 'name' end,
      'dueAt', case when it.state = 'pending' and r.status = 'active' then app.review_item_due_at(r, it) end,
      'platform', g.platform, 'integrationId', i.integration_id, 'contentStatus', i.status,
      'caption', coalesce(i.caption, cr.caption), 'intendedPublishAt', coalesce(i.intended_publish_at, i.scheduled_at),
      'contentVersion', i.version, 'approvedVersion', it.approved_version, 'decidedAt', it.decided_at,
      'createdAt', it.created_at,
      'decisions', coalesce((select jsonb_agg(app.review_decision_json(row(d.*)::app.review_decisions) order by d.created_at, d.id)
                             from app.review_decisions d where d.item_id = it.id), '[]'))
    from app.content_items i
    join app.content_roots cr on cr.id = i.root_id and cr.workspace_id = i.workspace_id
    join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
    where i.id = it.content_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.workbench_rows_json(p_ids uuid[])
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(jsonb_agg(jsonb_build_object(
      'id', w.id, 'pageId', w.page_id, 'sectionId', w.section_id, 'position', w.position,
      'title', w.title, 'notes', w.notes,
      'scheduledAt', coalesce(to_jsonb(w.planned_at), to_jsonb(w.planned_on::text)),
      'contentRootId', r.id,
      'caption', r.caption,
      'mediaIds', coalesce(media.ids, '[]'),
      'channels', coalesce(ed.channels, '[]'),
      'editions', coalesce(ed.editions, '[]'),
      'tagIds', coalesce(tags.ids, '[]'),
      'pillarId', pillar.id,
      'formatId', format.id,
      'campaignId', r.campaign_id,
      'status', app.workbench_status_of(r.id is not null, ed.n, ed.any_failed, ed.any_pending, ed.any_rejected, ed.all_sent,
                                        ed.all_scheduled_or_sent, ed.all_cancelled),
      'createdAt', w.created_at, 'updatedAt', w.updated_at) order by x.n), '[]')
    from unnest(p_ids) with ordinality x (id, n)
    join app.workbench_rows w on w.id = x.id
    left join app.content_roots r on r.id = w.content_root_id and r.deleted_at is null and r.workspace_id = w.workspace_id
    left join lateral (select jsonb_agg(m.media_id order by m.position) ids from app.content_root_media m where m.root_id = r.id and m.workspace_id = r.workspace_id) media on true
    left join lateral (
      select count(*) n,
        jsonb_agg(i.integration_id order by g.created_at, g.id) channels,
        jsonb_agg(app.content_edition_json(row(i.*)::app.content_items) order by g.created_at, g.id) editions,
        bool_or(i.status = 'failed') any_failed, bool_or(i.status = 'pending_approval') any_pending,
        bool_or(i.status = 'rejected') any_rejected, bool_and(i.status = 'sent') all_sent,
        bool_and(i.status in ('scheduled', 'sent')) all_scheduled_or_sent, bool_and(i.status = 'cancelled') all_cancelled
      from app.content_items i join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
      where i.root_id = r.id and i.deleted_at is null) ed on true
    left join lateral (select jsonb_agg(t.tag_id order by t.tag_id) ids from app.content_root_tags t where t.root_id = r.id and t.workspace_id = r.workspace_id) tags on true
    left join lateral (select p.pillar_id id from app.content_root_pillars p where p.root_id = r.id and p.workspace_id = r.workspace_id order by p.created_at, p.pillar_id limit 1) pillar on true
    left join lateral (select f.format_id id from app.content_root_formats f where f.root_id = r.id and f.workspace_id = r.workspace_id order by f.created_at, f.format_id limit 1) format on true
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.workbench_schedule_row(p_row_id uuid, p_dry_run boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  v app.workbench_rows;
  v_item app.content_items;
  v_results jsonb[] := '{}';
  v_failed boolean := false;
  v_state text; v_msg text; v_detail text; v_hint text;
begin
  begin
    select * into v from app.workbench_rows where id = p_row_id and workspace_id = app.current_workspace_id();
    if v.id is null then
      perform app.raise_not_found('workbench row', p_row_id);
    end if;
    if v.content_root_id is null or not exists (select 1 from app.content_roots where id = v.content_root_id and deleted_at is null) then
      perform app.raise(400, 'ROW_HAS_NO_CONTENT', 'This row has no content to schedule; give it a caption or media and channels.',
        jsonb_build_object('rowId', v.id));
    end if;
    if v.planned_at is null then
      perform app.raise(400, 'ROW_TIME_REQUIRED', 'This row has no date and time to schedule at (a date alone is a plan, not a time).',
        jsonb_build_object('rowId', v.id, 'scheduledAt', v.planned_on));
    end if;
    if not exists (select 1 from app.content_items where root_id = v.content_root_id and deleted_at is null) then
      perform app.raise(400, 'ROW_HAS_NO_CHANNELS', 'This row has no channel to schedule on.', jsonb_build_object('rowId', v.id));
    end if;
    for v_item in select i.* from app.content_items i join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
                  where i.root_id = v.content_root_id and i.deleted_at is null order by g.created_at, g.id loop
      begin
        perform app.schedule_edition(v_item.id, v.planned_at);
        v_results := v_results || jsonb_build_object('rowId', v.id, 'contentId', v_item.id, 'integrationId', v_item.integration_id,
          'outcome', case when p_dry_run then 'valid' else 'scheduled' end, 'error', null);
      exception when others then
        get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text, v_detail = pg_exception_detail, v_hint = pg_exception_hint;
        v_results := v_results || jsonb_build_object('rowId', v.id, 'contentId', v_item.id, 'integrationId', v_item.integration_id,
          'outcome', 'failed', 'error', app.workbench_error_json(v_state, v_msg, v_detail, v_hint));
        v_failed := true;
      end;
    end loop;
    if v_failed or p_dry_run then
      raise exception using errcode = 'ZW001', message = 'workbench dry run or failed row: roll back';
    end if;
  exception
    when sqlstate 'ZW001' then
      null;
    when others then
      get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text, v_detail = pg_exception_detail, v_hint = pg_exception_hint;
      v_results := array[jsonb_build_object('rowId', p_row_id, 'contentId', null, 'integrationId', null,
        'outcome', 'failed', 'error', app.workbench_error_json(v_state, v_msg, v_detail, v_hint))];
      v_failed := true;
  end;
  if v_failed then
    -- The row's other channels were rolled back with it: a row is scheduled whole or not at all.
    v_results := array(select case when r ->> 'outcome' = 'scheduled' then r || '{"outcome": "not_scheduled"}' else r end
                       from unnest(v_results) r);
  end if;
  return jsonb_build_object('ok', not v_failed, 'results', to_jsonb(v_results));
end
$function$;

CREATE OR REPLACE FUNCTION api.analytics_health()
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
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
        from app.publish_attempts a join app.content_items i on i.id = a.content_item_id and i.workspace_id = a.workspace_id
        where i.integration_id = g.id and a.workspace_id = v_ws and a.started_at >= v_since),
      'awaitingConfirmation', (
        select count(*) from app.publishing_states p join app.content_items i on i.id = p.content_item_id and i.workspace_id = p.workspace_id
        where i.integration_id = g.id and p.workspace_id = v_ws and p.state = 'awaiting_confirmation'),
      'sync', (
        select jsonb_build_object('successes', coalesce(sum(d.successes), 0), 'failures', coalesce(sum(d.failures), 0),
          'rateLimitHits', coalesce(sum(d.rate_limit_hits), 0))
        from app.integration_sync_daily d where d.integration_id = g.id and d.day >= (v_since at time zone 'UTC')::date and d.workspace_id = g.workspace_id))
      order by g.name, g.id), '[]'::jsonb)
    from app.integrations g
    left join app.integration_sync_state s on s.integration_id = g.id and s.workspace_id = g.workspace_id
    where g.workspace_id = v_ws and g.deleted_at is null);
end
$function$;

CREATE OR REPLACE FUNCTION api.delete_campaign(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.campaigns;
  v_editions int;
  v_roots int;
begin
  perform app.require_role('editor');
  v := app.campaign_for_update(p_id);
  select count(*)::int into v_editions
  from app.content_items i join app.content_roots r on r.id = i.root_id and r.workspace_id = i.workspace_id
  where r.campaign_id = p_id and r.workspace_id = app.current_workspace_id()
    and r.deleted_at is null and i.deleted_at is null;
  select count(*)::int into v_roots from app.content_roots r
  where r.campaign_id = p_id and r.workspace_id = app.current_workspace_id() and r.deleted_at is null;
  update app.content_roots r set campaign_id = null, phase_id = null
  where r.campaign_id = p_id and r.workspace_id = app.current_workspace_id();
  delete from app.campaigns c where c.id = p_id;
  return jsonb_build_object('id', p_id, 'deleted', true, 'contentUnassigned', v_editions, 'rootsUnassigned', v_roots);
end
$function$;

CREATE OR REPLACE FUNCTION api.duplicate_workbench_row(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.workbench_rows;
  s app.workbench_sections;
  v_new app.workbench_rows;
  v_root app.content_roots;
  v_body jsonb;
begin
  perform app.require_role('editor');
  select * into v from app.workbench_rows where id = p_id and workspace_id = app.current_workspace_id();
  if v.id is null then
    perform app.raise_not_found('workbench row', p_id);
  end if;
  perform app.workbench_lock(v.section_id);
  s := app.workbench_section_for_update(v.section_id);
  select * into v_root from app.content_roots where id = v.content_root_id and deleted_at is null;
  v_body := jsonb_build_object('title', v.title, 'notes', v.notes,
    'scheduledAt', coalesce(to_jsonb(v.planned_at), to_jsonb(v.planned_on::text)));
  if v_root.id is not null then
    v_body := v_body || jsonb_build_object('caption', v_root.caption,
      'mediaIds', to_jsonb(app.content_root_media_ids(v_root.id)),
      'channels', coalesce((select jsonb_agg(i.integration_id order by g.created_at, g.id) from app.content_items i
                            join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
                            where i.root_id = v_root.id and i.deleted_at is null), '[]'),
      'tagIds', coalesce((select jsonb_agg(t.tag_id) from app.content_root_tags t where t.root_id = v_root.id), '[]'),
      'pillarId', (select p.pillar_id from app.content_root_pillars p where p.root_id = v_root.id order by p.created_at, p.pillar_id limit 1),
      'formatId', (select f.format_id from app.content_root_formats f where f.root_id = v_root.id order by f.created_at, f.format_id limit 1),
      'campaignId', v_root.campaign_id);
  end if;
  v_new := app.workbench_insert_row(s, app.workbench_slot('rows', s.id, v.id, null, null), v_body);
  return app.workbench_row_json(v_new);
end
$function$;

CREATE OR REPLACE FUNCTION api.export_workbench_page(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.workbench_pages;
  v_tz text;
begin
  perform app.require_role('viewer');
  select * into v from app.workbench_pages where id = p_id and workspace_id = app.current_workspace_id();
  if v.id is null then
    perform app.raise_not_found('workbench page', p_id);
  end if;
  select timezone into v_tz from app.workspaces where id = v.workspace_id;
  return jsonb_build_object('pageId', v.id, 'pageName', v.name, 'timeZone', v_tz,
    'header', to_jsonb(app.workbench_csv_columns()),
    'records', coalesce((
      select jsonb_agg(jsonb_build_array(
        w.id, s.name, coalesce(w.title, ''), coalesce(r.caption, ''),
        coalesce((select string_agg(g.name, '; ' order by g.created_at, g.id) from app.content_items i
                  join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
                  where i.root_id = r.id and i.deleted_at is null), ''),
        coalesce(app.workbench_csv_time(w.planned_at, v_tz), w.planned_on::text, ''),
        coalesce((select string_agg(t.name, '; ' order by t.name) from app.content_root_tags rt join app.tags t on t.id = rt.tag_id and t.workspace_id = rt.workspace_id
                  where rt.root_id = r.id), ''),
        coalesce((select p.name from app.content_root_pillars rp join app.pillars p on p.id = rp.pillar_id and p.workspace_id = rp.workspace_id
                  where rp.root_id = r.id order by rp.created_at, rp.pillar_id limit 1), ''),
        coalesce((select f.name from app.content_root_formats rf join app.formats f on f.id = rf.format_id and f.workspace_id = rf.workspace_id
                  where rf.root_id = r.id order by rf.created_at, rf.format_id limit 1), ''),
        coalesce((select c.name from app.campaigns c where c.id = r.campaign_id), ''),
        coalesce((select string_agg(m.media_id::text, '; ' order by m.position) from app.content_root_media m where m.root_id = r.id), ''),
        coalesce(w.notes, ''),
        app.workbench_status_of(r.id is not null, st.n, st.any_failed, st.any_pending, st.any_rejected, st.all_sent,
                                st.all_scheduled_or_sent, st.all_cancelled)) order by s.position, w.position)
      from app.workbench_rows w
      join app.workbench_sections s on s.id = w.section_id and s.workspace_id = w.workspace_id
      left join app.content_roots r on r.id = w.content_root_id and r.deleted_at is null and r.workspace_id = w.workspace_id
      left join lateral (
        select count(*) n, bool_or(i.status = 'failed') any_failed, bool_or(i.status = 'pending_approval') any_pending,
          bool_or(i.status = 'rejected') any_rejected, bool_and(i.status = 'sent') all_sent,
          bool_and(i.status in ('scheduled', 'sent')) all_scheduled_or_sent, bool_and(i.status = 'cancelled') all_cancelled
        from app.content_items i where i.root_id = r.id and i.deleted_at is null and i.workspace_id = r.workspace_id) st on true
      where w.page_id = v.id), '[]'));
end
$function$;

CREATE OR REPLACE FUNCTION api.get_grid(p_integration_id uuid, p_limit integer, p_cursor text)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.integrations;
  v_limit int := coalesce(p_limit, 60);
  c jsonb;
  v_rows jsonb;
  v_count int;
  v_last jsonb;
  v_next text;
begin
  perform app.require_role('viewer');
  v := app.grid_integration(p_integration_id);
  if v_limit < 1 or v_limit > 200 then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('limit', 'out_of_range', 'must be between 1 and 200')),
      'limit must be between 1 and 200.');
  end if;
  if p_cursor is not null then
    begin
      c := convert_from(decode(rpad(translate(p_cursor, '-_', '+/'), ((length(p_cursor) + 3) / 4) * 4, '='), 'base64'), 'UTF8')::jsonb;
      if jsonb_typeof(c) <> 'object' or coalesce(c ->> 's', '') not in ('0', '1') or not coalesce(app.is_uuid(c ->> 'i'), false)
         or ((c ->> 's') = '1' and (c ->> 'k') is null) then
        raise exception 'bad cursor';
      end if;
      perform (c ->> 't')::timestamptz;
    exception when others then
      perform app.raise_field_problems(jsonb_build_array(app.field_problem('cursor', 'invalid_cursor',
        'not a cursor of this grid; use meta.nextCursor of the previous page')), 'The cursor is not valid.');
    end;
  end if;
  with o as (
    select o.*, row_number() over (order by o.pos) rn from app.grid_ordered(v.id) o
    where c is null
       or o.section > (c ->> 's')::int
       or (o.section = 0 and (c ->> 's') = '0'
           and (o.sent_at < (c ->> 't')::timestamptz
                or (o.sent_at is not distinct from (c ->> 't')::timestamptz and o.tile_id > (c ->> 'i')::uuid)
                or (o.sent_at is null and (c ->> 't') is not null)))
       or (o.section = 1 and (c ->> 's') = '1' and o.position_key collate "C" > (c ->> 'k'))
    order by o.pos limit v_limit + 1)
  select app.grid_tiles_json(coalesce(jsonb_agg(jsonb_build_object('id', o.tile_id, 'pos', o.pos) order by o.pos)
                                        filter (where o.rn <= v_limit), '[]')),
         count(*),
         (array_agg(jsonb_build_object('s', o.section, 't', o.sent_at, 'k', o.position_key, 'i', o.tile_id) order by o.pos))[v_limit]
  into v_rows, v_count, v_last
  from o;
  if v_count > v_limit then
    v_next := rtrim(translate(encode(convert_to(v_last::text, 'UTF8'), 'base64'), E'+/\n', '-_'), '=');
  end if;
  return jsonb_build_object('data', v_rows, 'meta', jsonb_build_object(
    'limit', v_limit, 'nextCursor', v_next,
    'total', (select count(*) from app.grid_tiles where integration_id = v.id),
    'counts', (select jsonb_build_object(
        'published', count(*) filter (where t.position_key is null),
        'scheduled', count(*) filter (where i.status = 'scheduled'),
        'draft', count(*) filter (where t.content_item_id is not null and t.position_key is not null and i.status <> 'scheduled'),
        'placeholder', count(*) filter (where t.content_item_id is null))
      from app.grid_tiles t left join app.content_items i on i.id = t.content_item_id and i.workspace_id = t.workspace_id
      where t.integration_id = v.id)));
end
$function$;

CREATE OR REPLACE FUNCTION api.get_workbench_page(p_id uuid, p_query jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.workbench_pages;
  v_limit int := coalesce((p_query ->> 'limit')::int, 500);
  v_offset bigint := coalesce((p_query ->> 'offset')::bigint, 0);
  v_ids uuid[];
  v_total bigint;
begin
  perform app.require_role('viewer');
  select * into v from app.workbench_pages where id = p_id and workspace_id = app.current_workspace_id();
  if v.id is null then
    perform app.raise_not_found('workbench page', p_id);
  end if;
  select count(*) into v_total from app.workbench_rows where page_id = v.id;
  v_ids := array(select w.id from app.workbench_rows w join app.workbench_sections s on s.id = w.section_id and s.workspace_id = w.workspace_id
                 where w.page_id = v.id order by s.position, w.position limit v_limit offset v_offset);
  return jsonb_build_object(
    'page', app.workbench_page_json(v)
      || jsonb_build_object('sections', (select coalesce(jsonb_agg(app.workbench_section_json(row(s.*)::app.workbench_sections) order by s.position), '[]')
                                         from app.workbench_sections s where s.page_id = v.id))
      || jsonb_build_object('rows', app.workbench_rows_json(v_ids)),
    'meta', jsonb_build_object('limit', v_limit, 'offset', v_offset, 'total', v_total, 'hasMore', v_offset + cardinality(v_ids) < v_total));
end
$function$;

CREATE OR REPLACE FUNCTION api.import_workbench_csv(p_page_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_page app.workbench_pages;
  v_tz text;
  v_dry boolean := coalesce((p_body ->> 'dryRun')::boolean, false);
  v_partial boolean := coalesce((p_body ->> 'allowPartial')::boolean, false);
  v_header jsonb := p_body -> 'header';
  v_cols text[] := '{}';
  v_ignored jsonb := '[]';
  v_col text;
  v_i int;
  v_line jsonb;
  v_fields jsonb;
  v_get jsonb;
  v_errors jsonb;
  v_warnings jsonb;
  v_body jsonb;
  t record;
  r record;
  v_section uuid;
  v_default_section uuid;
  v_new_sections jsonb := '[]';
  v_plan jsonb[] := '{}';
  v_warnings_by_line jsonb;
  v_results jsonb[] := '{}';
  v_keys jsonb := '{}';
  v_used jsonb := '{}';
  v_created uuid[] := '{}';
  v_row app.workbench_rows;
  v_ok int := 0;
  v_bad int := 0;
  v_dupes int := 0;
  v_p jsonb;
  v_k int;
  v_report jsonb;
  v_err jsonb;
  v_state text; v_msg text; v_detail text; v_hint text;
  v_nestloop text;
begin
  perform app.require_role('editor');
  perform app.workbench_lock(p_page_id);
  v_page := app.workbench_page_for_update(p_page_id);
  select timezone into v_tz from app.workspaces where id = v_page.workspace_id;
  if jsonb_array_length(p_body -> 'lines') > 10000 then
    perform app.raise(400, 'CSV_TOO_LARGE', 'A CSV import takes at most 10,000 lines; split the file.',
      jsonb_build_object('lines', jsonb_array_length(p_body -> 'lines'), 'max', 10000));
  end if;
  -- Columns by header.
  for v_i in 0 .. jsonb_array_length(v_header) - 1 loop
    v_col := app.workbench_csv_column(v_header ->> v_i);
    if v_col is null then
      v_ignored := v_ignored || to_jsonb(v_header ->> v_i);
      v_col := '-';
    elsif v_col <> '-' and v_col = any (v_cols) then
      perform app.raise(400, 'CSV_HEADER_INVALID', format('Two columns map to %s.', v_col),
        jsonb_build_object('column', v_col, 'header', v_header));
    end if;
    v_cols := v_cols || v_col;
  end loop;
  if not ('title' = any (v_cols) or 'caption' = any (v_cols)) then
    perform app.raise(400, 'CSV_HEADER_INVALID', 'The header needs a title or a caption column.',
      jsonb_build_object('header', v_header, 'columns', to_jsonb(app.workbench_csv_columns())));
  end if;

  begin
    -- Pass 1: each line to a row body, or its errors.
    for v_line in select e from jsonb_array_elements(p_body -> 'lines') e loop
      v_fields := v_line -> 'fields';
      v_errors := '[]';
      v_warnings := '[]';
      v_section := null;
      v_body := '{}';
      if jsonb_array_length(v_fields) <> cardinality(v_cols) then
        v_errors := jsonb_build_array(app.field_problem(null, 'column_count',
          format('%s fields where the header has %s columns', jsonb_array_length(v_fields), cardinality(v_cols))));
      else
        v_get := '{}';
        for v_i in 1 .. cardinality(v_cols) loop
          if v_cols[v_i] <> '-' then
            v_get := v_get || jsonb_build_object(v_cols[v_i], nullif(btrim(v_fields ->> (v_i - 1)), ''));
          end if;
        end loop;
        if v_get ->> 'title' is null and v_get ->> 'caption' is null then
          v_errors := v_errors || app.field_problem('title', 'required', 'a line needs a title or a caption');
        end if;
        v_body := jsonb_strip_nulls(jsonb_build_object('title', v_get ->> 'title', 'caption', v_get ->> 'caption', 'notes', v_get ->> 'notes'));
        if v_get ->> 'scheduledAt' is not null then
          select * into t from app.workbench_csv_parse_time(v_get ->> 'scheduledAt', v_tz);
          if not t.ok then
            v_errors := v_errors || app.field_problem('scheduled_at', 'invalid_date',
              'not a date (YYYY-MM-DD) or a date and time (YYYY-MM-DD HH:MM, in the workspace''s time zone or with an offset)');
          else
            v_body := v_body || jsonb_build_object('scheduledAt', coalesce(to_jsonb(t.planned_at), to_jsonb(t.planned_on::text)));
          end if;
        end if;
        if v_get ->> 'channels' is not null then
          select * into r from app.workbench_csv_resolve('channels', v_get ->> 'channels', 'channels');
          v_errors := v_errors || r.problems;
          v_body := v_body || jsonb_build_object('channels', to_jsonb(r.ids));
        end if;
        if v_get ->> 'tags' is not null then
          select * into r from app.workbench_csv_resolve('tags', v_get ->> 'tags', 'tags');
          v_errors := v_errors || r.problems;
          v_body := v_body || jsonb_build_object('tagIds', to_jsonb(r.ids));
        end if;
        foreach v_col in array array['pillar', 'format', 'campaign'] loop
          if v_get ->> v_col is not null then
            select * into r from app.workbench_csv_resolve(v_col, v_get ->> v_col, v_col);
            if cardinality(r.ids) > 1 then
              v_errors := v_errors || app.field_problem(v_col, 'too_many', format('one %s per line', v_col));
            end if;
            v_errors := v_errors || r.problems;
            v_body := v_body || jsonb_build_object(v_col || 'Id', r.ids[1]);
          end if;
        end loop;
        if v_get ->> 'mediaIds' is not null then
          select * into r from app.workbench_csv_resolve('media', v_get ->> 'mediaIds', 'media_ids');
          v_errors := v_errors || r.problems;
          v_body := v_body || jsonb_build_object('mediaIds', to_jsonb(r.ids));
        end if;
        -- The section, by name (made at the page's end when new), else the page's first.
        if v_get ->> 'section' is not null then
          select id into v_section from app.workbench_sections
          where page_id = v_page.id and lower(btrim(name)) = lower(v_get ->> 'section') order by position limit 1;
          if v_section is null and length(v_get ->> 'section') > 160 then
            v_errors := v_errors || app.field_problem('section', 'too_long', 'a section name has at most 160 characters');
          elsif v_section is null then
            insert into app.workbench_sections (organization_id, workspace_id, page_id, name, position)
            values (v_page.organization_id, v_page.workspace_id, v_page.id, v_get ->> 'section',
                    app.workbench_slot('sections', v_page.id, null, null, null))
            returning id into v_section;
            v_new_sections := v_new_sections || to_jsonb(v_get ->> 'section');
          end if;
        else
          if v_default_section is null then
            select id into v_default_section from app.workbench_sections where page_id = v_page.id order by position limit 1;
            if v_default_section is null then
              insert into app.workbench_sections (organization_id, workspace_id, page_id, name, position)
              values (v_page.organization_id, v_page.workspace_id, v_page.id, 'Imported', app.workbench_slot('sections', v_page.id, null, null, null))
              returning id into v_default_section;
              v_new_sections := v_new_sections || to_jsonb('Imported'::text);
            end if;
          end if;
          v_section := v_default_section;
        end if;
      end if;
      v_plan := array_append(v_plan, jsonb_build_object('line', v_line -> 'line', 'sectionId', v_section, 'body', v_body,
        'errors', v_errors));
    end loop;

    -- Possible duplicates, in one pass: the same caption (trimmed, any case) on a
    -- same channel within 24 hours of an earlier line, or of the workspace's content.
    -- Hash joins whatever the statistics say: planned while the workspace's editions were
    -- still counted as few (before autovacuum's analyze of a fresh import, say), nested
    -- loops compared every line with every edition, minutes for 5,000 of each.
    v_nestloop := current_setting('enable_nestloop');
    perform set_config('enable_nestloop', 'off', true);
    with cand as (
      select u.n, (u.p ->> 'line')::int as line, lower(btrim(u.p -> 'body' ->> 'caption')) as cap, ch::uuid as ch,
             coalesce(pl.planned_at, pl.planned_on::timestamp at time zone v_tz) as at
      from unnest(v_plan) with ordinality u (p, n)
      cross join lateral app.workbench_planned(u.p -> 'body' ->> 'scheduledAt') pl
      cross join lateral jsonb_array_elements_text(coalesce(u.p -> 'body' -> 'channels', '[]')) ch
      where jsonb_array_length(u.p -> 'errors') = 0 and u.p -> 'body' ->> 'caption' is not null and u.p -> 'body' ? 'scheduledAt'),
    existing as (
      select i.id, i.integration_id, lower(btrim(coalesce(i.caption, cr.caption))) as cap,
             coalesce(i.scheduled_at, i.intended_publish_at) as at
      from app.content_items i join app.content_roots cr on cr.id = i.root_id and cr.workspace_id = i.workspace_id
      where i.workspace_id = v_page.workspace_id and i.deleted_at is null and cr.deleted_at is null
        and coalesce(i.scheduled_at, i.intended_publish_at) is not null),
    hits as (
      select distinct on (b.n, a.line) b.n, 0 as kind, a.line as sort,
        jsonb_build_object('code', 'possible_duplicate', 'line', a.line, 'contentId', null,
          'message', format('same caption on a same channel within 24 hours as line %s', a.line)) as w
      from cand a join cand b on b.cap = a.cap and b.ch = a.ch and a.n < b.n and abs(extract(epoch from b.at - a.at)) < 86400
      union all
      select distinct on (c.n, e.id) c.n, 1, 0,
        jsonb_build_object('code', 'possible_duplicate', 'line', null, 'contentId', e.id,
          'message', 'same caption on a same channel within 24 hours as existing content')
      from cand c join existing e on e.cap = c.cap and e.integration_id = c.ch
        and e.at between c.at - interval '24 hours' and c.at + interval '24 hours')
    select jsonb_object_agg(n::text, ws) into v_warnings_by_line
    from (select n, jsonb_agg(w order by kind, sort) ws from hits group by n) g;
    perform set_config('enable_nestloop', v_nestloop, true);

    -- Keys at the end of each section, for the lines that may become rows.
    for v_section in select distinct (p ->> 'sectionId')::uuid from unnest(v_plan) p
                     where jsonb_array_length(p -> 'errors') = 0 order by 1 loop
      perform app.workbench_lock(v_section);
      v_keys := v_keys || jsonb_build_object(v_section::text, to_jsonb(app.workbench_append_keys('rows', v_section,
        (select count(*)::int from unnest(v_plan) p where jsonb_array_length(p -> 'errors') = 0 and (p ->> 'sectionId')::uuid = v_section))));
      v_used := v_used || jsonb_build_object(v_section::text, 0);
    end loop;

    -- Pass 2: each line through the row path (content rules included), in its own subtransaction.
    v_i := 0;
    foreach v_p in array v_plan loop
      v_i := v_i + 1;
      v_errors := v_p -> 'errors';
      v_warnings := coalesce(v_warnings_by_line -> v_i::text, '[]');
      v_row := null;
      if jsonb_array_length(v_errors) = 0 then
        begin
          v_k := (v_used ->> (v_p ->> 'sectionId'))::int;
          v_used := jsonb_set(v_used, array[v_p ->> 'sectionId'], to_jsonb(v_k + 1));
          v_row := app.workbench_insert_row((select s from app.workbench_sections s where s.id = (v_p ->> 'sectionId')::uuid),
                                            v_keys -> (v_p ->> 'sectionId') ->> v_k, v_p -> 'body');
        exception when others then
          get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text, v_detail = pg_exception_detail, v_hint = pg_exception_hint;
          v_err := app.workbench_error_json(v_state, v_msg, v_detail, v_hint);
          v_errors := coalesce(v_err -> 'details' -> 'fields',
            jsonb_build_array(jsonb_build_object('field', null, 'code', v_err ->> 'code', 'message', v_err ->> 'message')));
          v_row := null;
        end;
      end if;
      if jsonb_array_length(v_errors) = 0 then
        v_ok := v_ok + 1;
      else
        v_bad := v_bad + 1;
      end if;
      if jsonb_array_length(v_warnings) > 0 then
        v_dupes := v_dupes + 1;
      end if;
      v_results := array_append(v_results, jsonb_build_object('line', v_p -> 'line', 'ok', jsonb_array_length(v_errors) = 0,
        'rowId', case when not v_dry then v_row.id end, 'errors', v_errors, 'warnings', v_warnings));
    end loop;

    v_report := jsonb_build_object('dryRun', v_dry, 'allowPartial', v_partial, 'lines', v_ok + v_bad,
      'valid', v_ok, 'invalid', v_bad, 'imported', case when v_dry or (v_bad > 0 and not v_partial) then 0 else v_ok end,
      'possibleDuplicates', v_dupes, 'newSections', v_new_sections, 'ignoredColumns', v_ignored, 'results', to_jsonb(v_results));
    if v_dry or (v_bad > 0 and not v_partial) then
      raise exception using errcode = 'ZW001', message = 'workbench import dry run or refused: roll back';
    end if;
  exception when sqlstate 'ZW001' then
    null;
  end;
  if not v_dry and v_bad > 0 and not v_partial then
    perform app.raise(400, 'CSV_IMPORT_INVALID',
      format('%s of %s lines have errors; nothing was imported. Fix them, or send allowPartial to import the valid lines.', v_bad, v_ok + v_bad),
      jsonb_build_object('invalid', v_bad, 'valid', v_ok,
        'lines', (select coalesce(jsonb_agg(q.x), '[]')
                  from (select x from unnest(v_results) x where not (x ->> 'ok')::boolean limit 100) q)));
  end if;
  return v_report;
end
$function$;

CREATE OR REPLACE FUNCTION api.list_articles(p_limit integer, p_offset bigint)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ws uuid;
  v_total bigint;
  v_items jsonb;
begin
  perform app.require_role('viewer');
  select app.current_workspace_id() into v_ws;
  select count(*) into v_total
  from app.articles a join app.content_items i on i.id = a.content_item_id and i.workspace_id = a.workspace_id
  where a.workspace_id = v_ws and i.workspace_id = v_ws and i.deleted_at is null;
  select coalesce(jsonb_agg(app.article_json(x.id, false) order by x.changed desc, x.id desc), '[]') into v_items
  from (
    select a.content_item_id as id, greatest(a.updated_at, i.updated_at) as changed
    from app.articles a join app.content_items i on i.id = a.content_item_id and i.workspace_id = a.workspace_id
    where a.workspace_id = v_ws and i.workspace_id = v_ws and i.deleted_at is null
    order by changed desc, id desc
    limit p_limit offset p_offset
  ) x;
  return jsonb_build_object('articles', v_items,
    'pagination', jsonb_build_object('limit', p_limit, 'offset', p_offset, 'total', v_total,
      'hasMore', p_offset + jsonb_array_length(v_items) < v_total));
end
$function$;

CREATE OR REPLACE FUNCTION api.list_campaign_content(p_campaign_id uuid, p_limit integer, p_offset bigint, p_phase text, p_status text, p_platform text, p_sort_direction text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_campaign app.campaigns;
  v_phase uuid;
  v_none boolean := false;
  v_desc boolean := lower(coalesce(p_sort_direction, 'asc')) = 'desc';
  v_limit int := coalesce(p_limit, 100);
  v_offset bigint := coalesce(p_offset, 0);
  v_total bigint;
  v_items jsonb;
begin
  perform app.require_role('viewer');
  if v_limit not between 1 and 100 then
    perform app.raise(400, 'VALIDATION_FAILED', 'limit must be between 1 and 100.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'query.limit', 'code', 'range', 'message', 'must be between 1 and 100'))));
  end if;
  if v_offset not between 0 and 9007199254740991 then
    perform app.raise(400, 'VALIDATION_FAILED', 'offset must be between 0 and 9007199254740991.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'query.offset', 'code', 'range', 'message', 'must be between 0 and 9007199254740991'))));
  end if;
  if lower(coalesce(p_sort_direction, 'asc')) not in ('asc', 'desc') then
    perform app.raise(400, 'VALIDATION_FAILED', 'sortDirection must be asc or desc.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'query.sortDirection', 'code', 'enum', 'message', 'must be asc or desc'))));
  end if;
  if p_status is not null and p_status not in ('draft', 'pending_approval', 'rejected', 'scheduled', 'sent', 'failed', 'cancelled') then
    perform app.raise(400, 'VALIDATION_FAILED', 'Unknown status.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'query.status', 'code', 'enum', 'message', 'is not a content status'))));
  end if;
  v_campaign := app.campaign_visible(p_campaign_id);
  if nullif(p_phase, '') is not null then
    if lower(p_phase) = 'none' then
      v_none := true;
    else
      v_phase := p_phase::uuid;
      if not exists (select 1 from app.campaign_phases p where p.id = v_phase and p.campaign_id = v_campaign.id) then
        perform app.raise(404, 'NOT_FOUND', 'No phase with this id in this campaign.',
          jsonb_build_object('campaignId', v_campaign.id, 'phaseId', v_phase));
      end if;
    end if;
  end if;

  with editions as (
    select i.id, i.root_id, i.integration_id, g.platform, i.status, i.scheduled_at, i.intended_publish_at,
           i.sent_at, coalesce(i.caption, r.caption) as caption, r.title, r.organizational_title, r.phase_id,
           i.created_at, i.updated_at,
           coalesce(i.scheduled_at, i.intended_publish_at, i.created_at) as sort_at
    from app.content_items i
    join app.content_roots r on r.id = i.root_id and r.workspace_id = i.workspace_id
    join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
    where r.campaign_id = v_campaign.id
      and r.workspace_id = app.current_workspace_id() and i.workspace_id = app.current_workspace_id()
      and r.deleted_at is null and i.deleted_at is null
      and (not v_none or r.phase_id is null)
      and (v_phase is null or r.phase_id = v_phase)
      and (p_status is null or i.status = p_status)
      and (nullif(p_platform, '') is null or g.platform = p_platform)
  ),
  counted as (select e.*, count(*) over () as total from editions e),
  page as (
    select * from counted c
    order by case when not v_desc then c.sort_at end asc, case when not v_desc then c.id end asc,
             case when v_desc then c.sort_at end desc, case when v_desc then c.id end desc
    limit v_limit offset v_offset
  )
  select coalesce(jsonb_agg(jsonb_build_object(
           'id', p.id, 'rootId', p.root_id, 'integrationId', p.integration_id, 'platform', p.platform,
           'status', p.status, 'scheduledAt', p.scheduled_at, 'intendedPublishAt', p.intended_publish_at,
           'sentAt', p.sent_at, 'caption', p.caption, 'title', p.title, 'organizationalTitle', p.organizational_title,
           'phaseId', p.phase_id, 'createdAt', p.created_at, 'updatedAt', p.updated_at)
           order by case when not v_desc then p.sort_at end asc, case when not v_desc then p.id end asc,
                    case when v_desc then p.sort_at end desc, case when v_desc then p.id end desc), '[]'),
         max(p.total)
  into v_items, v_total
  from page p;
  if v_total is null then
    -- The page is empty (offset past the end, or nothing matches): count anyway.
    select count(*) into v_total
    from app.content_items i
    join app.content_roots r on r.id = i.root_id and r.workspace_id = i.workspace_id
    join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
    where r.campaign_id = v_campaign.id
      and r.workspace_id = app.current_workspace_id() and i.workspace_id = app.current_workspace_id()
      and r.deleted_at is null and i.deleted_at is null
      and (not v_none or r.phase_id is null)
      and (v_phase is null or r.phase_id = v_phase)
      and (p_status is null or i.status = p_status)
      and (nullif(p_platform, '') is null or g.platform = p_platform);
  end if;
  return jsonb_build_object('data', v_items,
    'meta', jsonb_build_object('limit', v_limit, 'offset', v_offset, 'total', v_total,
                               'hasMore', v_offset + jsonb_array_length(v_items) < v_total));
end
$function$;

CREATE OR REPLACE FUNCTION api.list_media(p_filters jsonb, p_after jsonb, p_limit integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_state text := coalesce(p_filters ->> 'state', 'active');
  v_sort text := coalesce(p_filters ->> 'sortBy', 'createdAt');
  v_desc boolean := coalesce(p_filters ->> 'order', 'desc') = 'desc';
  v_limit int := least(greatest(coalesce(p_limit, 50), 1), 100);
  v_expr text;
  v_cast text;
  v_where text := 'm.workspace_id = $1';
  v_labels uuid[];
  v_used_expr text := '(exists (select 1 from app.content_item_media cim join app.content_items ci on ci.id = cim.content_item_id and ci.workspace_id = cim.workspace_id
        where cim.media_id = m.id and ci.deleted_at is null)
     or exists (select 1 from app.content_root_media crm join app.content_roots cr on cr.id = crm.root_id and cr.workspace_id = crm.workspace_id
        where crm.media_id = m.id and cr.deleted_at is null))';
  v_rows app.media_items[];
  v_items jsonb;
  v_last app.media_items;
  v_has_more boolean;
  v_key jsonb;
begin
  perform app.require_role('viewer');
  if (p_filters ->> 'rootOnly')::boolean and p_filters ->> 'folderId' is not null then
    perform app.media_invalid('query.rootOnly', 'conflict', 'cannot be combined with folderId');
  end if;
  if (p_filters ->> 'isUnlabeled')::boolean and p_filters ? 'labelIds' then
    perform app.media_invalid('query.isUnlabeled', 'conflict', 'cannot be true together with labelIds');
  end if;
  if p_filters ? 'isUsed' and p_filters ? 'isUnused'
     and (p_filters ->> 'isUsed')::boolean = (p_filters ->> 'isUnused')::boolean then
    perform app.media_invalid('query.isUnused', 'conflict', 'contradicts isUsed');
  end if;
  case v_sort
    when 'createdAt' then v_expr := 'm.created_at'; v_cast := 'timestamptz';
    when 'filename' then v_expr := 'lower(m.filename)'; v_cast := 'text';
    when 'fileSize' then v_expr := 'm.file_size'; v_cast := 'bigint';
    else perform app.media_invalid('query.sortBy', 'enum', 'must be createdAt, filename or fileSize');
  end case;
  if v_state <> 'all' then
    v_where := v_where || ' and m.state = $2';
  end if;
  if p_filters ->> 'folderId' is not null then
    v_where := v_where || ' and m.folder_id = $3';
  end if;
  if (p_filters ->> 'rootOnly')::boolean then
    v_where := v_where || ' and m.folder_id is null';
  end if;
  if p_filters ? 'labelIds' then
    select array_agg(x::uuid) into v_labels from jsonb_array_elements_text(p_filters -> 'labelIds') x;
    v_where := v_where || ' and exists (select 1 from app.media_item_labels x where x.media_id = m.id and x.label_id = any ($4))';
  end if;
  if p_filters ? 'isUnlabeled' then
    v_where := v_where || case when (p_filters ->> 'isUnlabeled')::boolean
      then ' and not exists (select 1 from app.media_item_labels x where x.media_id = m.id)'
      else ' and exists (select 1 from app.media_item_labels x where x.media_id = m.id)' end;
  end if;
  if p_filters ? 'type' then
    v_where := v_where || ' and m.type = $5';
  end if;
  if coalesce(p_filters ->> 'search', '') <> '' then
    -- Through the trigram indexes (app.media_search_ids).
    v_where := v_where || ' and m.id = any (array(select app.media_search_ids($6)))';
  end if;
  if p_filters ? 'isFavorite' then
    v_where := v_where || ' and m.is_favorite = $7';
  end if;
  if p_filters ? 'isUsed' then
    v_where := v_where || case when (p_filters ->> 'isUsed')::boolean then ' and ' else ' and not ' end || v_used_expr;
  elsif p_filters ? 'isUnused' then
    v_where := v_where || case when (p_filters ->> 'isUnused')::boolean then ' and not ' else ' and ' end || v_used_expr;
  end if;
  if p_filters ? 'source' then
    v_where := v_where || ' and m.source = $8';
  end if;
  if p_after is not null then
    v_where := v_where || format(' and (%s, m.id) %s ($9::%s, $10::uuid)', v_expr, case when v_desc then '<' else '>' end, v_cast);
  end if;
  execute format('select array(select m from app.media_items m where %s order by %s %s, m.id %s limit $11)',
                 v_where, v_expr, case when v_desc then 'desc' else 'asc' end, case when v_desc then 'desc' else 'asc' end)
    into v_rows
    using app.current_workspace_id(), v_state, (p_filters ->> 'folderId')::uuid, v_labels, p_filters ->> 'type',
          app.media_contains_pattern(coalesce(p_filters ->> 'search', '')), (p_filters ->> 'isFavorite')::boolean,
          p_filters ->> 'source', p_after -> 'k' ->> 0, (p_after -> 'k' ->> 1)::uuid, v_limit + 1;
  v_has_more := cardinality(v_rows) > v_limit;
  if v_has_more then
    v_rows := v_rows[1:v_limit];
  end if;
  v_items := app.media_json_list(v_rows);
  if v_has_more then
    v_last := v_rows[v_limit];
    v_key := jsonb_build_array(case v_sort when 'createdAt' then to_jsonb(v_last.created_at)
                                           when 'filename' then to_jsonb(lower(v_last.filename))
                                           else to_jsonb(v_last.file_size) end, v_last.id);
  end if;
  return jsonb_build_object('items', v_items, 'hasMore', v_has_more, 'last', v_key);
end
$function$;

CREATE OR REPLACE FUNCTION api.list_webhook_log(p_id uuid, p_limit integer, p_offset integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.webhook_subscriptions := app.webhook_subscription_for_update(p_id);
begin
  if p_limit is null or p_limit not between 1 and 100 or p_offset is null or p_offset < 0 or p_offset > 100000 then
    perform app.raise(400, 'VALIDATION_FAILED', 'limit must be 1 to 100 and offset 0 to 100000.', '{}'::jsonb);
  end if;
  return jsonb_build_object(
    'data', coalesce((select jsonb_agg(jsonb_build_object('id', l.id, 'kind', l.kind, 'deliveryId', l.delivery_id,
                        'eventType', (select e.type from app.webhook_deliveries d join app.webhook_events e on e.id = d.event_id and e.workspace_id = d.workspace_id where d.id = l.delivery_id),
                        'attempt', l.attempt, 'request', l.request, 'responseStatus', l.response_status,
                        'responseExcerpt', l.response_excerpt, 'error', l.error, 'durationMs', l.duration_ms, 'createdAt', l.created_at)
                      order by l.seq desc)
                      from (select * from app.webhook_delivery_log l where l.subscription_id = v.id
                            order by l.seq desc limit p_limit offset p_offset) l), '[]'::jsonb),
    'meta', jsonb_build_object('limit', p_limit, 'offset', p_offset,
      'total', (select count(*)::int from app.webhook_delivery_log l where l.subscription_id = v.id)));
end
$function$;

CREATE OR REPLACE FUNCTION api.list_workbench_rows(p_query jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_limit int := coalesce((p_query ->> 'limit')::int, 100);
  v_offset bigint := coalesce((p_query ->> 'offset')::bigint, 0);
  v_page uuid := (p_query ->> 'pageId')::uuid;
  v_section uuid := (p_query ->> 'sectionId')::uuid;
  v_status text := p_query ->> 'status';
  v_channel uuid := (p_query ->> 'channel')::uuid;
  v_tag uuid := (p_query ->> 'tagId')::uuid;
  v_from timestamptz := (p_query ->> 'from')::timestamptz;
  v_to timestamptz := (p_query ->> 'to')::timestamptz;
  v_tz text;
  v_ids uuid[];
  v_total bigint;
begin
  perform app.require_role('viewer');
  if v_from is not null and v_to is not null and v_from > v_to then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('to', 'before_from', 'to is before from')));
  end if;
  select timezone into v_tz from app.workspaces where id = app.current_workspace_id();
  with hits as (
    select w.id, row_number() over (order by p.position, s.position, w.position) n
    from app.workbench_rows w
    join app.workbench_sections s on s.id = w.section_id and s.workspace_id = w.workspace_id
    join app.workbench_pages p on p.id = w.page_id and p.workspace_id = w.workspace_id
    left join app.content_roots r on r.id = w.content_root_id and r.deleted_at is null and r.workspace_id = w.workspace_id
    left join lateral (
      select count(*) n, bool_or(i.status = 'failed') any_failed, bool_or(i.status = 'pending_approval') any_pending,
        bool_or(i.status = 'rejected') any_rejected, bool_and(i.status = 'sent') all_sent,
        bool_and(i.status in ('scheduled', 'sent')) all_scheduled_or_sent, bool_and(i.status = 'cancelled') all_cancelled
      from app.content_items i where i.root_id = r.id and i.deleted_at is null and v_status is not null and i.workspace_id = r.workspace_id) st on true
    where w.workspace_id = app.current_workspace_id()
      and (v_page is null or w.page_id = v_page)
      and (v_section is null or w.section_id = v_section)
      and (v_status is null or app.workbench_status_of(r.id is not null, st.n, st.any_failed, st.any_pending, st.any_rejected,
                                                        st.all_sent, st.all_scheduled_or_sent, st.all_cancelled) = v_status)
      and (v_channel is null or exists (select 1 from app.content_items i
                                        where i.root_id = r.id and i.deleted_at is null and i.integration_id = v_channel and i.workspace_id = r.workspace_id))
      and (v_tag is null or exists (select 1 from app.content_root_tags t where t.root_id = w.content_root_id and t.tag_id = v_tag and t.workspace_id = w.workspace_id))
      and (v_from is null or coalesce(w.planned_at, (w.planned_on + time '23:59:59.999') at time zone v_tz) >= v_from)
      and (v_to is null or coalesce(w.planned_at, w.planned_on::timestamp at time zone v_tz) < v_to)
      and ((v_from is null and v_to is null) or w.planned_at is not null or w.planned_on is not null))
  select (select count(*) from hits),
         array(select id from hits order by n limit v_limit offset v_offset)
  into v_total, v_ids;
  return jsonb_build_object('items', app.workbench_rows_json(v_ids),
    'meta', jsonb_build_object('limit', v_limit, 'offset', v_offset, 'total', v_total, 'hasMore', v_offset + cardinality(v_ids) < v_total));
end
$function$;

CREATE OR REPLACE FUNCTION api.media_label_health()
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ws uuid := app.current_workspace_id();
begin
  perform app.require_role('viewer');
  return jsonb_build_object(
    'labelCount', (select count(*)::int from app.media_labels where workspace_id = v_ws and merged_into_id is null),
    'groupCount', (select count(*)::int from app.media_label_groups where workspace_id = v_ws),
    'ungroupedLabelCount', (select count(*)::int from app.media_labels
                            where workspace_id = v_ws and merged_into_id is null and group_id is null),
    'mergedLabelCount', (select count(*)::int from app.media_labels where workspace_id = v_ws and merged_into_id is not null),
    'unusedLabels', (select coalesce(jsonb_agg(jsonb_build_object('id', l.id, 'name', l.name) order by lower(l.name), l.id), '[]')
                     from app.media_labels l
                     where l.workspace_id = v_ws and l.merged_into_id is null
                       and not exists (select 1 from app.media_item_labels x join app.media_items m on m.id = x.media_id and m.workspace_id = x.workspace_id
                                       where x.label_id = l.id and m.state = 'active')),
    'emptyGroups', (select coalesce(jsonb_agg(jsonb_build_object('id', g.id, 'name', g.name) order by g.position, g.id), '[]')
                    from app.media_label_groups g
                    where g.workspace_id = v_ws
                      and not exists (select 1 from app.media_labels l where l.group_id = g.id and l.merged_into_id is null and l.workspace_id = g.workspace_id)),
    'similarLabels', (select coalesce(jsonb_agg(jsonb_build_object('key', s.key, 'labels', s.labels) order by s.key), '[]')
                      from (select regexp_replace(lower(l.name), '[^[:alnum:]]+', '', 'g') as key,
                                   jsonb_agg(jsonb_build_object('id', l.id, 'name', l.name) order by lower(l.name), l.id) as labels
                            from app.media_labels l
                            where l.workspace_id = v_ws and l.merged_into_id is null
                            group by 1 having count(*) > 1) s),
    'media', (select jsonb_build_object('total', t.total, 'labeled', l.labeled, 'unlabeled', t.total - l.labeled)
              from (select count(*)::int as total from app.media_items m where m.workspace_id = v_ws and m.state = 'active') t,
                   (select count(distinct x.media_id)::int as labeled from app.media_item_labels x
                    join app.media_items m on m.id = x.media_id and m.workspace_id = x.workspace_id
                    where x.workspace_id = v_ws and m.state = 'active') l));
end
$function$;

CREATE OR REPLACE FUNCTION api.media_label_usage()
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
begin
  perform app.require_role('viewer');
  return (
    select coalesce(jsonb_agg(jsonb_build_object('labelId', l.id, 'name', l.name, 'groupId', l.group_id,
             'mediaCount', c.active, 'binnedMediaCount', c.binned, 'lastAssignedAt', c.last_at)
           order by c.active desc, lower(l.name), l.id), '[]')
    from app.media_labels l
    cross join lateral (
      select count(*) filter (where m.state = 'active')::int as active,
             count(*) filter (where m.state = 'deleted')::int as binned,
             max(x.created_at) as last_at
      from app.media_item_labels x join app.media_items m on m.id = x.media_id and m.workspace_id = x.workspace_id
      where x.label_id = l.id) c
    where l.workspace_id = app.current_workspace_id() and l.merged_into_id is null);
end
$function$;

CREATE OR REPLACE FUNCTION api.pull_content_into_workbench(p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  s app.workbench_sections;
  v_refs jsonb := '[]';
  v_ref jsonb;
  v_root app.content_roots;
  v_keys text[];
  v_n int := 0;
  v_ok int := 0;
  v_results jsonb[] := '{}';
  v_row app.workbench_rows;
  v_existing uuid;
  v_at timestamptz;
  v_state text; v_msg text; v_detail text; v_hint text;
begin
  perform app.require_role('editor');
  v_refs := coalesce((select jsonb_agg(jsonb_build_object('rootId', e #>> '{}')) from jsonb_array_elements(p_body -> 'rootIds') e), '[]')
         || coalesce((select jsonb_agg(jsonb_build_object('contentId', e #>> '{}')) from jsonb_array_elements(p_body -> 'contentIds') e), '[]');
  if jsonb_array_length(v_refs) = 0 then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('rootIds', 'required', 'give rootIds or contentIds')));
  end if;
  perform app.workbench_lock((p_body ->> 'sectionId')::uuid);
  s := app.workbench_section_for_update((p_body ->> 'sectionId')::uuid);
  v_keys := app.workbench_append_keys('rows', s.id, jsonb_array_length(v_refs));
  for v_ref in select e from jsonb_array_elements(v_refs) e loop
    begin
      if v_ref ? 'contentId' then
        select r.* into v_root from app.content_items i join app.content_roots r on r.id = i.root_id and r.workspace_id = i.workspace_id
        where i.id = (v_ref ->> 'contentId')::uuid and i.workspace_id = app.current_workspace_id() and i.deleted_at is null and r.deleted_at is null;
        if v_root.id is null then
          perform app.raise_not_found('content', (v_ref ->> 'contentId')::uuid);
        end if;
      else
        select * into v_root from app.content_roots r
        where r.id = (v_ref ->> 'rootId')::uuid and r.workspace_id = app.current_workspace_id() and r.deleted_at is null;
        if v_root.id is null then
          perform app.raise_not_found('content root', (v_ref ->> 'rootId')::uuid);
        end if;
      end if;
      select id into v_existing from app.workbench_rows where content_root_id = v_root.id;
      if v_existing is not null then
        perform app.raise(409, 'ALREADY_IN_WORKBENCH', 'This content already has a row in the workbench.',
          jsonb_build_object('rootId', v_root.id, 'rowId', v_existing));
      end if;
      v_at := (select min(coalesce(i.scheduled_at, i.intended_publish_at)) from app.content_items i
               where i.root_id = v_root.id and i.deleted_at is null);
      insert into app.workbench_rows (organization_id, workspace_id, page_id, section_id, position, title, planned_at, content_root_id, created_by)
      values (s.organization_id, s.workspace_id, s.page_id, s.id, v_keys[v_n + 1],
              left(coalesce(v_root.organizational_title, v_root.title), 500), v_at, v_root.id, app.current_user_id())
      returning * into v_row;
      v_results := array_append(v_results, (v_ref || jsonb_build_object('index', v_n, 'ok', true, 'rowId', v_row.id, 'error', null)));
      v_ok := v_ok + 1;
    exception when others then
      get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text, v_detail = pg_exception_detail, v_hint = pg_exception_hint;
      v_results := array_append(v_results, (v_ref || jsonb_build_object('index', v_n, 'ok', false, 'row', null,
        'error', app.workbench_error_json(v_state, v_msg, v_detail, v_hint))));
    end;
    v_root := null;
    v_existing := null;
    v_n := v_n + 1;
  end loop;
  return jsonb_build_object('succeeded', v_ok, 'failed', v_n - v_ok, 'results', app.workbench_fill_rows(v_results));
end
$function$;

CREATE OR REPLACE FUNCTION api.review_history_content(p_content_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
begin
  perform app.require_role('viewer');
  if not exists (select 1 from app.content_items where id = p_content_id and workspace_id = app.current_workspace_id()) then
    perform app.raise_not_found('content', p_content_id);
  end if;
  return coalesce((select jsonb_agg(app.review_item_json(row(r.*)::app.reviews, row(it.*)::app.review_items)
                      || jsonb_build_object('reviewTitle', r.title, 'reviewStatus', r.status) order by it.created_at desc, it.id desc)
                   from app.review_items it join app.reviews r on r.id = it.review_id and r.workspace_id = it.workspace_id
                   where it.content_id = p_content_id), '[]');
end
$function$;

CREATE OR REPLACE FUNCTION api.review_link_get()
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  l app.review_links := app.review_link_context();
  r app.reviews;
begin
  select * into r from app.reviews where id = l.review_id;
  return jsonb_build_object(
    'review', jsonb_build_object('id', r.id, 'title', r.title, 'message', r.message, 'status', r.status, 'dueAt', r.due_at),
    'reviewer', jsonb_build_object('email', l.email, 'name', l.name, 'expiresAt', l.expires_at),
    'items', coalesce((select jsonb_agg(jsonb_build_object('id', it.id, 'contentId', it.content_id, 'state', it.state,
        'currentStage', it.current_stage, 'currentStageName', case when it.state = 'pending' then r.stages -> it.current_stage ->> 'name' end,
        'awaitingYou', ('client:' || l.email) = any (it.waiting_on),
        'platform', g.platform, 'channelName', g.name,
        'caption', coalesce(i.caption, cr.caption),
        'thread', (select coalesce(jsonb_agg(jsonb_build_object('caption', coalesce(e ->> 'caption', ''),
                     'media', app.review_link_media_json(app.jsonb_uuids(coalesce(e -> 'mediaIds', '[]')))) order by n), '[]')
                   from jsonb_array_elements(i.thread) with ordinality t (e, n)),
        'scheduledAt', coalesce(i.scheduled_at, i.intended_publish_at),
        'media', app.review_link_media_json(app.content_item_media_ids(i.id, i.root_id, i.own_media))) order by it.created_at, it.id)
      from app.review_items it
      join app.content_items i on i.id = it.content_id and i.workspace_id = it.workspace_id
      join app.content_roots cr on cr.id = i.root_id and cr.workspace_id = i.workspace_id
      join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
      where it.review_id = r.id and it.state <> 'removed'), '[]'));
end
$function$;

CREATE OR REPLACE FUNCTION api.schedule_workbench_rows(p_body jsonb, p_dry_run boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET enable_seqscan TO 'off'
AS $function$
declare
  c_chunk constant int := 50;
  v_n int;
  v_row_ids uuid[];
  v_ok boolean[];          -- the row passed its own checks: it goes in a chunk
  v_at timestamptz[];
  v_eds jsonb[];           -- per row: [[contentId, integrationId], ...] in channel order
  v_out jsonb[];           -- per row: its results (a jsonb array)
  v_good boolean[];        -- per row: scheduled (or valid)
  v_scheduled uuid[] := '{}';
  v_from int;
  v_to int;
  v_e jsonb;
  v_r jsonb;
  v_fallback boolean;
  v_results jsonb[] := '{}';
  v_rows_ok int := 0;
  v_channels_ok int := 0;
  v_channels_failed int := 0;
begin
  perform app.require_role('editor');
  -- The rows and their live editions (in channel order), in one statement.
  with x as (
    select (e #>> '{}')::uuid as id, n from jsonb_array_elements(p_body -> 'rowIds') with ordinality e (e, n)
  ), w as (
    select x.n, x.id, r.id as found, r.content_root_id, r.planned_at
    from x left join app.workbench_rows r on r.id = x.id and r.workspace_id = app.current_workspace_id()
  ), ed as (
    select i.root_id, jsonb_agg(jsonb_build_array(i.id, i.integration_id) order by g.created_at, g.id) as eds
    from app.content_items i join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
    where i.root_id in (select content_root_id from w where content_root_id is not null) and i.deleted_at is null
    group by i.root_id
  ), live as (
    select c.id from app.content_roots c
    where c.id in (select content_root_id from w where content_root_id is not null) and c.deleted_at is null
  )
  select count(*)::int, array_agg(w.id order by w.n),
         array_agg(w.found is not null and w.planned_at is not null and l.id is not null and ed.eds is not null order by w.n),
         array_agg(w.planned_at order by w.n), array_agg(ed.eds order by w.n)
  into v_n, v_row_ids, v_ok, v_at, v_eds
  from w left join live l on l.id = w.content_root_id left join ed on ed.root_id = w.content_root_id;
  v_out := array_fill(null::jsonb, array[v_n]);
  v_good := array_fill(false, array[v_n]);
  -- The rows that fail their own checks take the careful path (their own error).
  for k in 1 .. v_n loop
    if not v_ok[k] then
      v_r := app.workbench_schedule_row(v_row_ids[k], p_dry_run);
      v_out[k] := v_r -> 'results';
      v_good[k] := (v_r ->> 'ok')::boolean;
    end if;
  end loop;
  -- The others in chunks: no subtransaction per row or edition while nothing fails; a chunk in
  -- which something failed is rolled back and its rows take the careful path, one by one.
  v_from := 1;
  while v_from <= v_n loop
    v_to := least(v_n, v_from + c_chunk - 1);
    v_fallback := false;
    begin
      -- The chunk's editions in one app.schedule_editions: one lock, one update, the rules of each.
      perform app.schedule_editions(array_agg((e ->> 0)::uuid), array_agg(v_at[k]))
      from generate_series(v_from, v_to) k, jsonb_array_elements(v_eds[k]) e
      where v_ok[k]
      having count(*) > 0;
      if p_dry_run then
        raise exception using errcode = 'ZW001', message = 'workbench dry run: roll back';
      end if;
    exception
      when sqlstate 'ZW001' then
        null;
      when others then
        v_fallback := true;
    end;
    for k in v_from .. v_to loop
      if v_ok[k] then
        if v_fallback then
          v_r := app.workbench_schedule_row(v_row_ids[k], p_dry_run);
          v_out[k] := v_r -> 'results';
          v_good[k] := (v_r ->> 'ok')::boolean;
        else
          v_out[k] := (select jsonb_agg(jsonb_build_object('rowId', v_row_ids[k], 'contentId', e ->> 0, 'integrationId', e ->> 1,
                         'outcome', case when p_dry_run then 'valid' else 'scheduled' end, 'error', null))
                       from jsonb_array_elements(v_eds[k]) e);
          v_good[k] := true;
        end if;
      end if;
    end loop;
    v_from := v_to + 1;
  end loop;
  for k in 1 .. v_n loop
    if v_good[k] then
      v_rows_ok := v_rows_ok + 1;
    end if;
    for v_r in select jsonb_array_elements(v_out[k]) loop
      v_results := v_results || v_r;
      if v_r ->> 'outcome' in ('scheduled', 'valid') then
        v_channels_ok := v_channels_ok + 1;
      elsif v_r ->> 'outcome' = 'failed' then
        v_channels_failed := v_channels_failed + 1;
      end if;
      if v_r ->> 'outcome' = 'scheduled' then
        v_scheduled := v_scheduled || (v_r ->> 'contentId')::uuid;
      end if;
    end loop;
  end loop;
  -- The scheduled feed-grid tiles of each channel placed in one pass (the deferred trigger then
  -- finds them in order).
  if not p_dry_run and cardinality(v_scheduled) > 0 then
    perform app.grid_place_editions(v_scheduled);
  end if;
  return jsonb_build_object('dryRun', p_dry_run, 'rows', v_n, 'rowsOk', v_rows_ok, 'rowsFailed', v_n - v_rows_ok,
    'channelsOk', v_channels_ok, 'channelsFailed', v_channels_failed, 'results', to_jsonb(v_results));
end
$function$;

CREATE OR REPLACE FUNCTION api.submit_reviews(p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_request text := p_body ->> 'requestId';
  v_principal text := coalesce(app.current_approver_key(), 'anonymous');
  v_stored jsonb;
  v_item jsonb;
  v_res jsonb;
  v_results jsonb := '[]';
  v_group record;
  r app.reviews;
  v_send jsonb;
  v_choice text;
  v_resolutions jsonb := '[]';
begin
  perform app.require_role('editor');
  if v_request is not null then
    select results into v_stored from app.review_submissions
    where workspace_id = app.current_workspace_id() and principal_key = v_principal and request_id = v_request;
    if v_stored is not null then
      return v_stored || jsonb_build_object('replayed', true);
    end if;
  end if;
  perform app.require_content_ids(array(select (e ->> 'contentId')::uuid from jsonb_array_elements(p_body -> 'items') e));
  -- Check every item first: all or nothing.
  for v_item in select e from jsonb_array_elements(p_body -> 'items') e loop
    v_res := app.content_resolution((v_item ->> 'contentId')::uuid);
    v_choice := v_item -> 'choice' ->> 'type';
    if v_item ? 'contentVersion' and (v_item ->> 'contentVersion')::int <> (v_res ->> 'contentVersion')::int then
      perform app.raise(409, 'REVIEW_SUBMIT_STALE',
        'The content changed since it was resolved; resolve again and resubmit.',
        jsonb_build_object('contentId', v_item ->> 'contentId', 'contentVersion', (v_res ->> 'contentVersion')::int,
                           'expectedVersion', (v_item ->> 'contentVersion')::int, 'resolutions', jsonb_build_array(v_res)));
    end if;
    if v_choice = 'none' and (v_res ->> 'reviewRequired')::boolean and not (v_res ->> 'approved')::boolean
       and v_item ->> 'action' in ('schedule', 'publish_now') then
      v_resolutions := v_resolutions || v_res;
    end if;
    if v_choice = 'workflow' and not exists (
         select 1 from app.approval_workflows w
         join app.content_items i on i.id = (v_item ->> 'contentId')::uuid
         join app.content_roots cr on cr.id = i.root_id and cr.workspace_id = i.workspace_id
         where w.id = (v_item -> 'choice' ->> 'workflowId')::uuid and w.workspace_id = app.current_workspace_id() and w.active
           and app.workflow_matches(w.match, i.integration_id, v_res ->> 'platform',
                 array(select t.tag_id from app.content_root_tags t where t.root_id = cr.id and t.workspace_id = cr.workspace_id), cr.campaign_id)) then
      perform app.raise(409, 'REVIEW_WORKFLOW_UNAVAILABLE',
        'The chosen workflow is inactive, gone, or no longer matches this channel; resolve again.',
        jsonb_build_object('contentId', v_item ->> 'contentId', 'workflowId', v_item -> 'choice' ->> 'workflowId',
                           'resolutions', jsonb_build_array(v_res)));
    end if;
  end loop;
  if jsonb_array_length(v_resolutions) > 0 then
    perform app.raise(409, 'REVIEW_REQUIRED',
      'This workspace requires review for these channels; choose a workflow or custom stages.',
      jsonb_build_object('resolutions', v_resolutions));
  end if;
  -- One review per group, sent at once.
  for v_group in
    select min(e ->> 'group') as grp, min(e -> 'choice' ->> 'type') as kind, min(e -> 'choice' ->> 'workflowId') as workflow_id,
           count(distinct coalesce(e -> 'choice' ->> 'type', '') || coalesce(e -> 'choice' ->> 'workflowId', '')
                   || coalesce((e -> 'choice' -> 'stages')::text, '')) as variants,
           (array_agg(e -> 'choice' -> 'stages'))[1] as stages,
           jsonb_agg(e ->> 'contentId' order by n) as content_ids
    from jsonb_array_elements(p_body -> 'items') with ordinality t (e, n)
    where e -> 'choice' ->> 'type' in ('workflow', 'custom')
    group by coalesce('group:' || (e ->> 'group'), 'item:' || n)  -- an item without a group is a group of its own
    order by min(n)
  loop
    if v_group.variants > 1 then
      perform app.raise_field_problems(jsonb_build_array(app.field_problem('items', 'mixed_group',
        format('every item of group %s must make the same choice', coalesce(v_group.grp, '(none)')))),
        'Every item of a group must make the same choice.');
    end if;
    r := app.review_new(coalesce(p_body ->> 'title', 'Review'), p_body ->> 'message', (p_body ->> 'dueAt')::timestamptz,
      case when v_group.kind = 'workflow' then v_group.workflow_id::uuid end,
      case when v_group.kind = 'custom' then v_group.stages end);
    for v_item in select x from jsonb_array_elements(v_group.content_ids) x loop
      perform app.review_add_item(r, (v_item #>> '{}')::uuid);
    end loop;
    v_send := app.review_send(r);
    for v_item in select x from jsonb_array_elements(v_group.content_ids) x loop
      v_results := v_results || jsonb_build_object('contentId', v_item #>> '{}', 'group', v_group.grp, 'outcome', 'review_sent',
        'reviewId', r.id, 'itemId', (select id from app.review_items where review_id = r.id and content_id = (v_item #>> '{}')::uuid),
        'links', v_send -> 'links');
    end loop;
  end loop;
  -- Items without review: their action runs now (the content rules still apply).
  for v_item in select e from jsonb_array_elements(p_body -> 'items') e where e -> 'choice' ->> 'type' = 'none' loop
    if v_item ->> 'action' = 'schedule' then
      perform api.schedule_content((v_item ->> 'contentId')::uuid, (v_item ->> 'scheduledAt')::timestamptz);
    elsif v_item ->> 'action' = 'publish_now' then
      perform api.publish_content((v_item ->> 'contentId')::uuid);
    end if;
    v_results := v_results || jsonb_build_object('contentId', v_item ->> 'contentId', 'group', null,
      'outcome', coalesce(v_item ->> 'action', 'draft'), 'reviewId', null, 'itemId', null, 'links', '[]'::jsonb);
  end loop;
  v_stored := jsonb_build_object('requestId', v_request, 'results', v_results, 'replayed', false);
  if v_request is not null then
    insert into app.review_submissions (workspace_id, organization_id, request_id, principal_key, results)
    values (app.current_workspace_id(), app.current_organization_id(), v_request, v_principal, v_stored - 'replayed');
  end if;
  return v_stored;
end
$function$;

-- A channel's JSON reads its connection first, then the channel: the connection helper reads
-- tables, and called per row inside the query on app.integrations it ran on the shard, where
-- Citus refuses it ("cannot execute a distributed query from a query on a shard"). For the same
-- reason the channel list reads its ids, then builds each channel's JSON.
CREATE OR REPLACE FUNCTION app.integration_json(p_id uuid, p_detail boolean DEFAULT false)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
declare
  v_ws uuid;
  v_connection jsonb;
begin
  select workspace_id into v_ws from app.integrations where id = p_id;
  if v_ws is null then
    return null;
  end if;
  v_connection := app.integration_connection_json(p_id, v_ws);
  return (
    select jsonb_build_object(
      'id', i.id,
      'connector', i.connector,
      'platform', i.platform,
      'name', i.name,
      'username', i.username,
      'status', i.status,
      'content', jsonb_build_object('canPublishArticles', coalesce((p.capabilities ->> 'canPublishArticles')::boolean, false)),
      'createdAt', i.created_at,
      'updatedAt', i.updated_at)
      || v_connection
      || case when p_detail then jsonb_build_object(
        'platformName', p.name,
        'rules', app.platform_rules_json(i.platform),
        'capabilities', app.platform_capabilities_json(i.platform),
        'settings', i.settings,
        'webhookUrl', i.webhook_url)
      else '{}'::jsonb end
    from app.integrations i
    join app.platforms p on p.code = i.platform
    where i.id = p_id and i.workspace_id = v_ws
  );
end
$function$;

CREATE OR REPLACE FUNCTION api.list_integrations()
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ids uuid[];
begin
  perform app.require_role('viewer');
  v_ids := array(select i.id from app.integrations i
                 where i.workspace_id = app.current_workspace_id() and i.deleted_at is null
                 order by i.created_at, i.id);
  return (select coalesce(jsonb_agg(app.integration_json(x) order by n), '[]') from unnest(v_ids) with ordinality u (x, n));
end
$function$;

-- Two joins the pass above does not rewrite: the channel join api.list_content adds to its query
-- text when sorting by platform, and app.grid_mark_sent's joins to its edition (a derived table,
-- select * of app.content_items, so it has workspace_id).
CREATE OR REPLACE FUNCTION api.list_content(p_query jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_limit int := coalesce((p_query ->> 'limit')::int, 20);
  v_offset bigint := coalesce((p_query ->> 'offset')::bigint, 0);
  v_since timestamptz := (p_query ->> 'since')::timestamptz;
  v_status text := p_query ->> 'status';
  v_workflow text[];
  v_integration uuid := (p_query ->> 'integrationId')::uuid;
  v_from timestamptz := (p_query ->> 'scheduledFrom')::timestamptz;
  v_to timestamptz := (p_query ->> 'scheduledTo')::timestamptz;
  v_review boolean := coalesce((p_query ->> 'includeReviewLifecycle')::boolean, false);
  v_sort text := coalesce(p_query ->> 'sortBy', 'updatedAt');
  v_dir text := coalesce(p_query ->> 'sortDirection', case when v_since is not null then 'asc' else 'desc' end);
  v_live text := 'i.deleted_at is null';
  v_where text := 'i.workspace_id = $1';
  v_join text := '';
  v_order text;
  v_total bigint;
  v_ids uuid[];
  -- reviews: the reviewLifecycle* filters (migration 000010, split 10c-content-review-filters.sql)
  v_lc jsonb := jsonb_strip_nulls(jsonb_build_object(
    'phase', p_query -> 'reviewLifecyclePhase', 'state', p_query -> 'reviewLifecycleState',
    'actor', p_query -> 'reviewLifecycleActor', 'nextAction', p_query -> 'reviewLifecycleNextAction',
    'blocker', p_query -> 'reviewLifecycleBlocker', 'blocksPublishing', p_query -> 'reviewLifecycleBlocksPublishing',
    'batchId', p_query -> 'reviewLifecycleBatchId', 'itemId', p_query -> 'reviewLifecycleItemId'));
begin
  perform app.require_role('viewer');
  if v_from is not null and v_to is not null and v_to <= v_from then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('scheduledTo', 'before_start', 'scheduledTo must be after scheduledFrom')),
      'The request is not valid; see details.fields.');
  end if;
  if jsonb_typeof(p_query -> 'workflowStatuses') = 'array' then
    v_workflow := array(select distinct btrim(s) from jsonb_array_elements_text(p_query -> 'workflowStatuses') e,
                        regexp_split_to_table(e, ',') s where btrim(s) <> '');
  elsif p_query ->> 'workflowStatuses' is not null then
    v_workflow := array(select distinct btrim(s) from regexp_split_to_table(p_query ->> 'workflowStatuses', ',') s where btrim(s) <> '');
  elsif p_query ->> 'workflowStatus' is not null then
    v_workflow := array[p_query ->> 'workflowStatus'];
  end if;
  v_dir := case when lower(v_dir) = 'asc' then 'asc' else 'desc' end;
  -- Filters of live editions; without any, the default statuses.
  if v_status is not null then
    v_live := v_live || ' and i.status = $3';
  end if;
  if v_workflow is not null then
    -- The statuses the workflow statuses cover narrow the scan (an index
    -- serves them); only when exactly one of scheduled/publishing is asked
    -- does a plain comparison of scheduled_at split them (the same rule as
    -- app.content_workflow_status, written so the planner can use an index).
    v_live := v_live || format(' and i.status = any (%L::text[])',
      array(select distinct case w when 'in_review' then 'pending_approval' when 'changes_requested' then 'rejected'
                                   when 'publishing' then 'scheduled' when 'published' then 'sent' else w end
            from unnest(v_workflow) w));
    if 'scheduled' = any (v_workflow) and not 'publishing' = any (v_workflow) then
      v_live := v_live || $w$ and (i.status <> 'scheduled' or i.scheduled_at > now() or i.scheduled_at is null)$w$;
    elsif 'publishing' = any (v_workflow) and not 'scheduled' = any (v_workflow) then
      v_live := v_live || $w$ and (i.status <> 'scheduled' or i.scheduled_at <= now())$w$;
    end if;
  end if;
  if v_status is null and v_workflow is null and v_lc = '{}' then
    v_live := v_live || $w$ and i.status in ('draft', 'scheduled', 'sent', 'failed')$w$;
  end if;
  -- reviews: any reviewLifecycle filter opts review-held content in and adds reviewLifecycle to items.
  if v_lc <> '{}' then
    v_review := true;
    v_live := v_live || ' and app.content_review_lifecycle_matches(row(i.*)::app.content_items, $8)';
  end if;
  if v_integration is not null then
    v_where := v_where || ' and i.integration_id = $5';
  end if;
  -- the time range of the calendar (db/migrations/committed/000019-webhooks-retention-batched-delivery-content-check-and-time-range.sql)
  if v_from is not null then
    v_live := v_live || ' and i.scheduled_at >= $9';
  end if;
  if v_to is not null then
    v_live := v_live || ' and i.scheduled_at < $10';
  end if;
  if v_since is not null then
    v_where := v_where || format(' and ((%s and i.updated_at > $2) or (i.deleted_at is not null and i.deleted_at > $2))', v_live);
  else
    v_where := v_where || ' and ' || v_live;
  end if;
  v_order := case v_sort
    when 'createdAt' then format('i.created_at %s, i.id %s', v_dir, v_dir)
    when 'scheduledAt' then format('i.scheduled_at %s nulls last, i.id %s', v_dir, v_dir)
    when 'status' then format('i.status %s, i.updated_at desc, i.id %s', v_dir, v_dir)
    when 'platform' then format('g.platform %s, i.updated_at desc, i.id %s', v_dir, v_dir)
    else format('i.updated_at %s, i.id %s', v_dir, v_dir)
  end;
  if v_sort = 'platform' then
    v_join := 'join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id';
  end if;
  -- The total: from the per-workspace counters when the query allows it
  -- (app.content_list_total), else an exact count of the filtered set.
  v_total := app.content_list_total(p_query);
  if v_total is null then
    execute format('select count(*) from app.content_items i where %s', v_where)
    into v_total
    using app.current_workspace_id(), v_since, v_status, v_workflow, v_integration, null::int, null::bigint, v_lc, v_from, v_to;
  end if;
  execute format('select array(select i.id from app.content_items i %s where %s order by %s limit $6 offset $7)',
                 v_join, v_where, v_order)
  into v_ids
  using app.current_workspace_id(), v_since, v_status, v_workflow, v_integration, v_limit, v_offset, v_lc, v_from, v_to;
  return jsonb_build_object('items', (select app.content_list_items_json(v_ids, v_review)),
    'meta', jsonb_build_object('limit', v_limit, 'offset', v_offset, 'total', v_total,
                               'hasMore', v_offset + cardinality(v_ids) < v_total));
end
$function$;

CREATE OR REPLACE FUNCTION app.grid_mark_sent(p_ids uuid[])
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
 SET enable_seqscan TO 'off'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
declare
  v_inserted bigint; -- rows of the INSERT ... SELECTs below (see this migration)
  v_keep uuid[];   -- tiles that stay, published (their key taken off)
  v_drop uuid[];   -- tiles that go (not a live post of a feed-grid channel, or of another channel)
  v_add uuid[];    -- editions that get a published tile
begin
  -- What app.grid_place_edition does for a sent edition, for many at once: a published
  -- tile (no key) on a feed-grid channel's live post edition, no tile otherwise. One
  -- look-up by key per edition decides; each change is one statement by id, usually
  -- only the first.
  select array_agg(t.id) filter (where x.eligible and t.integration_id = i.integration_id and t.position_key is not null),
         array_agg(t.id) filter (where t.id is not null and not (x.eligible and t.integration_id = i.integration_id)),
         array_agg(i.id order by i.id) filter (where x.eligible and (t.id is null or t.integration_id <> i.integration_id))
  into v_keep, v_drop, v_add
  from unnest(p_ids) u (id)
  -- Looked up by id alone (offset 0 keeps the status test out of the look-up): a plan may
  -- otherwise walk the partial index of sent editions, filtering on the id.
  cross join lateral (select * from app.content_items i where i.id = u.id offset 0) i
  join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
  left join app.platforms p on p.code = g.platform
  left join app.grid_tiles t on t.content_item_id = i.id and t.workspace_id = i.workspace_id
  cross join lateral (select i.deleted_at is null and i.kind = 'post' and coalesce(p.feed_grid, false) as eligible) x
  where i.status = 'sent';
  if v_drop is not null then
    delete from app.grid_tiles where id = any (v_drop);
  end if;
  if v_keep is not null then
    update app.grid_tiles set position_key = null where id = any (v_keep);
  end if;
  if v_add is not null then
    with inserted as (
      insert into app.grid_tiles (organization_id, workspace_id, integration_id, content_item_id, created_by)
      select i.organization_id, i.workspace_id, i.integration_id, i.id, i.created_by
      from unnest(v_add) u (id) join app.content_items i on i.id = u.id
      order by i.id
      returning 1)
    select count(*) into v_inserted from inserted;
  end if;
end
$function$;
