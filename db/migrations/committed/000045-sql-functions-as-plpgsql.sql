--! Previous: sha1:eaf3008482c25b83644e5f8e42e14226e638dbd7
--! Hash: sha1:4d8878a45026aa5b4c25af10a3e8ab0b72193f26
--! Message: sql functions as plpgsql

--! split: 05-sql-functions-as-plpgsql.sql
-- The SQL functions that read or write tables become PL/pgSQL, with the same behaviour.
--
-- Citus cannot plan a LANGUAGE sql function that has parameters and reads a table when
-- PostgreSQL does not inline it: the query reaches Citus's planner with the parameters in
-- it and fails with "could not create distributed plan ... Possibly this is caused by the
-- use of parameters in SQL functions, which is not supported in Citus. Consider using
-- PL/pgSQL functions instead." (docs/citus.md). PL/pgSQL runs each query as a prepared
-- statement with the parameters bound, which Citus plans.
--
-- Each function of app and api that is LANGUAGE sql, has a parameter and reads or writes a
-- table of app, audit or pgboss is replaced here by its effective definition with only
-- the language and the body changed: the signature, parameter names, defaults, return
-- type, volatility, STRICT, SECURITY DEFINER, SET clauses and PARALLEL are as they were,
-- and CREATE OR REPLACE keeps the owner, grants and comment. In each body:
--   - "#variable_conflict use_column": a name that is both a column and a parameter (or an
--     OUT column of RETURNS TABLE) means the column, as it did in the SQL function;
--   - a set-returning function returns its query (RETURN QUERY);
--   - a scalar function returns its query as a scalar subquery (no row: null);
--   - app.route_channel, which returns a row of app.approval_workflows, selects its first
--     row INTO a variable of that type and, when there is none, returns null as the SQL
--     function did (not the variable, which would be a row of nulls); app.inbox_rule's
--     query already yields one column of its row type: it is returned as a scalar subquery;
--   - app.sandbox_edit_caption's query is a data-modifying WITH, which cannot be a
--     subquery: the statement itself, its result INTO a variable;
--   - a void function runs its statement.
-- The SQL text is otherwise the original's.
--
-- Left as SQL: the set-returning functions PostgreSQL inlines into the caller's FROM
-- (LANGUAGE sql, a single SELECT, not SECURITY DEFINER, no SET clause, not VOLATILE, not
-- STRICT). Inlined, their parameters become the caller's expressions, so Citus never sees
-- a parameterised SQL function; as PL/pgSQL they would lose the inlining (the caller's
-- filters and joins would no longer reach into them):
--   app.content_recurring_metadata_batch(p_root_ids uuid[])
--   app.grid_ordered(p_integration_id uuid)
--   app.series_occurrence_times(s app.recurring_series, p_from integer, p_max integer)
-- (app.series_occurrence_times reads no table itself: it calls app.recurrence_local_times,
-- which computes.)

CREATE OR REPLACE FUNCTION api.atproto_oauth_state_get(p_key_hash bytea)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object('ciphertext', encode(s.ciphertext, 'base64'), 'keyVersion', s.key_version)
    from app.atproto_oauth_states s where s.key_hash = p_key_hash and s.expires_at > now()
  );
end
$function$;

CREATE OR REPLACE FUNCTION api.idempotency_finish(p_method text, p_route text, p_key text, p_status integer, p_body jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
begin
  update app.idempotency_keys set state = 'done', response_status = p_status, response_body = p_body
  where workspace_id = app.current_workspace_id() and principal_id = app.current_principal_id()
    and method = p_method and route = p_route and key = p_key and state = 'in_flight';
end
$function$;

CREATE OR REPLACE FUNCTION api.idempotency_release(p_method text, p_route text, p_key text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
begin
  delete from app.idempotency_keys
  where workspace_id = app.current_workspace_id() and principal_id = app.current_principal_id()
    and method = p_method and route = p_route and key = p_key and state = 'in_flight';
end
$function$;

CREATE OR REPLACE FUNCTION api.login_lookup(p_email text)
 RETURNS TABLE(user_id uuid, password_hash text)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return query
  select id, password_hash from app.users
  where lower(email) = lower(p_email) and status = 'active';
end
$function$;

CREATE OR REPLACE FUNCTION api.storage_media_object(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(
      (select jsonb_build_object('id', m.id, 'storageKey', m.storage_key, 'contentType', m.content_type,
         'filename', m.filename, 'fileSize', m.file_size, 'checksumSha256', m.checksum_sha256)
       from app.media_items m where m.id = p_id),
      (select jsonb_build_object('id', a.id, 'storageKey', a.storage_key, 'contentType', a.content_type,  -- reviews
         'filename', a.filename, 'fileSize', a.file_size, 'checksumSha256', a.checksum_sha256)
       from app.review_attachments a where a.id = p_id and a.state = 'completed'))
  );
end
$function$;

CREATE OR REPLACE FUNCTION api.storage_report_object(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object('id', r.id, 'storageKey', r.storage_key, 'contentType', 'application/pdf',
      'filename', format('analytics-%s-%s.pdf', r.period_from, r.period_to), 'fileSize', r.file_size,
      'checksumSha256', r.checksum_sha256)
    from app.analytics_reports r where r.id = p_id and r.status = 'ready'
  );
end
$function$;

CREATE OR REPLACE FUNCTION api.storage_upload_session(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(
      (select jsonb_build_object('sessionId', s.id, 'state', s.state, 'storageKey', s.storage_key,
         'declaredSize', s.declared_size, 'contentType', s.content_type, 'expiresAt', s.expires_at,
         'expired', s.expires_at <= now())
       from app.media_upload_sessions s where s.id = p_id),
      (select jsonb_build_object('sessionId', a.id, 'state', a.state, 'storageKey', a.upload_key,  -- reviews
         'declaredSize', a.declared_size, 'contentType', a.content_type, 'expiresAt', a.expires_at,
         'expired', a.expires_at <= now())
       from app.review_attachments a where a.id = p_id))
  );
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
      left join app.integration_sync_state s on s.integration_id = g.id
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
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.analytics_expired_reports(p_limit integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(jsonb_agg(jsonb_build_object('id', r.id, 'storageKey', r.storage_key)), '[]'::jsonb)
    from (select r.id, r.storage_key from app.analytics_reports r
          where r.status in ('ready', 'failed')
            and r.finished_at < now() - make_interval(days => app.setting_int('analytics_report_retention_days'))
          order by r.finished_at limit greatest(1, least(p_limit, 1000))) r
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.analytics_followers(p_workspace_id uuid, p_day date, p_ids uuid[])
 RETURNS bigint
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(sum(f.followers), 0)::bigint from (
      select distinct on (m.integration_id) m.followers
      from app.integration_metrics_daily m
      where m.workspace_id = p_workspace_id and m.day <= p_day and m.followers is not null
        and (p_ids is null or m.integration_id = any (p_ids))
      order by m.integration_id, m.day desc) f
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.analytics_local_day(p_workspace_id uuid, p_at timestamp with time zone)
 RETURNS date
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return (
    select (p_at at time zone coalesce((select w.timezone from app.workspaces w where w.id = p_workspace_id), 'UTC'))::date
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.analytics_post_json(p_item app.content_items, p_latest app.post_metrics_latest)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
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
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.analytics_posts_published(p_workspace_id uuid, p_from date, p_to date, p_ids uuid[])
 RETURNS bigint
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select count(*) from app.content_items i
    where i.workspace_id = p_workspace_id and i.status = 'sent'
      and i.sent_at >= (p_from::timestamp at time zone (select w.timezone from app.workspaces w where w.id = p_workspace_id))
      and i.sent_at < ((p_to + 1)::timestamp at time zone (select w.timezone from app.workspaces w where w.id = p_workspace_id))
      and (p_ids is null or i.integration_id = any (p_ids))
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.analytics_totals(p_workspace_id uuid, p_from date, p_to date, p_ids uuid[])
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object(
      'impressions', coalesce(sum(a.impressions), 0), 'reach', coalesce(sum(a.reach), 0),
      'likes', coalesce(sum(a.likes), 0), 'comments', coalesce(sum(a.comments), 0),
      'shares', coalesce(sum(a.shares), 0), 'saves', coalesce(sum(a.saves), 0),
      'clicks', coalesce(sum(a.clicks), 0), 'videoViews', coalesce(sum(a.video_views), 0),
      'engagements', coalesce(sum(a.likes + a.comments + a.shares + a.saves), 0))
    from app.analytics_daily a
    where a.workspace_id = p_workspace_id and a.dimension = 'total' and a.day between p_from and p_to
      and (p_ids is null or a.integration_id = any (p_ids))
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.api_key_json(p_id uuid, p_with_grants boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object('id', k.id, 'name', k.name, 'keyPrefix', k.key_prefix, 'role', k.role,
      'createdAt', k.created_at, 'expiresAt', k.expires_at)
      || case when p_with_grants then jsonb_build_object(
        'lastUsedAt', k.last_used_at,
        'workspaces', coalesce((select jsonb_agg(jsonb_build_object('id', w.id, 'name', w.name) order by w.name, w.id)
                                from app.api_key_workspaces g join app.workspaces w on w.id = g.workspace_id
                                where g.api_key_id = k.id), '[]'),
        'workspaceCount', (select count(*) from app.api_key_workspaces g where g.api_key_id = k.id))
      else '{}'::jsonb end
    from app.api_keys k where k.id = p_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.api_key_workspace_roles(p_api_key_id uuid)
 RETURNS TABLE(workspace_id uuid, role text)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return query
  select g.workspace_id,
         case when app.role_rank(k.role) <= app.role_rank(c.role) then k.role else c.role end
  from app.api_keys k
  join app.api_key_workspaces g on g.api_key_id = k.id
  join app.user_workspace_roles(k.created_by) c on c.workspace_id = g.workspace_id
  where k.id = p_api_key_id
    and k.revoked_at is null
    and (k.expires_at is null or k.expires_at > now());
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
                          from app.article_images x where x.content_item_id = a.content_item_id), '[]'),
      'characterCount', a.character_count,
      'error', case when i.status = 'failed' then i.error end)
    else '{}'::jsonb end
    from app.articles a
    join app.content_items i on i.id = a.content_item_id
    join app.integrations g on g.id = i.integration_id
    join app.platforms p on p.code = g.platform
    where a.content_item_id = p_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.article_media_json(p_media_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object('mediaId', m.id, 'url', null, 'altText', m.alt_text,
      'storageKey', m.storage_key, 'contentType', m.content_type, 'filename', m.filename)
    from app.media_items m where m.id = p_media_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.campaign_phases_json(p_campaign_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(jsonb_agg(app.campaign_phase_json(p) order by p.position, p.created_at, p.id), '[]')
    from app.campaign_phases p where p.campaign_id = p_campaign_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.campaign_search_ids(p_pattern text)
 RETURNS SETOF uuid
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
#variable_conflict use_column
begin
  return query
  select c.id from app.campaigns c where c.workspace_id = app.current_workspace_id() and c.name ilike p_pattern;
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
    select app.content_list_item_json(i, r, g.platform, cardinality(app.content_item_media_ids(i.id, i.root_id, i.own_media)),
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
    join app.content_roots r on r.id = i.root_id
    join app.integrations g on g.id = i.integration_id
    where i.id = p_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.content_item_own_media_ids(p_item_id uuid)
 RETURNS uuid[]
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(array_agg(media_id order by position), '{}') from app.content_item_media where content_item_id = p_item_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.content_media_json(p_ids uuid[])
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(jsonb_agg(jsonb_build_object(
        'id', m.id, 'type', m.type, 'filename', m.filename, 'contentType', m.content_type,
        'fileSize', m.file_size, 'width', m.width, 'height', m.height, 'durationMs', m.duration_ms,
        'altText', m.alt_text, 'state', m.state) order by x.n), '[]')
    from unnest(coalesce(p_ids, '{}')) with ordinality as x (id, n)
    join app.media_items m on m.id = x.id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.content_mutation_json(p_root_id uuid, p_item_ids uuid[])
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object('rootId', p_root_id,
      'editions', coalesce((select jsonb_agg(app.content_edition_json(i) order by x.n)
                            from unnest(p_item_ids) with ordinality x (id, n)
                            join app.content_items i on i.id = x.id), '[]'))
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.content_recurring_metadata(p_root_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select b.metadata from app.content_recurring_metadata_batch(array[p_root_id]) b
  );
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
    join app.integrations g on g.id = i.integration_id
    join app.content_roots r on r.id = i.root_id
    left join lateral app.route_channel(i.integration_id, g.platform,
      array(select t.tag_id from app.content_root_tags t where t.root_id = r.id), r.campaign_id) w on true
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
    select exists (select 1 from app.review_items ri join app.content_items i on i.id = ri.content_id
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
      select ri.*, exists (select 1 from app.review_links l where l.review_id = ri.review_id) as has_clients
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

CREATE OR REPLACE FUNCTION app.content_root_media_ids(p_root_id uuid)
 RETURNS uuid[]
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(array_agg(media_id order by position), '{}') from app.content_root_media where root_id = p_root_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.content_root_metadata_json(p_root_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object(
      'title', r.organizational_title,
      'campaignId', r.campaign_id,
      'phaseId', r.phase_id,
      'tagIds', to_jsonb(array(select tag_id from app.content_root_tags where root_id = r.id order by tag_id)),
      'pillarIds', to_jsonb(array(select pillar_id from app.content_root_pillars where root_id = r.id order by pillar_id)),
      'formatIds', to_jsonb(array(select format_id from app.content_root_formats where root_id = r.id order by format_id)))
    from app.content_roots r where r.id = p_root_id
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
    from app.content_items i join app.content_roots r on r.id = i.root_id
    where i.id = p_item_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.credentials_due(p_limit integer DEFAULT 100)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(jsonb_agg(c.integration_id order by c.next_refresh_at), '[]')
    from (select c.integration_id, c.next_refresh_at
          from app.integration_credentials c
          join app.integrations i on i.id = c.integration_id
          where c.refreshable and c.next_refresh_at <= now() and i.deleted_at is null and i.connection_state = 'ok'
          order by c.next_refresh_at
          limit least(greatest(coalesce(p_limit, 100), 1), 1000)) c
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.credentials_for(p_ids uuid[])
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(jsonb_agg(app.credentials_row_json(i, c) order by i.id), '[]')
    from app.integrations i
    left join app.integration_credentials c on c.workspace_id = i.workspace_id and c.integration_id = i.id
    where i.id = any (p_ids)
  );
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
      join app.content_items mi on mi.id = me.content_item_id
      join app.grid_tiles t on t.integration_id = me.integration_id and t.id <> me.id and t.position_key is not null
      join app.content_items i on i.id = t.content_item_id and i.status = 'scheduled' and i.deleted_at is null
      where me.id = p_tile_id
        and ((t.position_key < me.position_key and i.scheduled_at > mi.scheduled_at)
          or (t.position_key > me.position_key and i.scheduled_at < mi.scheduled_at)))
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.grid_position(p_tile app.grid_tiles)
 RETURNS integer
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select pos from app.grid_ordered(p_tile.integration_id) where tile_id = p_tile.id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.grid_tile_answer(p_tile_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select app.grid_tiles_json(jsonb_build_array(jsonb_build_object('id', t.id, 'pos', app.grid_position(t)))) -> 0
    from app.grid_tiles t where t.id = p_tile_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.grid_tile_media_ids(t app.grid_tiles)
 RETURNS uuid[]
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select case when t.content_item_id is null then
        (select coalesce(array_agg(m.media_id order by m.position), '{}') from app.grid_tile_media m where m.tile_id = t.id)
      else
        (select app.content_item_media_ids(i.id, i.root_id, i.own_media) from app.content_items i where i.id = t.content_item_id)
      end
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.grid_tiles_json(p_tiles jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    with t as (
      select g.*, (e.x ->> 'pos')::int pos, e.n
      from jsonb_array_elements(p_tiles) with ordinality e (x, n)
      join app.grid_tiles g on g.id = (e.x ->> 'id')::uuid),
    i as (select t.id tile_id, c.id, c.root_id, c.own_media, c.status, c.scheduled_at, c.sent_at, c.permalink
          from t join app.content_items c on c.id = t.content_item_id),
    media as (
      select m.tile_id, array_agg(m.media_id order by m.position) ids
      from app.grid_tile_media m where m.tile_id in (select id from t where content_item_id is null) group by m.tile_id
      union all
      select i.tile_id, array_agg(cm.media_id order by cm.position)
      from i join app.content_item_media cm on cm.content_item_id = i.id where i.own_media group by i.tile_id
      union all
      select i.tile_id, array_agg(rm.media_id order by rm.position)
      from i join app.content_root_media rm on rm.root_id = i.root_id where not i.own_media group by i.tile_id),
    j as (
      select t.*, i.status, i.scheduled_at, i.sent_at, i.permalink, coalesce(m.ids, '{}') ids,
        case when t.cover_media_id = any (m.ids) then t.cover_media_id else m.ids[1] end cover_id
      from t left join i on i.tile_id = t.id left join media m on m.tile_id = t.id)
    select coalesce(jsonb_agg(jsonb_build_object(
      'id', j.id,
      'integrationId', j.integration_id,
      'kind', case when j.content_item_id is null then 'placeholder'
                   when j.status = 'sent' then 'published'
                   when j.status = 'scheduled' then 'scheduled'
                   else 'draft' end,
      'contentId', j.content_item_id,
      'status', j.status,
      'position', j.pos,
      'scheduledAt', j.scheduled_at,
      'publishedAt', j.sent_at,
      'permalink', j.permalink,
      'note', j.note,
      'mediaIds', to_jsonb(j.ids),
      'mediaCount', cardinality(j.ids),
      'cover', case when c.id is not null then jsonb_build_object('mediaId', c.id, 'type', c.type,
                 'frameAtMs', case when c.id = j.cover_media_id and c.type = 'video' then j.cover_frame_ms end,
                 'storageKey', c.storage_key, 'contentType', c.content_type, 'filename', c.filename) end,
      'createdAt', j.created_at,
      'updatedAt', j.updated_at) order by j.n), '[]')
    from j left join app.media_items c on c.id = j.cover_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.inbox_refresh_threads(p_threads uuid[])
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog'
AS $function$
#variable_conflict use_column
begin
  update app.inbox_threads t set
    last_message_at = s.last_at,
    last_inbound_at = s.last_in,
    message_count = s.n,
    participants = s.people,
    content_item_id = coalesce(t.content_item_id, case when t.kind = 'comment' then (
      select ci.id from app.content_items ci
      where ci.integration_id = t.integration_id and ci.platform_post_id = t.thread_key
      order by ci.created_at limit 1) end),
    status = case when t.archived_at is not null and (s.last_in is null or t.archived_at >= s.last_in) then 'archived' else 'open' end,
    updated_at = now()
  from (
    select th.id,
           max(m.occurred_at) filter (where m.has_original and m.direction <> 'note') as last_at,
           max(m.occurred_at) filter (where m.has_original and m.direction = 'inbound') as last_in,
           count(m.id) filter (where m.has_original and m.direction <> 'note')::int as n,
           coalesce((select jsonb_agg(a order by a ->> 'id') from (
                       select distinct m2.author as a from app.inbox_messages m2
                       where m2.thread_id = th.id and m2.direction = 'inbound' and m2.has_original and m2.author ? 'id'
                       order by 1 limit 50) p), '[]') as people
    from unnest(p_threads) th (id)
    left join app.inbox_messages m on m.thread_id = th.id
    group by th.id
  ) s
  where t.id = s.id;
end
$function$;

CREATE OR REPLACE FUNCTION app.inbox_rule(p_platform text, p_kind text)
 RETURNS app.inbox_platform_rules
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog'
AS $function$
#variable_conflict use_column
begin
  return (
    select r from app.inbox_platform_rules r
    where r.kind = p_kind and r.platform in (p_platform, '*')
    order by (r.platform = '*') limit 1
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.inbox_unread_count(p_thread uuid)
 RETURNS integer
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog'
AS $function$
#variable_conflict use_column
begin
  return (
    select count(*)::int from app.inbox_messages m
    where m.thread_id = p_thread and m.direction = 'inbound' and m.has_original and m.moderation <> 'deleted'
      and m.created_at > coalesce((select r.read_at from app.inbox_reads r
                                   where r.thread_id = p_thread and r.principal_id = app.current_principal_id()), '-infinity')
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.integration_connection_json(p_id uuid, p_ws uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object(
      'accountId', i.account_id,
      'instanceUrl', i.instance_url,
      'connectionState', case
        when i.connection_state = 'reconnect_required' then 'reconnect_required'
        when c.refresh_failures > 0 then 'refresh_failing'
        when c.integration_id is not null
             and (case when c.refreshable and c.has_refresh_token then c.refresh_expires_at else c.expires_at end) < now() + interval '7 days'
          then 'expiring'
        else 'ok' end,
      'connectionReason', case
        when i.connection_state = 'reconnect_required' then i.connection_reason
        when c.refresh_failures > 0 then c.last_refresh_error
        else null end,
      'credentialsExpireAt', case when c.refreshable and c.has_refresh_token then c.refresh_expires_at else c.expires_at end)
    from app.integrations i
    left join app.integration_credentials c on c.workspace_id = i.workspace_id and c.integration_id = i.id
    where i.id = p_id and i.workspace_id = p_ws
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.integration_json(p_id uuid, p_detail boolean DEFAULT false)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
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
      || app.integration_connection_json(i.id, i.workspace_id)
      || case when p_detail then jsonb_build_object(
        'platformName', p.name,
        'rules', app.platform_rules_json(i.platform),
        'capabilities', app.platform_capabilities_json(i.platform),
        'settings', i.settings,
        'webhookUrl', i.webhook_url)
      else '{}'::jsonb end
    from app.integrations i
    join app.platforms p on p.code = i.platform
    where i.id = p_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.media_folder_json(f app.media_folders)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object(
      'id', f.id,
      'name', f.name,
      'parentId', f.parent_id,
      'depth', case when f.parent_id is null then 0 else 1 end,
      'subfolderCount', (select count(*)::int from app.media_folders c where c.parent_id = f.id),
      'mediaCount', (select count(*)::int from app.media_items m
                     where m.workspace_id = f.workspace_id and m.folder_id = f.id and m.state = 'active'),
      'createdAt', f.created_at,
      'updatedAt', f.updated_at)
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.media_garbage_batch(p_limit integer DEFAULT 500)
 RETURNS text[]
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(array_agg(storage_key order by created_at, storage_key), '{}')
    from (select storage_key, created_at from app.media_storage_garbage order by created_at, storage_key limit p_limit) g
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.media_keys_in_use(p_keys text[])
 RETURNS text[]
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(array_agg(k), '{}') from unnest(p_keys) k
    where exists (select 1 from app.media_items m where m.storage_key = k)
       or exists (select 1 from app.media_upload_sessions s where s.storage_key = k and s.state = 'pending' and s.expires_at > now())
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.media_label_group_json(g app.media_label_groups)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object(
      'id', g.id,
      'name', g.name,
      'position', g.position,
      'labelCount', (select count(*)::int from app.media_labels l where l.group_id = g.id and l.merged_into_id is null),
      'createdAt', g.created_at,
      'updatedAt', g.updated_at)
  );
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
      'mediaCount', (select count(*)::int from app.media_item_labels x join app.media_items m on m.id = x.media_id
                     where x.label_id = l.id and m.state = 'active'),
      'createdAt', l.created_at,
      'updatedAt', l.updated_at)
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.media_label_search_ids(p_pattern text)
 RETURNS SETOF uuid
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
#variable_conflict use_column
begin
  return query
  select l.id from app.media_labels l where l.workspace_id = app.current_workspace_id() and l.name ilike p_pattern;
end
$function$;

CREATE OR REPLACE FUNCTION app.media_ref_problems(p_workspace_id uuid, p_ids uuid[], p_field text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(jsonb_agg(app.field_problem(p_field || '.' || (x.n - 1),
             case when m.id is null then 'media_not_found' else 'media_deleted' end,
             case when m.id is null then 'no media item with this id in this workspace'
                  else 'this media item is in the bin; restore it first' end) order by x.n), '[]')
    from unnest(coalesce(p_ids, '{}')) with ordinality as x (id, n)
    left join app.media_items m on m.id = x.id and m.workspace_id = p_workspace_id
    where m.id is null or m.state <> 'active'
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
      join app.content_items ci on ci.id = cim.content_item_id
      where cim.media_id = p_media_id and ci.status = 'scheduled' and ci.deleted_at is null
      union
      select ci.id from app.content_root_media crm
      join app.content_items ci on ci.root_id = crm.root_id
      where crm.media_id = p_media_id and ci.status = 'scheduled' and ci.deleted_at is null) s
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.media_search_ids(p_pattern text)
 RETURNS SETOF uuid
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
#variable_conflict use_column
begin
  return query
  select m.id from app.media_items m
  where m.workspace_id = app.current_workspace_id() and (m.filename ilike p_pattern or m.alt_text ilike p_pattern);
end
$function$;

CREATE OR REPLACE FUNCTION app.member_json(m app.workspace_members)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object('userId', u.id, 'email', u.email, 'role', m.role,
      'orgRole', u.org_role, 'status', u.status, 'createdAt', m.created_at, 'updatedAt', m.updated_at)
      from app.users u where u.id = m.user_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.platform_app_for(p_connector text, p_instance text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object('id', a.id, 'connector', a.connector, 'clientId', a.client_id, 'secretCiphertext', encode(a.secret_ciphertext, 'base64'))
    from app.platform_apps a where a.connector = p_connector and a.instance = coalesce(p_instance, '')
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.platform_capabilities_json(p_code text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object(
      'canPublishArticles', coalesce((p.capabilities ->> 'canPublishArticles')::boolean, false),
      'boards', coalesce((p.capabilities ->> 'boards')::boolean, false),
      'videoCategories', coalesce((p.capabilities ->> 'videoCategories')::boolean, false),
      'threads', coalesce((p.capabilities ->> 'threads')::boolean, false),
      'editPublishedCaption', coalesce((p.capabilities ->> 'editPublishedCaption')::boolean, false))
    from app.platforms p where p.code = p_code
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.platform_rules_json(p_code text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object(
      'caption', jsonb_build_object('maxLength', p.caption_max_length),
      'media', jsonb_build_object(
        'minItems', p.media_rules -> 'minItems',
        'maxItems', p.media_rules -> 'maxItems',
        'kinds', coalesce(p.media_rules -> 'kinds', '[]'),
        'maxImages', p.media_rules -> 'maxImages',
        'maxVideos', p.media_rules -> 'maxVideos',
        'maxGifs', p.media_rules -> 'maxGifs',
        'mixedKinds', coalesce(p.media_rules -> 'mixedKinds', 'false'),
        'imageMaxBytes', p.media_rules -> 'imageMaxBytes',
        'videoMaxBytes', p.media_rules -> 'videoMaxBytes',
        'requiresMedia', coalesce(p.media_rules -> 'requiresMedia', 'false')),
      'requiredSettings', coalesce((
        select jsonb_agg(jsonb_build_object(
                 'name', s ->> 'name',
                 'type', coalesce(s ->> 'type', 'string'),
                 'description', s ->> 'description',
                 'maxLength', s -> 'maxLength',
                 'enum', s -> 'enum',
                 'optional', coalesce((s ->> 'optional')::boolean, false))
               order by x.ord)
        from jsonb_array_elements(p.required_settings) with ordinality x (s, ord)), '[]'))
    from app.platforms p where p.code = p_code
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.principal_role_in(p_user uuid, p_key uuid, p_ws uuid)
 RETURNS text
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return (
    select case
      when p_key is not null then (select r.role from app.api_key_workspace_roles(p_key) r where r.workspace_id = p_ws)
      else (select r.role from app.user_workspace_roles(p_user) r
            join app.users u on u.id = p_user and u.status = 'active'
            where r.workspace_id = p_ws)
    end
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.publish_edition_json(p_item_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return (
    select edition from app.publish_editions_json(array[p_item_id])
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.publish_hold_estimate(p_integration_id uuid, p_default_ms integer)
 RETURNS interval
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return (
    -- Its last 20 attempts by start (index publish_attempts_integration_started_idx), the finished ones.
    select case when x.hold is null then p_default_ms * interval '1 millisecond'
                else least(greatest(x.hold, interval '1 millisecond'), interval '1 minute') end
    from (select percentile_cont(0.5) within group (order by a.finished_at - a.started_at) as hold
          from (select a.started_at, a.finished_at from app.publish_attempts a
                where a.integration_id = p_integration_id order by a.started_at desc limit 20) a
          where a.finished_at is not null) x
  );
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
  left join app.integration_publish_limits o on o.integration_id = g.id
  where g.id = p_integration_id;
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
    from app.content_items i join app.content_roots r on r.id = i.root_id
    left join app.published_captions pc on pc.content_item_id = i.id
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
    select app.publishing_json_of(i, s, (select count(*) from app.publish_attempts a where a.content_item_id = i.id))
    from app.content_items i
    left join app.publishing_states s on s.content_item_id = i.id
    where i.id = p_content_item_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.publishing_reset(p_content_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  delete from app.publishing_states where content_item_id = p_content_id;
end
$function$;

CREATE OR REPLACE FUNCTION app.publishing_set_caption(p_id uuid, p_caption text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  insert into app.published_captions (content_item_id, organization_id, workspace_id, caption)
  select id, organization_id, workspace_id, p_caption from app.content_items where id = p_id
  on conflict (content_item_id, workspace_id) do update set caption = excluded.caption, edits = app.published_captions.edits + 1,
    updated_at = clock_timestamp();
end
$function$;

CREATE OR REPLACE FUNCTION app.recurring_occurrence_published(p_root_id uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select exists (select 1 from app.content_items where root_id = p_root_id and status = 'sent' and deleted_at is null)
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.review_activity_json(a app.review_activity)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object('id', a.id, 'reviewId', a.review_id, 'itemId', a.item_id, 'kind', a.kind, 'event', a.event,
      'actor', a.actor_key, 'actorName', a.actor_name, 'body', a.body, 'mentions', to_jsonb(a.mentions), 'data', a.data,
      'reactions', coalesce((select jsonb_agg(jsonb_build_object('emoji', x.emoji, 'count', x.n, 'actors', x.actors) order by x.emoji)
                             from (select emoji, count(*)::int as n, jsonb_agg(actor_key order by actor_key) as actors
                                   from app.review_reactions where activity_id = a.id group by emoji) x), '[]'),
      'attachments', coalesce((select jsonb_agg(jsonb_build_object('id', t.id, 'filename', t.filename, 'contentType', t.content_type,
                                 'fileSize', t.file_size, 'storageKey', t.storage_key) order by t.created_at, t.id)
                               from app.review_attachments t where t.activity_id = a.id and t.state = 'completed'), '[]'),
      'createdAt', a.created_at)
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.review_attachment_discard(a app.review_attachments, p_reason text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
#variable_conflict use_column
begin
  insert into app.media_storage_garbage (storage_key, workspace_id, organization_id, reason)
  values (a.upload_key, a.workspace_id, a.organization_id, p_reason), (a.storage_key, a.workspace_id, a.organization_id, p_reason)
  on conflict (storage_key, workspace_id) do nothing;
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
      when exists (select 1 from app.review_items x where x.content_id = i.id and x.open)
        then jsonb_build_object('contentId', p_id, 'eligible', false, 'reason', 'in_review',
               'reviewId', (select x.review_id from app.review_items x where x.content_id = i.id and x.open limit 1))
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
  select it, r, g.platform, app.review_item_due_at(r, it), app.review_urgency(app.review_item_due_at(r, it), w.timezone)
  from app.review_items it
  join app.reviews r on r.id = it.review_id and r.status = 'active'
  join app.content_items i on i.id = it.content_id
  join app.integrations g on g.id = i.integration_id
  join app.workspaces w on w.id = it.workspace_id
  where it.workspace_id = app.current_workspace_id() and it.organization_id = app.current_organization_id()
    and it.waiting_on @> array[p_key] and cardinality(it.waiting_on) > 0;
end
$function$;

CREATE OR REPLACE FUNCTION app.review_item_activity(it app.review_items)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(jsonb_agg(app.review_activity_json(a) order by a.created_at, a.id), '[]')
    from app.review_activity a where a.item_id = it.id
  );
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
      'decisions', coalesce((select jsonb_agg(app.review_decision_json(d) order by d.created_at, d.id)
                             from app.review_decisions d where d.item_id = it.id), '[]'))
    from app.content_items i
    join app.content_roots cr on cr.id = i.root_id
    join app.integrations g on g.id = i.integration_id
    where i.id = it.content_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.review_json(r app.reviews, p_items boolean DEFAULT true)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object('id', r.id, 'status', r.status, 'title', r.title, 'message', r.message, 'dueAt', r.due_at,
      'workflowId', r.workflow_id, 'configRevision', r.config_revision,
      'stages', coalesce(r.stages, (select w.stages from app.approval_workflows w where w.id = r.workflow_id), '[]'),
      'autoScheduleOnApproval', r.auto_schedule_on_approval,
      'createdAt', r.created_at, 'createdBy', r.created_by, 'updatedAt', r.updated_at,
      'sentAt', r.sent_at, 'sentBy', r.sent_by, 'completedAt', r.completed_at, 'completedBy', r.completed_by,
      'clientReviewers', coalesce((select jsonb_agg(jsonb_build_object('id', l.id, 'email', l.email, 'name', l.name,
                                      'expiresAt', l.expires_at, 'revokedAt', l.revoked_at) order by l.created_at, l.email)
                                   from app.review_links l where l.review_id = r.id), '[]'))
    || case when p_items then jsonb_build_object('items',
         coalesce((select jsonb_agg(app.review_item_json(r, it) order by it.created_at, it.id)
                   from app.review_items it where it.review_id = r.id), '[]')) else '{}' end
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.review_link_media_json(p_ids uuid[])
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(jsonb_agg(jsonb_build_object(
        'id', m.id, 'type', m.type, 'contentType', m.content_type, 'filename', m.filename,
        'altText', m.alt_text, 'width', m.width, 'height', m.height, 'durationMs', m.duration_ms,
        'storageKey', m.storage_key) order by x.n), '[]')
    from unnest(coalesce(p_ids, '{}')) with ordinality x (id, n)
    join app.media_items m on m.id = x.id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.review_policy(p_workspace uuid)
 RETURNS text
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce((select review_policy from app.review_settings where workspace_id = p_workspace), 'none')
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.route_channel(p_integration uuid, p_platform text, p_tag_ids uuid[], p_campaign uuid)
 RETURNS app.approval_workflows
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
declare
  v_result app.approval_workflows;
begin
  select * into v_result from (
    select w.* from app.approval_workflows w
    where w.workspace_id = app.current_workspace_id() and w.active
      and app.workflow_matches(w.match, p_integration, p_platform, p_tag_ids, p_campaign)
    order by w.position, w.created_at, w.id
    limit 1
  ) s;
  if not found then
    return null;
  end if;
  return v_result;
end
$function$;

CREATE OR REPLACE FUNCTION app.sandbox_edit_caption(p_integration_id uuid, p_platform_post_id text, p_caption text)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
#variable_conflict use_column
declare
  v_result boolean;
begin
  with u as (update app.sandbox_posts set caption = p_caption, caption_edits = caption_edits + 1, updated_at = clock_timestamp()
             where integration_id = p_integration_id and platform_post_id = p_platform_post_id returning 1)
  select exists (select 1 from u)
  into v_result;
  return v_result;
end
$function$;

CREATE OR REPLACE FUNCTION app.sanitize_settings(p_platform text, p_settings jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(jsonb_object_agg(k, v), '{}')
    from jsonb_each(case when jsonb_typeof(p_settings) = 'object' then p_settings else '{}' end) s (k, v)
    where exists (select 1 from app.platforms p, jsonb_array_elements(p.required_settings) d
                  where p.code = p_platform and d ->> 'name' = s.k)
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.setting(p_key text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE PARALLEL SAFE
 SET search_path TO 'pg_catalog'
AS $function$
#variable_conflict use_column
begin
  return (
    select value from app.settings where key = p_key
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.user_workspace_roles(p_user_id uuid)
 RETURNS TABLE(workspace_id uuid, role text)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return query
  select w.id, 'manager'::text
  from app.users u
  join app.workspaces w on w.organization_id = u.organization_id
  where u.id = p_user_id and u.status = 'active' and u.org_role in ('owner', 'admin')
  union all
  select m.workspace_id, m.role
  from app.users u
  join app.workspace_members m on m.user_id = u.id and m.organization_id = u.organization_id
  where u.id = p_user_id and u.status = 'active' and u.org_role = 'member';
end
$function$;

CREATE OR REPLACE FUNCTION app.vault_ciphertexts(p_below_version integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object(
      'credentials', coalesce((select jsonb_agg(jsonb_build_object('integrationId', c.integration_id, 'ciphertext', encode(c.ciphertext, 'base64'),
          'keyVersion', c.key_version) order by c.integration_id)
        from app.integration_credentials c where c.key_version < p_below_version), '[]'),
      'apps', coalesce((select jsonb_agg(jsonb_build_object('id', a.id, 'ciphertext', encode(a.secret_ciphertext, 'base64')) order by a.id)
        from app.platform_apps a where a.secret_ciphertext is not null
          and get_byte(a.secret_ciphertext, 4) * 256 + get_byte(a.secret_ciphertext, 5) < p_below_version), '[]'),
      'webhookSecrets', coalesce((select jsonb_agg(jsonb_build_object('id', g.id, 'stored', g.webhook_secret) order by g.id)
        from app.integrations g where g.webhook_secret is not null and app.webhook_secret_key_version(g.webhook_secret) < p_below_version), '[]'))
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.webhook_delivery_json(d app.webhook_deliveries)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog'
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object('id', d.id, 'eventId', d.event_id, 'eventType', e.type, 'subjectId', e.subject_id,
      'state', d.state, 'attempts', d.attempts, 'nextAttemptAt', case when d.state = 'pending' then d.next_attempt_at end,
      'lastStatus', d.last_status, 'lastError', d.last_error, 'deliveredAt', d.delivered_at, 'redeliveryOf', d.redelivery_of,
      'createdAt', d.created_at)
    from app.webhook_events e where e.id = d.event_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.webhook_subscription_json(s app.webhook_subscriptions)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog'
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object('id', s.id, 'url', s.url, 'events', to_jsonb(s.events), 'description', s.description,
      'active', s.active, 'pausedReason', s.paused_reason, 'consecutiveFailures', s.consecutive_failures,
      'pendingDeliveries', (select count(*)::int from app.webhook_deliveries d where d.subscription_id = s.id and d.state = 'pending'),
      'createdAt', s.created_at, 'updatedAt', s.updated_at)
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.work_claim_live(p_kind text, p_subject uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return (
    select exists (select 1 from app.work_claims
                   where kind = p_kind and subject_id = p_subject and claimed_until > clock_timestamp())
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.workbench_channel_problems(p_channels jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(jsonb_agg(p order by n), '[]') from (
      select x.n, case
        when not exists (select 1 from app.integrations g where g.id = x.id and g.workspace_id = app.current_workspace_id() and g.deleted_at is null)
          then app.field_problem('channels.' || (x.n - 1), 'integration_not_found', 'no connected channel with this id in this workspace')
        when exists (select 1 from unnest(app.jsonb_uuids(p_channels)) with ordinality y (id, m) where y.id = x.id and y.m < x.n)
          then app.field_problem('channels.' || (x.n - 1), 'duplicate_channel', 'this channel is listed twice')
        end p
      from unnest(app.jsonb_uuids(p_channels)) with ordinality x (id, n)) q
    where p is not null
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.workbench_page_json(p app.workbench_pages)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object('id', p.id, 'name', p.name, 'description', p.description, 'archived', p.archived_at is not null,
      'archivedAt', p.archived_at, 'position', p.position,
      'sectionCount', (select count(*) from app.workbench_sections s where s.page_id = p.id),
      'rowCount', (select count(*) from app.workbench_rows w where w.page_id = p.id),
      'createdAt', p.created_at, 'updatedAt', p.updated_at)
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.workbench_row_status(p_root_id uuid)
 RETURNS text
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select app.workbench_status_of(exists (select 1 from app.content_roots r where r.id = p_root_id and r.deleted_at is null),
      count(i.id), bool_or(i.status = 'failed'), bool_or(i.status = 'pending_approval'), bool_or(i.status = 'rejected'),
      bool_and(i.status = 'sent'), bool_and(i.status in ('scheduled', 'sent')), bool_and(i.status = 'cancelled'))
    from app.content_items i
    where i.root_id = p_root_id and i.deleted_at is null
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
    left join app.content_roots r on r.id = w.content_root_id and r.deleted_at is null
    left join lateral (select jsonb_agg(m.media_id order by m.position) ids from app.content_root_media m where m.root_id = r.id) media on true
    left join lateral (
      select count(*) n,
        jsonb_agg(i.integration_id order by g.created_at, g.id) channels,
        jsonb_agg(app.content_edition_json(i) order by g.created_at, g.id) editions,
        bool_or(i.status = 'failed') any_failed, bool_or(i.status = 'pending_approval') any_pending,
        bool_or(i.status = 'rejected') any_rejected, bool_and(i.status = 'sent') all_sent,
        bool_and(i.status in ('scheduled', 'sent')) all_scheduled_or_sent, bool_and(i.status = 'cancelled') all_cancelled
      from app.content_items i join app.integrations g on g.id = i.integration_id
      where i.root_id = r.id and i.deleted_at is null) ed on true
    left join lateral (select jsonb_agg(t.tag_id order by t.tag_id) ids from app.content_root_tags t where t.root_id = r.id) tags on true
    left join lateral (select p.pillar_id id from app.content_root_pillars p where p.root_id = r.id order by p.created_at, p.pillar_id limit 1) pillar on true
    left join lateral (select f.format_id id from app.content_root_formats f where f.root_id = r.id order by f.created_at, f.format_id limit 1) format on true
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.workbench_section_json(s app.workbench_sections)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object('id', s.id, 'pageId', s.page_id, 'name', s.name, 'color', s.color, 'collapsed', s.collapsed,
      'position', s.position, 'rowCount', (select count(*) from app.workbench_rows w where w.section_id = s.id),
      'createdAt', s.created_at, 'updatedAt', s.updated_at)
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.workflow_json(w app.approval_workflows)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object('id', w.id, 'name', w.name, 'position', w.position, 'active', w.active,
      'match', app.workflow_match_normalize(w.match), 'stages', w.stages,
      'autoScheduleOnApproval', w.auto_schedule_on_approval,
      'inUse', exists (select 1 from app.reviews r where r.workflow_id = w.id and r.status in ('draft', 'active')),
      'createdAt', w.created_at, 'updatedAt', w.updated_at)
  );
end
$function$;
