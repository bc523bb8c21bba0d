--! Previous: sha1:1c48aa4784aadf6ea72ffceecb74ce1c091a1c4f
--! Hash: sha1:26f6472a417af4a38a2370249423c06fc31d3217
--! Message: the request context read once

--! split: 01-current.sql
-- The request context read once per function.
--
-- 163 PL/pgSQL functions of app and api read the request's context in their statements through
-- app.current_workspace_id(), app.current_principal_id(), app.current_user_id(),
-- app.current_api_key_id() and app.current_organization_id(): SQL functions PostgreSQL inlines as
-- `nullif(current_setting(...), '')::uuid`. On a Citus cluster that is not a value: Citus prunes
-- shards on a constant or a parameter only, so `workspace_id = app.current_workspace_id()` asks
-- every shard, and a statement that locks rows is refused (`could not run distributed query with
-- FOR UPDATE/SHARE commands`, app.content_item_for_update when the content test ran on the
-- cluster); and in an UPDATE or DELETE on a distributed table the inlined NULLIF is refused
-- (`non-IMMUTABLE functions are not allowed in CASE or COALESCE statements`,
-- api.idempotency_finish). Each of these functions now reads the context into a variable
-- (v_ctx_workspace, v_ctx_principal, v_ctx_user, v_ctx_api_key, v_ctx_organization) in its
-- DECLARE section, and its statements use the variable: a parameter, which Citus prunes on. On
-- one PostgreSQL the statements are the same with a value in place of the call.
--
-- The value cannot change during a function: only app.set_request_context sets these settings,
-- and none of these functions calls it. tests/db/10-distributable.test.sql fails on a function
-- that calls one of them after its BEGIN.

CREATE OR REPLACE FUNCTION app.administrable_api_key_ids()
 RETURNS SETOF uuid
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_org uuid := app.current_organization_id();
  v_managed uuid[];
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
begin
  if app.current_actor_kind() is distinct from 'user' then
    return;
  end if;
  if exists (select 1 from app.users u where u.id = v_ctx_user and u.org_role in ('owner', 'admin')) then
    return query select k.id from app.api_keys k where k.organization_id = v_org;
    return;
  end if;
  v_managed := app.managed_workspace_ids();
  return query
  select k.id from app.api_keys k
  where k.organization_id = v_org
    and k.id <> all (array(select g.api_key_id from app.api_key_workspaces g
                           where g.organization_id = v_org and not (g.workspace_id = any (v_managed))));
end
$function$;

CREATE OR REPLACE FUNCTION app.analytics_report_insert(p_from date, p_to date, p_ids uuid[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_report app.analytics_reports;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  if v_ctx_workspace is null or not app.current_workspace_accessible() then
    perform app.raise(403, 'WORKSPACE_REQUIRED', 'A report belongs to a workspace the caller may use.');
  end if;
  insert into app.analytics_reports (organization_id, workspace_id, period_from, period_to, integration_ids, created_by, api_key_id)
  values (v_ctx_organization, v_ctx_workspace, p_from, p_to, p_ids,
    nullif(current_setting('pressroom.user_id', true), '')::uuid, nullif(current_setting('pressroom.api_key_id', true), '')::uuid)
  returning * into v_report;
  return app.analytics_report_json(v_report);
end
$function$;

CREATE OR REPLACE FUNCTION app.article_for(p_id uuid, p_lock boolean)
 RETURNS app.articles
 LANGUAGE plpgsql
AS $function$
declare
  v app.articles;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  if p_lock then
    perform 1 from app.content_items i
    where i.id = p_id and i.workspace_id = v_ctx_workspace and i.deleted_at is null and i.kind = 'article'
    for update;
    select a.* into v from app.articles a
    join app.content_items i on i.id = a.content_item_id and i.workspace_id = a.workspace_id
    where a.content_item_id = p_id and a.workspace_id = v_ctx_workspace and i.deleted_at is null
    for update of a;
  else
    select a.* into v from app.articles a
    join app.content_items i on i.id = a.content_item_id and i.workspace_id = a.workspace_id
    where a.content_item_id = p_id and a.workspace_id = v_ctx_workspace and i.deleted_at is null;
  end if;
  if v.content_item_id is null then
    perform app.raise_not_found('article', p_id);
  end if;
  return v;
end
$function$;

CREATE OR REPLACE FUNCTION app.campaign_for_update(p_id uuid)
 RETURNS app.campaigns
 LANGUAGE plpgsql
AS $function$
declare
  v app.campaigns;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  select * into v from app.campaigns c where c.id = p_id and c.workspace_id = v_ctx_workspace for update;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No campaign with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  return v;
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
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  return query
  select c.id from app.campaigns c where c.workspace_id = v_ctx_workspace and c.name ilike p_pattern;
end
$function$;

CREATE OR REPLACE FUNCTION app.campaign_visible(p_id uuid)
 RETURNS app.campaigns
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  v app.campaigns;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  select * into v from app.campaigns c where c.id = p_id and c.workspace_id = v_ctx_workspace;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No campaign with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  return v;
end
$function$;

CREATE OR REPLACE FUNCTION app.content_item_for_update(p_id uuid)
 RETURNS app.content_items
 LANGUAGE plpgsql
AS $function$
declare
  v app.content_items;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  select * into v from app.content_items
  where id = p_id and workspace_id = v_ctx_workspace and deleted_at is null
  for update;
  if v.id is null then
    perform app.raise_not_found('content', p_id);
  end if;
  return v;
end
$function$;

CREATE OR REPLACE FUNCTION app.content_list_total(p_query jsonb)
 RETURNS bigint
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_workflow text[];
  v_statuses text[];
  v_integration uuid := (p_query ->> 'integrationId')::uuid;
  v_due bigint := 0;
  v_total bigint;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  -- Only the filters the counters know; any other (since, or one added later) is counted exactly by the caller.
  if exists (select 1 from jsonb_object_keys(p_query) k
             where k not in ('limit', 'offset', 'sortBy', 'sortDirection', 'includeReviewLifecycle',
                             'status', 'integrationId', 'workflowStatus', 'workflowStatuses')) then
    return null;
  end if;
  if jsonb_typeof(p_query -> 'workflowStatuses') = 'array' then
    v_workflow := array(select distinct btrim(s) from jsonb_array_elements_text(p_query -> 'workflowStatuses') e,
                        regexp_split_to_table(e, ',') s where btrim(s) <> '');
  elsif p_query ->> 'workflowStatuses' is not null then
    v_workflow := array(select distinct btrim(s) from regexp_split_to_table(p_query ->> 'workflowStatuses', ',') s where btrim(s) <> '');
  elsif p_query ->> 'workflowStatus' is not null then
    v_workflow := array[p_query ->> 'workflowStatus'];
  end if;
  if p_query ->> 'status' is not null and v_workflow is not null then
    return null;
  elsif p_query ->> 'status' is not null then
    v_statuses := array[p_query ->> 'status'];
  elsif v_workflow is not null then
    v_statuses := array(select distinct case w when 'in_review' then 'pending_approval' when 'changes_requested' then 'rejected'
                                               when 'publishing' then 'scheduled' when 'published' then 'sent' else w end
                        from unnest(v_workflow) w);
    -- "publishing" is a scheduled edition that is due, "scheduled" one that is not: the due
    -- ones are few (the engine is sending them), counted on the index.
    if ('scheduled' = any (v_workflow)) <> ('publishing' = any (v_workflow)) then
      select count(*) into v_due from app.content_items i
      where i.workspace_id = v_ctx_workspace and i.status = 'scheduled' and i.deleted_at is null
        and i.scheduled_at <= now() and (v_integration is null or i.integration_id = v_integration);
    end if;
  else
    v_statuses := array['draft', 'scheduled', 'sent', 'failed'];
  end if;
  select coalesce(sum(c.n), 0) into v_total from app.content_item_counts c
  where c.workspace_id = v_ctx_workspace and c.status = any (v_statuses)
    and (v_integration is null or c.integration_id = v_integration);
  if v_workflow is not null and 'scheduled' = any (v_workflow) and not 'publishing' = any (v_workflow) then
    v_total := v_total - v_due;
  elsif v_workflow is not null and 'publishing' = any (v_workflow) and not 'scheduled' = any (v_workflow) then
    v_total := v_total - (select coalesce(sum(c.n), 0) from app.content_item_counts c
                          where c.workspace_id = v_ctx_workspace and c.status = 'scheduled'
                            and (v_integration is null or c.integration_id = v_integration)) + v_due;
  end if;
  return v_total;
end
$function$;

CREATE OR REPLACE FUNCTION app.content_payload_problems(p_platform text, p_payload jsonb, p_prefix text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  v_out jsonb := '[]';
  v_msg jsonb;
  v_i int := 0;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  if p_payload ? 'mediaIds' and jsonb_typeof(p_payload -> 'mediaIds') = 'array' then
    v_out := v_out || (select app.media_ref_problems(v_ctx_workspace, app.jsonb_uuids(p_payload -> 'mediaIds'), p_prefix || 'mediaIds'));
  end if;
  if jsonb_typeof(p_payload -> 'thread') = 'array' then
    for v_msg in select e from jsonb_array_elements(p_payload -> 'thread') e loop
      v_out := v_out || (select app.media_ref_problems(v_ctx_workspace, app.jsonb_uuids(coalesce(v_msg -> 'mediaIds', '[]')),
                                                       p_prefix || 'thread.' || v_i || '.mediaIds'));
      v_i := v_i + 1;
    end loop;
  end if;
  if p_payload ? 'settings' and p_platform is not null then
    v_out := v_out || app.settings_problems(p_platform, coalesce(p_payload -> 'settings', '{}'), p_prefix, false);
  end if;
  return v_out;
end
$function$;

CREATE OR REPLACE FUNCTION app.create_edition(p_root app.content_roots, p_channel jsonb, p_status text, p_scheduled_at timestamp with time zone, p_intended_at timestamp with time zone)
 RETURNS uuid
 LANGUAGE plpgsql
AS $function$
declare
  v_item app.content_items;
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
begin
  insert into app.content_items (organization_id, workspace_id, root_id, integration_id, status, scheduled_at,
    intended_publish_at, caption, thread, settings, own_media, created_by)
  values (p_root.organization_id, p_root.workspace_id, p_root.id, (p_channel ->> 'integrationId')::uuid, p_status,
    p_scheduled_at, p_intended_at, p_channel ->> 'caption', app.content_normalize_thread(p_channel -> 'thread'),
    coalesce(nullif(p_channel -> 'settings', 'null'), '{}'), coalesce(jsonb_typeof(p_channel -> 'mediaIds') = 'array', false),
    v_ctx_user)
  returning * into v_item;
  if jsonb_typeof(p_channel -> 'mediaIds') = 'array' then
    perform app.replace_item_media(v_item, app.jsonb_uuids(p_channel -> 'mediaIds'));
  end if;
  return v_item.id;
end
$function$;

CREATE OR REPLACE FUNCTION app.create_recurring_series(p_root app.content_roots, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  r jsonb := p_body -> 'recurrence';
  v_intent text := coalesce(p_body ->> 'intent', 'draft');
  v_anchor timestamptz := coalesce((p_body ->> 'scheduledAt')::timestamptz, (p_body ->> 'intendedPublishAt')::timestamptz);
  v_tz text := coalesce(r ->> 'timezone', (select timezone from app.workspaces where id = p_root.workspace_id));
  v_problems jsonb := '[]';
  v_rule jsonb;
  s app.recurring_series;
  v_made jsonb;
  v_first_ids uuid[];
  v_prefixes text[];
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
begin
  if not exists (select 1 from pg_timezone_names where name = v_tz) then
    v_problems := v_problems || app.field_problem('recurrence.timezone', 'invalid_timezone', format('%s is not an IANA time zone name', v_tz));
  end if;
  if r ? 'byWeekday' and r ->> 'frequency' <> 'weekly' then
    v_problems := v_problems || app.field_problem('recurrence.byWeekday', 'not_allowed', 'byWeekday goes with frequency weekly');
  end if;
  if r ? 'count' and r ? 'until' then
    v_problems := v_problems || app.field_problem('recurrence.until', 'not_allowed', 'a series ends by count or by until, not both');
  end if;
  if v_anchor <= now() then
    v_problems := v_problems || app.field_problem(case when v_intent = 'schedule' then 'scheduledAt' else 'intendedPublishAt' end,
      'in_past', 'a recurring series starts in the future');
  end if;
  if r ? 'until' and (r ->> 'until')::timestamptz < v_anchor then
    v_problems := v_problems || app.field_problem('recurrence.until', 'before_start', 'until is before the first time');
  end if;
  perform app.raise_field_problems(v_problems, 'The recurrence is not valid; see details.fields.');

  v_rule := jsonb_strip_nulls(jsonb_build_object('frequency', r ->> 'frequency',
    'interval', coalesce((r ->> 'interval')::int, 1), 'byWeekday', r -> 'byWeekday',
    'count', (r ->> 'count')::int, 'until', (r ->> 'until')::timestamptz));
  insert into app.recurring_series (organization_id, workspace_id, rule, timezone, anchor_at, intent, template, created_by)
  values (p_root.organization_id, p_root.workspace_id, v_rule, v_tz, v_anchor, v_intent,
    jsonb_strip_nulls(jsonb_build_object(
      'title', p_body -> 'title', 'caption', p_body -> 'caption', 'organizationalTitle', p_body -> 'organizationalTitle',
      'notes', p_body -> 'notes', 'mediaIds', p_body -> 'mediaIds', 'campaignId', p_root.campaign_id,
      'phaseId', p_root.phase_id, 'tagIds', p_body -> 'tagIds', 'pillarIds', p_body -> 'pillarIds',
      'formatIds', p_body -> 'formatIds', 'channels', p_body -> 'channels')),
    v_ctx_user)
  returning * into s;

  perform app.defer_content_checks();
  v_made := app.materialize_series(s.id, false, p_root.id);
  -- Every occurrence has the same content: the first one's problems, named
  -- by channel, stand for all (the deferred checks hold the others).
  v_first_ids := array(select i.id from app.content_items i
                       join jsonb_array_elements(p_body -> 'channels') with ordinality c (e, n)
                         on (c.e ->> 'integrationId')::uuid = i.integration_id
                       where i.root_id = p_root.id and i.deleted_at is null order by c.n);
  v_prefixes := array(select 'channels.' || (c.n - 1) || '.' from app.content_items i
                      join jsonb_array_elements(p_body -> 'channels') with ordinality c (e, n)
                        on (c.e ->> 'integrationId')::uuid = i.integration_id
                      where i.root_id = p_root.id and i.deleted_at is null order by c.n);
  perform app.assert_publishable(v_first_ids, v_prefixes);
  perform app.undefer_content_checks();
  select * into s from app.recurring_series where id = s.id;
  return (select app.content_mutation_json(p_root.id, v_first_ids))
    || jsonb_build_object('series', jsonb_build_object('seriesId', s.id, 'seriesVersion', s.version, 'occurrences', v_made));
end
$function$;

CREATE OR REPLACE FUNCTION app.grid_integration(p_id uuid)
 RETURNS app.integrations
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  v app.integrations;
  v_grid boolean;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  -- Not g.*: the webhook secret is not readable.
  select g.id, g.organization_id, g.workspace_id, g.platform into v.id, v.organization_id, v.workspace_id, v.platform
  from app.integrations g
  where g.id = p_id and g.workspace_id = v_ctx_workspace and g.deleted_at is null;
  if v.id is null then
    perform app.raise_not_found('integration', p_id);
  end if;
  select feed_grid into v_grid from app.platforms where code = v.platform;
  if not v_grid then
    perform app.raise(400, 'GRID_NOT_SUPPORTED',
      format('The platform %s has no feed grid; the grid planner serves instagram, facebook, tiktok, threads, pinterest, bluesky and x.', v.platform),
      jsonb_build_object('integrationId', v.id, 'platform', v.platform,
        'platforms', (select jsonb_agg(code order by code) from app.platforms where feed_grid)));
  end if;
  return v;
end
$function$;

CREATE OR REPLACE FUNCTION app.inbox_unread_count(p_thread uuid)
 RETURNS integer
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog'
AS $function$
#variable_conflict use_column
declare
  v_ctx_principal uuid := app.current_principal_id();  -- the request context, read once (docs/citus.md)
begin
  return (
    select count(*)::int from app.inbox_messages m
    where m.thread_id = p_thread and m.direction = 'inbound' and m.has_original and m.moderation <> 'deleted'
      and m.created_at > coalesce((select r.read_at from app.inbox_reads r
                                   where r.thread_id = p_thread and r.principal_id = v_ctx_principal), '-infinity')
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.init_media_upload_with_ttl(p_filename text, p_content_type text, p_size bigint, p_folder_id uuid, p_alt_text text, p_ttl_seconds integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_type text := app.media_type_for_content_type(p_content_type);
  v_id uuid := gen_random_uuid();
  v_session app.media_upload_sessions;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  if v_type is null then
    perform app.raise(415, 'UNSUPPORTED_MEDIA_FORMAT',
      format('%s is not a supported media format.', p_content_type),
      jsonb_build_object('field', 'body.contentType', 'contentType', p_content_type,
                         'supported', app.media_supported_content_types()));
  end if;
  if p_size > app.media_max_bytes(v_type) then
    perform app.raise(413, 'MEDIA_TOO_LARGE',
      format('A %s may be at most %s bytes; this one is %s bytes.', v_type, app.media_max_bytes(v_type), p_size),
      jsonb_build_object('field', 'body.size', 'type', v_type, 'size', p_size, 'maxBytes', app.media_max_bytes(v_type)));
  end if;
  if btrim(p_filename) = '' or p_filename ~ '[[:cntrl:]/\\]' then
    perform app.media_invalid('body.filename', 'invalid', 'must be a file name without slashes or control characters');
  end if;
  if p_folder_id is not null then
    perform app.media_folder(p_folder_id, 'folderId');
  end if;
  insert into app.media_upload_sessions (id, organization_id, workspace_id, folder_id, filename, content_type,
    declared_size, alt_text, storage_key, expires_at, created_by)
  values (v_id, v_ctx_organization, v_ctx_workspace, p_folder_id, btrim(p_filename),
    lower(btrim(p_content_type)), p_size, p_alt_text,
    format('uploads/%s/%s', v_ctx_workspace, v_id),
    now() + make_interval(secs => p_ttl_seconds), v_ctx_user)
  returning * into v_session;
  return app.media_upload_json(v_session);
end
$function$;

CREATE OR REPLACE FUNCTION app.media_bulk_one(p_action text, p_id uuid, p_args jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  v app.media_items;
  v_labels uuid[];
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
begin
  case p_action
    when 'delete' then
      return api.delete_media(p_id);
    when 'restore' then
      return api.restore_media(p_id);
    when 'delete_forever' then
      perform api.delete_media_permanently(p_id);
      return null;
    when 'move' then
      v := app.media_item(p_id, true);
      perform app.media_require_active(v);
      update app.media_items set folder_id = (p_args ->> 'folderId')::uuid where id = v.id returning * into v;
      return app.media_json(v);
    when 'label' then
      select array_agg(x::uuid) into v_labels from jsonb_array_elements_text(p_args -> 'labelIds') x;
      v := app.media_item(p_id, true);
      perform app.media_require_active(v);
      insert into app.media_item_labels (media_id, label_id, workspace_id, organization_id, created_by)
      select v.id, x, v.workspace_id, v.organization_id, v_ctx_user from unnest(v_labels) x
      on conflict do nothing;
      return app.media_json(v);
    when 'unlabel' then
      select array_agg(x::uuid) into v_labels from jsonb_array_elements_text(p_args -> 'labelIds') x;
      v := app.media_item(p_id, true);
      perform app.media_require_active(v);
      delete from app.media_item_labels where media_id = v.id and label_id = any (v_labels);
      return app.media_json(v);
  end case;
end
$function$;

CREATE OR REPLACE FUNCTION app.media_check_labels(p_label_ids uuid[])
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  v_missing uuid[];
  v_merged jsonb;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  select coalesce(array_agg(x order by x), '{}') into v_missing from unnest(p_label_ids) x
  where not exists (select 1 from app.media_labels l where l.id = x and l.workspace_id = v_ctx_workspace);
  if cardinality(v_missing) > 0 then
    perform app.raise(404, 'NOT_FOUND', 'No media label with these ids in this workspace.',
      jsonb_build_object('labelIds', to_jsonb(v_missing)));
  end if;
  select jsonb_agg(jsonb_build_object('labelId', l.id, 'mergedIntoId', l.merged_into_id) order by l.id) into v_merged
  from app.media_labels l where l.id = any (p_label_ids) and l.merged_into_id is not null;
  if v_merged is not null then
    perform app.raise(409, 'LABEL_MERGED', 'These labels were merged into others; use the labels they were merged into.',
      jsonb_build_object('labels', v_merged));
  end if;
end
$function$;

CREATE OR REPLACE FUNCTION app.media_folder(p_id uuid, p_field text DEFAULT 'id'::text)
 RETURNS app.media_folders
 LANGUAGE plpgsql
AS $function$
declare
  v app.media_folders;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  select * into v from app.media_folders where id = p_id and workspace_id = v_ctx_workspace;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No media folder with this id in this workspace.', jsonb_build_object(p_field, p_id));
  end if;
  return v;
end
$function$;

CREATE OR REPLACE FUNCTION app.media_item(p_id uuid, p_for_update boolean DEFAULT false)
 RETURNS app.media_items
 LANGUAGE plpgsql
AS $function$
declare
  v app.media_items;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  if p_for_update then
    select * into v from app.media_items where id = p_id and workspace_id = v_ctx_workspace for update;
  else
    select * into v from app.media_items where id = p_id and workspace_id = v_ctx_workspace;
  end if;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No media item with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  return v;
end
$function$;

CREATE OR REPLACE FUNCTION app.media_label(p_id uuid, p_for_update boolean DEFAULT false)
 RETURNS app.media_labels
 LANGUAGE plpgsql
AS $function$
declare
  v app.media_labels;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  if p_for_update then
    select * into v from app.media_labels where id = p_id and workspace_id = v_ctx_workspace for update;
  else
    select * into v from app.media_labels where id = p_id and workspace_id = v_ctx_workspace;
  end if;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No media label with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  return v;
end
$function$;

CREATE OR REPLACE FUNCTION app.media_label_group(p_id uuid, p_field text DEFAULT 'id'::text)
 RETURNS app.media_label_groups
 LANGUAGE plpgsql
AS $function$
declare
  v app.media_label_groups;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  select * into v from app.media_label_groups where id = p_id and workspace_id = v_ctx_workspace;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No label group with this id in this workspace.', jsonb_build_object(p_field, p_id));
  end if;
  return v;
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
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  return query
  select l.id from app.media_labels l where l.workspace_id = v_ctx_workspace and l.name ilike p_pattern;
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
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  return query
  select m.id from app.media_items m
  where m.workspace_id = v_ctx_workspace and (m.filename ilike p_pattern or m.alt_text ilike p_pattern);
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
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  select g.webhook_secret into v_secret
  from app.content_items i join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
  where i.id = p_id and i.workspace_id = v_ctx_workspace and i.deleted_at is null and i.status = 'sent'
    and g.connector = 'webhook' and g.deleted_at is null;
  return v_secret;
end
$function$;

CREATE OR REPLACE FUNCTION app.record_content_version(p_workspace_id uuid, p_item_id uuid, p_source text, p_restored_from integer DEFAULT NULL::integer, p_force boolean DEFAULT false)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
declare
  v_item record;
  v_snap jsonb;
  v_last app.content_versions;
  v_next int;
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
begin
  select id, workspace_id, organization_id, version, deleted_at into v_item
  from app.content_items where workspace_id = p_workspace_id and id = p_item_id for update;
  if v_item.id is null or v_item.deleted_at is not null then
    return null;
  end if;
  select app.content_snapshot(p_workspace_id, p_item_id) into v_snap;
  select * into v_last from app.content_versions
  where workspace_id = p_workspace_id and content_item_id = p_item_id order by version desc limit 1;
  if v_last.id is not null and v_last.xact = pg_current_xact_id() then
    update app.content_versions
    set snapshot = v_snap,
        restored_from = coalesce(p_restored_from, restored_from),
        source = case when p_restored_from is not null then 'restore' else source end
    where workspace_id = p_workspace_id and id = v_last.id;
    return v_last.version;
  end if;
  if v_last.id is not null and not p_force
     and app.snapshot_effective(v_last.snapshot) = app.snapshot_effective(v_snap) then
    return v_last.version;
  end if;
  v_next := coalesce(v_last.version, 0) + 1;
  insert into app.content_versions (organization_id, workspace_id, content_item_id, version, snapshot, source,
    restored_from, created_by)
  values (v_item.organization_id, v_item.workspace_id, p_item_id, v_next, v_snap,
    case when v_last.id is null then 'create' else p_source end, p_restored_from, v_ctx_user);
  if v_item.version <> v_next then
    update app.content_items set version = v_next where workspace_id = p_workspace_id and id = p_item_id;
  end if;
  return v_next;
end
$function$;

CREATE OR REPLACE FUNCTION app.require_content_ids(p_ids uuid[])
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  v_missing uuid[];
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  v_missing := array(select x from unnest(p_ids) x
                     where not exists (select 1 from app.content_items i where i.id = x
                                       and i.workspace_id = v_ctx_workspace and i.deleted_at is null));
  if cardinality(v_missing) > 0 then
    perform app.raise(404, 'NOT_FOUND', 'No content with these ids in this workspace.', jsonb_build_object('ids', to_jsonb(v_missing)));
  end if;
end
$function$;

CREATE OR REPLACE FUNCTION app.require_role(p_role text)
 RETURNS void
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  if v_ctx_workspace is null then
    perform app.raise(403, 'WORKSPACE_REQUIRED', 'This operation needs a workspace.');
  end if;
  if app.role_rank(app.current_workspace_role()) < app.role_rank(p_role) then
    perform app.raise(403, 'ROLE_REQUIRED',
      format('This operation needs the %s role in this workspace; the caller has %s.',
             p_role, coalesce(app.current_workspace_role(), 'none')),
      jsonb_build_object('requiredRole', p_role, 'role', app.current_workspace_role()));
  end if;
end
$function$;

CREATE OR REPLACE FUNCTION app.review_content_eligibility(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
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
    left join app.content_items i on i.id = q.pid and i.workspace_id = v_ctx_workspace and i.deleted_at is null
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.review_for(p_id uuid, p_lock boolean DEFAULT false)
 RETURNS app.reviews
 LANGUAGE plpgsql
AS $function$
declare
  r app.reviews;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  if p_lock then
    select * into r from app.reviews where id = p_id and workspace_id = v_ctx_workspace for update;
  else
    select * into r from app.reviews where id = p_id and workspace_id = v_ctx_workspace;
  end if;
  if r.id is null then
    perform app.raise_not_found('review', p_id);
  end if;
  return r;
end
$function$;

CREATE OR REPLACE FUNCTION app.review_inbox_rows(p_key text)
 RETURNS TABLE(item app.review_items, review app.reviews, platform text, due_at timestamp with time zone, urgency text)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  return query
  select it, r, g.platform, app.review_item_due_at(row(r.*)::app.reviews, row(it.*)::app.review_items), app.review_urgency(app.review_item_due_at(row(r.*)::app.reviews, row(it.*)::app.review_items), w.timezone)
  from app.review_items it
  join app.reviews r on r.id = it.review_id and r.status = 'active' and r.workspace_id = it.workspace_id
  join app.content_items i on i.id = it.content_id and i.workspace_id = it.workspace_id
  join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
  join app.workspaces w on w.id = it.workspace_id
  where it.workspace_id = v_ctx_workspace and it.organization_id = v_ctx_organization
    and it.waiting_on @> array[p_key] and cardinality(it.waiting_on) > 0;
end
$function$;

CREATE OR REPLACE FUNCTION app.review_link_context()
 RETURNS app.review_links
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  l app.review_links;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  if app.current_actor_kind() is distinct from 'review_link' then
    perform app.raise(403, 'REVIEW_LINK_REQUIRED', 'This operation is for client reviewers with a review link.');
  end if;
  select * into l from app.review_links where id = app.current_review_link_id()
    and workspace_id = v_ctx_workspace and revoked_at is null and (expires_at is null or expires_at > now());
  if l.id is null then
    perform app.raise(401, 'UNAUTHENTICATED', 'This review link has ended.');
  end if;
  return l;
end
$function$;

CREATE OR REPLACE FUNCTION app.review_new(p_title text, p_message text, p_due_at timestamp with time zone, p_workflow uuid, p_stages jsonb)
 RETURNS app.reviews
 LANGUAGE plpgsql
AS $function$
declare
  r app.reviews;
  w app.approval_workflows;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  if p_due_at is not null and p_due_at <= now() then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('dueAt', 'in_past', 'a due time must be ahead')),
      'A due time must be ahead.');
  end if;
  if p_workflow is not null and p_stages is not null then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('stages', 'not_allowed', 'give a workflowId or stages, not both')),
      'Give a workflowId or stages, not both.');
  end if;
  if p_workflow is not null then
    select * into w from app.approval_workflows where id = p_workflow and workspace_id = v_ctx_workspace;
    if w.id is null or not w.active then
      perform app.raise(409, 'REVIEW_WORKFLOW_UNAVAILABLE', 'This workflow is inactive or gone.', jsonb_build_object('workflowId', p_workflow));
    end if;
  end if;
  if p_stages is not null then
    perform app.raise_field_problems(app.review_stages_problems(p_stages, 'stages'), 'The stages are not valid; see details.fields.');
  end if;
  insert into app.reviews (organization_id, workspace_id, workflow_id, title, message, due_at, stages,
    auto_schedule_on_approval, created_by)
  values (v_ctx_organization, v_ctx_workspace, w.id, btrim(p_title), p_message, p_due_at,
    case when p_stages is not null then app.review_stages_normalize(p_stages) end,
    coalesce(w.auto_schedule_on_approval, false), app.current_person_id())
  returning * into r;
  return r;
end
$function$;

CREATE OR REPLACE FUNCTION app.review_stages_problems(p_stages jsonb, p_field text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  v_problems jsonb := '[]';
  v_stage jsonb;
  v_i int := 0;
  v_a jsonb;
  v_j int;
  v_keys text[];
  v_role text;
  v_n int;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  if jsonb_typeof(p_stages) <> 'array' or jsonb_array_length(p_stages) = 0 then
    return jsonb_build_array(app.field_problem(p_field, 'required', 'at least one stage'));
  end if;
  if jsonb_array_length(p_stages) > 10 then
    return jsonb_build_array(app.field_problem(p_field, 'too_many', 'at most 10 stages'));
  end if;
  for v_stage in select e from jsonb_array_elements(p_stages) e loop
    v_keys := '{}';
    v_j := 0;
    if jsonb_typeof(v_stage -> 'approvers') <> 'array' or jsonb_array_length(v_stage -> 'approvers') = 0 then
      v_problems := v_problems || app.field_problem(format('%s/%s/approvers', p_field, v_i), 'required', 'at least one approver');
    else
      for v_a in select e from jsonb_array_elements(v_stage -> 'approvers') e loop
        if v_a ->> 'type' = 'member' then
          select r.role into v_role from app.user_workspace_roles((v_a ->> 'userId')::uuid) r
          where r.workspace_id = v_ctx_workspace;
          if app.role_rank(v_role) < app.role_rank('editor') then
            v_problems := v_problems || app.field_problem(format('%s/%s/approvers/%s/userId', p_field, v_i, v_j), 'not_an_editor',
              'an approver must be an editor or manager of this workspace (or a client reviewer)');
          end if;
        end if;
        if app.approver_key(v_a) = any (v_keys) then
          v_problems := v_problems || app.field_problem(format('%s/%s/approvers/%s', p_field, v_i, v_j), 'duplicate', 'listed twice in this stage');
        end if;
        v_keys := v_keys || app.approver_key(v_a);
        v_j := v_j + 1;
      end loop;
    end if;
    v_n := coalesce(jsonb_array_length(v_stage -> 'approvers'), 0);
    if v_stage ->> 'rule' = 'quorum' then
      if (v_stage ->> 'quorum') is null or (v_stage ->> 'quorum')::int > v_n then
        v_problems := v_problems || app.field_problem(format('%s/%s/quorum', p_field, v_i), 'out_of_range',
          format('a quorum between 1 and the number of approvers (%s)', v_n));
      end if;
    elsif v_stage ? 'quorum' and v_stage -> 'quorum' <> 'null' then
      v_problems := v_problems || app.field_problem(format('%s/%s/quorum', p_field, v_i), 'not_allowed', 'quorum goes with rule quorum');
    end if;
    v_i := v_i + 1;
  end loop;
  return v_problems;
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
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  select * into v_result from (
    select w.* from app.approval_workflows w
    where w.workspace_id = v_ctx_workspace and w.active
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

CREATE OR REPLACE FUNCTION app.sandbox_edit_caption_for_request(p_integration_id uuid, p_platform_post_id text, p_caption text)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_ok boolean;
  v_clock timestamptz;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  v_clock := clock_timestamp();
  with u as (update app.sandbox_posts set caption = p_caption, caption_edits = caption_edits + 1, updated_at = v_clock
             where integration_id = p_integration_id and platform_post_id = p_platform_post_id
               and workspace_id = v_ctx_workspace returning 1)
  select exists (select 1 from u) into v_ok;
  return v_ok;
end
$function$;

CREATE OR REPLACE FUNCTION app.save_campaign_phases(p_campaign_id uuid, p_phases jsonb)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  v_item jsonb;
  v_ord int;
  v_ids uuid[];
  v_foreign uuid[];
  v_phase app.campaign_phases;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  if p_phases is null or jsonb_typeof(p_phases) <> 'array' then
    perform app.raise(400, 'VALIDATION_FAILED', 'phases must be an array.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.phases', 'code', 'type', 'message', 'must be array'))));
  end if;
  if jsonb_array_length(p_phases) > 50 then
    perform app.raise(409, 'PHASE_LIMIT_REACHED', 'A campaign has at most 50 phases.',
      jsonb_build_object('campaignId', p_campaign_id, 'limit', 50));
  end if;
  v_ids := array(select (e ->> 'id')::uuid from jsonb_array_elements(p_phases) e where e ? 'id' and e ->> 'id' is not null);
  if cardinality(v_ids) <> (select count(distinct x) from unnest(v_ids) x) then
    perform app.raise(400, 'VALIDATION_FAILED', 'A phase id appears more than once in phases.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.phases', 'code', 'duplicate_id', 'message', 'each id at most once'))));
  end if;
  v_foreign := array(select x from unnest(v_ids) x
                     where not exists (select 1 from app.campaign_phases p where p.id = x and p.campaign_id = p_campaign_id));
  if cardinality(v_foreign) > 0 then
    perform app.raise(400, 'PHASE_NOT_IN_CAMPAIGN', 'Some phase ids are not phases of this campaign; omit id to create a phase.',
      jsonb_build_object('phaseIds', to_jsonb(v_foreign), 'campaignId', p_campaign_id));
  end if;
  delete from app.campaign_phases p where p.campaign_id = p_campaign_id and not (p.id = any (v_ids));
  for v_item, v_ord in select e, ord from jsonb_array_elements(p_phases) with ordinality x (e, ord) loop
    if v_item ->> 'id' is not null then
      select * into v_phase from app.campaign_phases p where p.id = (v_item ->> 'id')::uuid;
      if v_item ? 'name' then v_phase.name := btrim(v_item ->> 'name'); end if;
      if v_item ? 'color' then v_phase.color := lower(v_item ->> 'color'); end if;
      if v_item ? 'startsOn' then v_phase.starts_on := (v_item ->> 'startsOn')::date; end if;
      if v_item ? 'endsOn' then v_phase.ends_on := (v_item ->> 'endsOn')::date; end if;
      perform app.check_date_range(v_phase.starts_on, v_phase.ends_on, format('body.phases.%s', v_ord - 1));
      update app.campaign_phases p set name = v_phase.name, color = v_phase.color,
        starts_on = v_phase.starts_on, ends_on = v_phase.ends_on, position = v_ord - 1
      where p.id = v_phase.id;
    else
      perform app.check_date_range((v_item ->> 'startsOn')::date, (v_item ->> 'endsOn')::date, format('body.phases.%s', v_ord - 1));
      insert into app.campaign_phases (organization_id, workspace_id, campaign_id, name, color, starts_on, ends_on, position)
      values (v_ctx_organization, v_ctx_workspace, p_campaign_id, btrim(v_item ->> 'name'),
        lower(v_item ->> 'color'), (v_item ->> 'startsOn')::date, (v_item ->> 'endsOn')::date, v_ord - 1);
    end if;
  end loop;
end
$function$;

CREATE OR REPLACE FUNCTION app.schedule_editions(p_ids uuid[], p_at timestamp with time zone[])
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  v app.content_items;
  v_rows app.content_items[];
  v_ids uuid[];
  v_at timestamptz[];
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  -- The editions (distinct, each with its time), locked in id order.
  select array_agg(x.id order by x.id), array_agg(x.at order by x.id) into v_ids, v_at
  from (select distinct on (id) id, at from unnest(p_ids, p_at) u (id, at) order by id) x;
  select array_agg(i order by i.id) into v_rows from (
    select * from app.content_items
    where id = any (v_ids) and workspace_id = v_ctx_workspace and deleted_at is null
    order by id for update) i;
  if coalesce(cardinality(v_rows), 0) < cardinality(v_ids) then
    -- The first one missing, in the caller's order.
    perform app.raise_not_found('content', (select u.id from unnest(p_ids) with ordinality u (id, n)
                                            where not (u.id = any (coalesce(array(select (r).id from unnest(v_rows) r), '{}')))
                                            order by u.n limit 1));
  end if;
  -- The rules of each, in the caller's order, as app.schedule_edition raises them for one.
  for v in select r.* from unnest(v_rows) r join unnest(p_ids) with ordinality u (id, n) on u.id = r.id order by u.n loop
    perform app.assert_not_in_review(v);  -- reviews: 409 REVIEW_IN_PROGRESS
    perform app.require_content_status(v, array['draft', 'scheduled']);
    if v_at[array_position(v_ids, v.id)] < now() then
      perform app.raise_field_problems(jsonb_build_array(app.field_problem('scheduledAt', 'in_past', 'a time in the past cannot be scheduled')),
        'A time in the past cannot be scheduled.');
    end if;
  end loop;
  -- The platform rules are checked once per edition, after the update's other triggers
  -- (review, media in the bin, publish job): the update's own check trigger skips these
  -- editions (pressroom.publishable_checked), app.assert_publishable checks them.
  perform set_config('pressroom.publishable_checked', array_to_string(v_ids, ','), true);
  update app.content_items i set status = 'scheduled', scheduled_at = x.at
  from unnest(v_ids, v_at) x (id, at) where i.id = x.id;
  perform set_config('pressroom.publishable_checked', '', true);
  perform app.assert_publishable(v_ids, array[]::text[]);
end
$function$;

CREATE OR REPLACE FUNCTION app.webhook_subscription_for_update(p_id uuid)
 RETURNS app.webhook_subscriptions
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog'
AS $function$
declare
  v app.webhook_subscriptions;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('manager');
  -- every column but the secret (requests cannot read it)
  select s.id, s.organization_id, s.workspace_id, s.url, s.events, s.description, s.active, s.paused_reason, null::bytea, s.consecutive_failures, s.created_by, s.created_at, s.updated_at into v
  from app.webhook_subscriptions s where s.id = p_id and s.workspace_id = v_ctx_workspace for update;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No webhook subscription with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  return v;
end
$function$;

CREATE OR REPLACE FUNCTION app.work_claim(p_kind text, p_subject uuid, p_seconds integer)
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_token uuid := gen_random_uuid();
  v_got uuid;
  v_clock timestamptz;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  if v_ctx_workspace is null or v_ctx_organization is null then
    perform app.raise(403, 'WORKSPACE_REQUIRED', 'This operation needs a workspace.');
  end if;
  v_clock := clock_timestamp();
  insert into app.work_claims as c (kind, subject_id, organization_id, workspace_id, token, request_id, claimed_until)
  values (p_kind, p_subject, v_ctx_organization, v_ctx_workspace, v_token,
          nullif(current_setting('pressroom.request_id', true), ''),
          clock_timestamp() + make_interval(secs => greatest(p_seconds, 1)))
  on conflict (kind, subject_id, workspace_id) do update
    set organization_id = excluded.organization_id, workspace_id = excluded.workspace_id, token = excluded.token,
        request_id = excluded.request_id, claimed_until = excluded.claimed_until, claimed_at = v_clock
    where c.claimed_until <= v_clock
  returning token into v_got;
  return v_got;
end
$function$;

CREATE OR REPLACE FUNCTION app.work_claim_take(p_kind text, p_subject uuid, p_token uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_n int;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  delete from app.work_claims
  where kind = p_kind and subject_id = p_subject and token = p_token and workspace_id = v_ctx_workspace;
  get diagnostics v_n = row_count;
  return v_n > 0;
end
$function$;

CREATE OR REPLACE FUNCTION app.workbench_channel_problems(p_channels jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  return (
    select coalesce(jsonb_agg(p order by n), '[]') from (
      select x.n, case
        when not exists (select 1 from app.integrations g where g.id = x.id and g.workspace_id = v_ctx_workspace and g.deleted_at is null)
          then app.field_problem('channels.' || (x.n - 1), 'integration_not_found', 'no connected channel with this id in this workspace')
        when exists (select 1 from unnest(app.jsonb_uuids(p_channels)) with ordinality y (id, m) where y.id = x.id and y.m < x.n)
          then app.field_problem('channels.' || (x.n - 1), 'duplicate_channel', 'this channel is listed twice')
        end p
      from unnest(app.jsonb_uuids(p_channels)) with ordinality x (id, n)) q
    where p is not null
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.workbench_csv_resolve(p_kind text, p_cell text, p_field text, OUT ids uuid[], OUT problems jsonb)
 RETURNS record
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  v_token text;
  v_matches uuid[];
  v_sql text := case p_kind
    when 'channels' then 'select id, name from app.integrations where workspace_id = $1 and deleted_at is null'
    when 'tags' then 'select id, name from app.tags where workspace_id = $1'
    when 'pillar' then 'select id, name from app.pillars where workspace_id = $1'
    when 'format' then 'select id, name from app.formats where workspace_id = $1'
    when 'campaign' then 'select id, name from app.campaigns where workspace_id = $1' end;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  ids := '{}';
  problems := '[]';
  for v_token in select btrim(t) from regexp_split_to_table(coalesce(p_cell, ''), '[;|,]') t where btrim(t) <> '' loop
    if p_kind = 'media' then
      if v_token ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
        ids := ids || v_token::uuid;
      else
        problems := problems || app.field_problem(p_field, 'invalid_media_id', format('%s is not a media id', left(v_token, 80)));
      end if;
      continue;
    end if;
    execute format('select array_agg(id) from (%s) x where x.id::text = lower($2) or lower(btrim(x.name)) = lower($2)', v_sql)
      into v_matches using v_ctx_workspace, v_token;
    if v_matches is null then
      problems := problems || app.field_problem(p_field, 'not_found', format('no %s named %s in this workspace', p_kind, left(v_token, 80)));
    elsif cardinality(v_matches) > 1 then
      problems := problems || app.field_problem(p_field, 'ambiguous', format('%s names more than one %s; use its id', left(v_token, 80), p_kind));
    elsif not v_matches[1] = any (ids) then
      ids := ids || v_matches[1];
    end if;
  end loop;
end
$function$;

CREATE OR REPLACE FUNCTION app.workbench_insert_row(p_section app.workbench_sections, p_position text, p_body jsonb)
 RETURNS app.workbench_rows
 LANGUAGE plpgsql
AS $function$
declare
  v app.workbench_rows;
  pl record;
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
begin
  select * into pl from app.workbench_planned(p_body ->> 'scheduledAt');
  -- The content first, so the row is written once, with its root.
  insert into app.workbench_rows (organization_id, workspace_id, page_id, section_id, position, title, notes, planned_at, planned_on,
    content_root_id, created_by)
  values (p_section.organization_id, p_section.workspace_id, p_section.page_id, p_section.id, p_position,
    p_body ->> 'title', p_body ->> 'notes', pl.planned_at, pl.planned_on,
    app.workbench_first_content(p_body ->> 'title', pl.planned_at, p_body), v_ctx_user)
  returning * into v;
  return v;
end
$function$;

CREATE OR REPLACE FUNCTION app.workbench_page_for_update(p_id uuid)
 RETURNS app.workbench_pages
 LANGUAGE plpgsql
AS $function$
declare
  v app.workbench_pages;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  select * into v from app.workbench_pages where id = p_id and workspace_id = v_ctx_workspace for update;
  if v.id is null then
    perform app.raise_not_found('workbench page', p_id);
  end if;
  return v;
end
$function$;

CREATE OR REPLACE FUNCTION app.workbench_row_for_update(p_id uuid)
 RETURNS app.workbench_rows
 LANGUAGE plpgsql
AS $function$
declare
  v app.workbench_rows;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  select * into v from app.workbench_rows where id = p_id and workspace_id = v_ctx_workspace for update;
  if v.id is null then
    perform app.raise_not_found('workbench row', p_id);
  end if;
  return v;
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
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  begin
    select * into v from app.workbench_rows where id = p_row_id and workspace_id = v_ctx_workspace;
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

CREATE OR REPLACE FUNCTION app.workbench_section_for_update(p_id uuid)
 RETURNS app.workbench_sections
 LANGUAGE plpgsql
AS $function$
declare
  v app.workbench_sections;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  select * into v from app.workbench_sections where id = p_id and workspace_id = v_ctx_workspace for update;
  if v.id is null then
    perform app.raise_not_found('workbench section', p_id);
  end if;
  return v;
end
$function$;

CREATE OR REPLACE FUNCTION app.workflow_for(p_id uuid, p_lock boolean DEFAULT false)
 RETURNS app.approval_workflows
 LANGUAGE plpgsql
AS $function$
declare
  w app.approval_workflows;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  if p_lock then
    select * into w from app.approval_workflows where id = p_id and workspace_id = v_ctx_workspace for update;
  else
    select * into w from app.approval_workflows where id = p_id and workspace_id = v_ctx_workspace;
  end if;
  if w.id is null then
    perform app.raise_not_found('approval workflow', p_id);
  end if;
  return w;
end
$function$;

CREATE OR REPLACE FUNCTION app.workflow_name_taken(p_name text, p_except uuid)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  if exists (select 1 from app.approval_workflows w where w.workspace_id = v_ctx_workspace
             and lower(btrim(w.name)) = lower(btrim(p_name)) and w.id is distinct from p_except) then
    perform app.raise(409, 'NAME_TAKEN', 'An approval workflow with this name exists in this workspace.',
      jsonb_build_object('name', btrim(p_name)));
  end if;
end
$function$;

CREATE OR REPLACE FUNCTION app.workflow_problems(p_body jsonb, p_partial boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  v_problems jsonb := '[]';
  v_bad text[];
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  if p_body ? 'stages' or not p_partial then
    v_problems := v_problems || app.review_stages_problems(p_body -> 'stages', 'stages');
  end if;
  if p_body ? 'match' then
    v_bad := array(select x from jsonb_array_elements_text(coalesce(p_body -> 'match' -> 'integrationIds', '[]')) x
                   where not exists (select 1 from app.integrations g where g.id = x::uuid and g.workspace_id = v_ctx_workspace));
    if cardinality(v_bad) > 0 then
      v_problems := v_problems || app.field_problem('match/integrationIds', 'not_found', 'no channel with this id in this workspace: ' || array_to_string(v_bad, ', '));
    end if;
    v_bad := array(select x from jsonb_array_elements_text(coalesce(p_body -> 'match' -> 'tagIds', '[]')) x
                   where not exists (select 1 from app.tags t where t.id = x::uuid and t.workspace_id = v_ctx_workspace));
    if cardinality(v_bad) > 0 then
      v_problems := v_problems || app.field_problem('match/tagIds', 'not_found', 'no tag with this id in this workspace: ' || array_to_string(v_bad, ', '));
    end if;
    v_bad := array(select x from jsonb_array_elements_text(coalesce(p_body -> 'match' -> 'campaignIds', '[]')) x
                   where not exists (select 1 from app.campaigns c where c.id = x::uuid and c.workspace_id = v_ctx_workspace));
    if cardinality(v_bad) > 0 then
      v_problems := v_problems || app.field_problem('match/campaignIds', 'not_found', 'no campaign with this id in this workspace: ' || array_to_string(v_bad, ', '));
    end if;
  end if;
  return v_problems;
end
$function$;

CREATE OR REPLACE FUNCTION api.abort_media_upload(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.media_upload_sessions;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  select * into v from app.media_upload_sessions where id = p_id and workspace_id = v_ctx_workspace for update;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No upload session with this id in this workspace.', jsonb_build_object('sessionId', p_id));
  end if;
  if v.state = 'completed' then
    perform app.raise(409, 'UPLOAD_SESSION_COMPLETED', 'This upload was completed; delete the media item instead.',
      jsonb_build_object('sessionId', p_id, 'mediaId', v.media_id));
  end if;
  if v.state = 'pending' and app.work_claim_live('media_upload_completion', v.id) then
    perform app.raise(409, 'UPLOAD_COMPLETION_IN_PROGRESS',
      'A request is completing this upload; it cannot be aborted now.', jsonb_build_object('sessionId', p_id));
  end if;
  if v.state = 'pending' then
    update app.media_upload_sessions set state = 'aborted' where id = v.id returning * into v;
    -- The upload key, and the final key a refused completion may have left.
    insert into app.media_storage_garbage (storage_key, workspace_id, organization_id, reason)
    values (v.storage_key, v.workspace_id, v.organization_id, 'upload_aborted'),
           (format('media/%s/%s', v.workspace_id, v.id), v.workspace_id, v.organization_id, 'upload_aborted')
    on conflict (storage_key, workspace_id) do nothing;
  end if;
  return app.media_upload_json(v);
end
$function$;

CREATE OR REPLACE FUNCTION api.add_inbox_note(p_thread uuid, p_text text)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  t app.inbox_threads;
  v app.inbox_messages;
  v_max int := coalesce(app.setting('inbox_reply_max_length')::int, 8000);
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  t := app.inbox_thread(p_thread);
  if p_text is null or length(btrim(p_text)) = 0 or length(p_text) > v_max then
    perform app.raise(400, 'VALIDATION_FAILED', format('text must have 1 to %s characters.', v_max),
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.text', 'code', 'length', 'message', format('must have 1 to %s characters', v_max)))));
  end if;
  insert into app.inbox_messages (organization_id, workspace_id, integration_id, thread_id, direction, author, body, created_by)
  values (t.organization_id, t.workspace_id, t.integration_id, t.id, 'note', app.inbox_author(), p_text, v_ctx_user)
  returning * into v;
  return app.inbox_message_json(v);
end
$function$;

CREATE OR REPLACE FUNCTION api.add_member(p_email text, p_role text)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_user record;
  v_member app.workspace_members;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('manager');
  -- The request sees only its organization's users (policy users_api_select):
  -- what happens next never depends on other organizations.
  select id into v_user from app.users where lower(email) = lower(p_email);
  if v_user.id is null then
    -- Not a user of this organization: invite one, whether or not the
    -- address has an account elsewhere (an invitation is not an account).
    begin
      insert into app.users (organization_id, email, org_role, status)
      values (v_ctx_organization, p_email, 'member', 'invited')
      returning id into v_user;
    exception when unique_violation then
      -- Only users_organization_email_key can refuse an invitation: a
      -- concurrent request invited the same address into this organization.
      select id into v_user from app.users where lower(email) = lower(p_email);
    end;
  end if;
  if exists (select 1 from app.workspace_members
             where workspace_id = v_ctx_workspace and user_id = v_user.id) then
    perform app.raise(409, 'ALREADY_MEMBER', 'This user is already a member of the workspace; PATCH the member to change the role.',
      jsonb_build_object('userId', v_user.id));
  end if;
  insert into app.workspace_members (workspace_id, user_id, organization_id, role)
  values (v_ctx_workspace, v_user.id, v_ctx_organization, p_role)
  returning * into v_member;
  return app.member_json(v_member);
end
$function$;

CREATE OR REPLACE FUNCTION api.analytics_aggregates(p_from date, p_to date, p_interval text, p_group_by text, p_integration_ids uuid[])
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  return app.analytics_series(v_ctx_workspace, p_from, p_to, p_interval, p_group_by, p_integration_ids);
end
$function$;

CREATE OR REPLACE FUNCTION api.analytics_post(p_content_id uuid, p_from date, p_to date)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_item app.content_items;
  v_latest app.post_metrics_latest;
  v_tz text;
  v_from date;
  v_to date;
  v_period date[];
  v_series jsonb;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  select * into v_item from app.content_items i
  where i.id = p_content_id and i.workspace_id = v_ctx_workspace and i.status = 'sent';
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
$function$;

CREATE OR REPLACE FUNCTION api.analytics_posts(p_filter jsonb, p_sort_by text, p_order text, p_limit integer, p_offset bigint)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  return app.analytics_posts(v_ctx_workspace, p_filter, p_sort_by, p_order, p_limit, p_offset);
end
$function$;

CREATE OR REPLACE FUNCTION api.analytics_summary(p_from date, p_to date, p_integration_ids uuid[])
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  return app.analytics_summary(v_ctx_workspace, p_from, p_to, p_integration_ids);
end
$function$;

CREATE OR REPLACE FUNCTION api.attach_media_labels(p_id uuid, p_label_ids uuid[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.media_items;
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  perform app.media_check_labels(p_label_ids);
  v := app.media_item(p_id, true);
  perform app.media_require_active(v);
  insert into app.media_item_labels (media_id, label_id, workspace_id, organization_id, created_by)
  select v.id, x, v.workspace_id, v.organization_id, v_ctx_user from unnest(p_label_ids) x
  on conflict do nothing;
  return app.media_json(v);
end
$function$;

CREATE OR REPLACE FUNCTION api.begin_media_upload_completion(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.media_upload_sessions;
  v_media app.media_items;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  select * into v from app.media_upload_sessions where id = p_id and workspace_id = v_ctx_workspace for update;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No upload session with this id in this workspace.', jsonb_build_object('sessionId', p_id));
  end if;
  if v.state = 'completed' then
    select * into v_media from app.media_items where id = v.media_id;
    if v_media.id is null then
      perform app.raise(404, 'NOT_FOUND', 'The media item made from this upload was deleted permanently.',
        jsonb_build_object('sessionId', p_id));
    end if;
    return jsonb_build_object('state', 'completed', 'media', app.media_json(v_media));
  end if;
  if v.state = 'aborted' then
    perform app.raise(409, 'UPLOAD_SESSION_ABORTED', 'This upload was aborted; start a new one.', jsonb_build_object('sessionId', p_id));
  end if;
  if v.state = 'expired' or v.expires_at <= now() then
    perform app.raise(410, 'UPLOAD_SESSION_EXPIRED',
      format('This upload session expired at %s; start a new one.', v.expires_at),
      jsonb_build_object('sessionId', p_id, 'expiresAt', v.expires_at));
  end if;
  return jsonb_build_object('state', 'pending', 'sessionId', v.id, 'uploadKey', v.storage_key,
    'finalKey', format('media/%s/%s', v.workspace_id, v.id), 'declaredSize', v.declared_size,
    'contentType', v.content_type, 'filename', v.filename, 'folderId', v.folder_id);
end
$function$;

CREATE OR REPLACE FUNCTION api.bulk_create_workbench_rows(p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_items jsonb := p_body -> 'rows';
  v_sections uuid[];
  v_keys jsonb := '{}';
  v_used jsonb := '{}';
  v_sid uuid;
  s app.workbench_sections;
  v_item jsonb;
  v_n int := 0;
  v_k int;
  v app.workbench_rows;
  v_results jsonb[] := '{}';
  v_ok int := 0;
  v_state text; v_msg text; v_detail text; v_hint text;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  v_sections := array(select distinct (e ->> 'sectionId')::uuid from jsonb_array_elements(v_items) e order by 1);
  perform app.workbench_lock(variadic v_sections);
  -- Keys for each section's new rows, in request order, at its end.
  foreach v_sid in array v_sections loop
    select * into s from app.workbench_sections where id = v_sid and workspace_id = v_ctx_workspace for update;
    if s.id is not null then
      v_keys := v_keys || jsonb_build_object(v_sid::text, to_jsonb(app.workbench_append_keys('rows', v_sid,
        (select count(*)::int from jsonb_array_elements(v_items) e where (e ->> 'sectionId')::uuid = v_sid))));
      v_used := v_used || jsonb_build_object(v_sid::text, 0);
    end if;
  end loop;
  for v_item in select e from jsonb_array_elements(v_items) e loop
    begin
      v_sid := (v_item ->> 'sectionId')::uuid;
      if not v_keys ? v_sid::text then
        perform app.raise_not_found('workbench section', v_sid);
      end if;
      select * into s from app.workbench_sections where id = v_sid;
      v_k := (v_used ->> v_sid::text)::int;
      v_used := jsonb_set(v_used, array[v_sid::text], to_jsonb(v_k + 1));
      v := app.workbench_insert_row(s, v_keys -> v_sid::text ->> v_k, v_item);
      v_results := array_append(v_results, jsonb_build_object('index', v_n, 'ok', true, 'rowId', v.id, 'error', null));
      v_ok := v_ok + 1;
    exception when others then
      get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text, v_detail = pg_exception_detail, v_hint = pg_exception_hint;
      v_results := array_append(v_results, jsonb_build_object('index', v_n, 'ok', false, 'row', null,
        'error', app.workbench_error_json(v_state, v_msg, v_detail, v_hint)));
    end;
    v_n := v_n + 1;
  end loop;
  return jsonb_build_object('succeeded', v_ok, 'failed', v_n - v_ok, 'results', app.workbench_fill_rows(v_results));
end
$function$;

CREATE OR REPLACE FUNCTION api.cancel_recurring_occurrence(p_occurrence_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  o app.recurring_occurrences;
  s app.recurring_series;
  v_out jsonb;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  select * into o from app.recurring_occurrences
  where id = p_occurrence_id and workspace_id = v_ctx_workspace;
  if o.id is null then
    perform app.raise_not_found('recurring occurrence', p_occurrence_id);
  end if;
  select * into s from app.recurring_series where id = o.series_id for update;
  select * into o from app.recurring_occurrences where id = o.id for update;
  perform app.require_series_version(s, p_body);
  if o.status = 'cancelled' then
    perform app.raise(409, 'OCCURRENCE_ALREADY_CANCELLED', 'This occurrence is already cancelled.',
      jsonb_build_object('occurrenceId', o.id));
  end if;
  if (select app.recurring_occurrence_published(o.root_id)) then
    perform app.raise(409, 'OCCURRENCE_ALREADY_PUBLISHED', 'This occurrence was already published; it cannot be cancelled.',
      jsonb_build_object('occurrenceId', o.id, 'rootId', o.root_id));
  end if;
  v_out := app.cancel_occurrence(o);
  update app.recurring_series set version = version + 1 where id = s.id returning * into s;
  return jsonb_build_object('seriesId', s.id, 'seriesVersion', s.version, 'seriesStatus', s.status,
    'cancelledOccurrenceIds', jsonb_build_array(o.id), 'cancelledContentIds', v_out -> 'cancelled',
    'keptContentIds', v_out -> 'kept');
end
$function$;

CREATE OR REPLACE FUNCTION api.cancel_recurring_series(p_series_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  s app.recurring_series;
  v_from int;
  o app.recurring_occurrences;
  v_out jsonb;
  v_occurrences uuid[] := '{}';
  v_cancelled jsonb := '[]';
  v_kept jsonb := '[]';
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  select * into s from app.recurring_series
  where id = p_series_id and workspace_id = v_ctx_workspace for update;
  if s.id is null then
    perform app.raise_not_found('recurring series', p_series_id);
  end if;
  perform app.require_series_version(s, p_body);
  if s.status = 'cancelled' then
    perform app.raise(409, 'SERIES_ALREADY_CANCELLED', 'This series is already cancelled.', jsonb_build_object('seriesId', s.id));
  end if;
  if p_body ->> 'effectiveOccurrenceId' is not null then
    select occurrence_index into v_from from app.recurring_occurrences
    where id = (p_body ->> 'effectiveOccurrenceId')::uuid and series_id = s.id;
    if v_from is null then
      perform app.raise(404, 'NOT_FOUND', 'No occurrence with this id in this series.',
        jsonb_build_object('seriesId', s.id, 'effectiveOccurrenceId', p_body -> 'effectiveOccurrenceId'));
    end if;
  else
    select min(occurrence_index) into v_from from app.recurring_occurrences
    where series_id = s.id and status = 'materialized' and not app.recurring_occurrence_published(root_id);
    v_from := coalesce(v_from, s.next_index);
  end if;
  for o in select * from app.recurring_occurrences
           where series_id = s.id and occurrence_index >= v_from and status <> 'cancelled'
           order by occurrence_index for update loop
    continue when (select app.recurring_occurrence_published(o.root_id));
    v_out := app.cancel_occurrence(o);
    v_occurrences := v_occurrences || o.id;
    v_cancelled := v_cancelled || (v_out -> 'cancelled');
    v_kept := v_kept || (v_out -> 'kept');
  end loop;
  update app.recurring_series set status = 'cancelled', cancelled_at = now(), version = version + 1
  where id = s.id returning * into s;
  return jsonb_build_object('seriesId', s.id, 'seriesVersion', s.version, 'seriesStatus', s.status,
    'cancelledOccurrenceIds', to_jsonb(v_occurrences), 'cancelledContentIds', v_cancelled, 'keptContentIds', v_kept);
end
$function$;

CREATE OR REPLACE FUNCTION api.check_content(p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_intent text;
  v_at timestamptz;
  v_channels jsonb;
  v_draft jsonb;
  v_created jsonb;
  v_general jsonb := '[]';
  v_fields jsonb := '[]';
  v_detail text;
  v_hint text;
  v_out jsonb := '[]';
  v_channel jsonb;
  v_i int := 0;
  v_mine jsonb;
  v_platform text;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  if jsonb_typeof(p_body) is distinct from 'object' then
    perform app.raise(400, 'VALIDATION_FAILED', 'The body is the body of content create, a JSON object.', '{}'::jsonb);
  end if;
  v_intent := coalesce(p_body ->> 'intent', 'draft');
  v_channels := case when jsonb_typeof(p_body -> 'channels') = 'array' then p_body -> 'channels' else '[]' end;
  -- The time, as create checks it for the intent asked for.
  if v_intent = 'schedule' then
    v_at := (p_body ->> 'scheduledAt')::timestamptz;
    if v_at is null then
      v_general := v_general || app.field_problem('scheduledAt', 'required', 'intent schedule needs scheduledAt');
    elsif v_at < now() then
      v_general := v_general || app.field_problem('scheduledAt', 'in_past', 'a time in the past cannot be scheduled');
    end if;
  end if;
  if v_intent <> 'draft' and jsonb_array_length(v_channels) = 0 then
    v_general := v_general || app.field_problem('channels', 'required', format('intent %s needs at least one channel', v_intent));
  end if;
  -- The rest through content create itself, as a draft (not held to the rules on create), in a
  -- subtransaction that is always rolled back; then every edition against its platform's rules.
  v_draft := (p_body - 'recurrence' - 'scheduledAt' - 'intendedPublishAt') || jsonb_build_object('intent', 'draft');
  begin
    v_created := api.create_content(v_draft);
    for v_i in 0 .. jsonb_array_length(coalesce(v_created -> 'editions', '[]')) - 1 loop
      v_fields := v_fields || app.content_item_problems(v_ctx_workspace, (v_created -> 'editions' -> v_i ->> 'id')::uuid, 'channels.' || v_i || '.');
    end loop;
    raise exception using errcode = 'PRCHK', message = 'check_content: rolled back';
  exception
    when sqlstate 'PRCHK' then
      null;
    when sqlstate 'PT400' then
      get stacked diagnostics v_detail = pg_exception_detail, v_hint = pg_exception_hint;
      if v_detail <> 'VALIDATION_FAILED' or coalesce(v_hint, '') = '' or (v_hint::jsonb -> 'fields') is null then
        raise;
      end if;
      v_fields := v_hint::jsonb -> 'fields';
  end;
  -- One result per channel: its problems (fields channels.N.*); the others apply to every channel.
  v_general := v_general || coalesce((select jsonb_agg(f) from jsonb_array_elements(v_fields) f
                                      where (f ->> 'field') !~ '^channels\.\d+\.'), '[]');
  v_i := 0;
  for v_channel in select e from jsonb_array_elements(v_channels) e loop
    select g.platform into v_platform from app.integrations g
    where (v_channel ->> 'integrationId') ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
      and g.id = (v_channel ->> 'integrationId')::uuid and g.workspace_id = v_ctx_workspace and g.deleted_at is null;
    v_mine := coalesce((select jsonb_agg(f) from jsonb_array_elements(v_fields) f
                        where (f ->> 'field') like 'channels.' || v_i || '.%'), '[]');
    v_out := v_out || jsonb_build_object('index', v_i, 'integrationId', v_channel ->> 'integrationId', 'platform', v_platform,
      'valid', jsonb_array_length(v_mine) = 0, 'problems', v_mine);
    v_platform := null;
    v_i := v_i + 1;
  end loop;
  return jsonb_build_object('valid', jsonb_array_length(v_general) = 0 and not exists (
      select 1 from jsonb_array_elements(v_out) c where not (c ->> 'valid')::boolean),
    'problems', v_general, 'channels', v_out);
end
$function$;

CREATE OR REPLACE FUNCTION api.choose_pending_connection(p_id uuid, p_account_ids text[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.pending_connections;
  v_unknown text[];
  v_account text;
  v_saved jsonb;
  v_ids uuid[] := '{}';
  v_i int;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.connect_require_manager();
  select * into v from app.pending_connections where workspace_id = v_ctx_workspace and id = p_id and expires_at > now() for update;
  if v.id is null then
    perform app.raise_not_found('pending connection', p_id);
  end if;
  if p_account_ids is null or cardinality(p_account_ids) = 0 then
    perform app.raise(400, 'VALIDATION_FAILED', 'Choose at least one account.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.accountIds', 'code', 'minItems', 'message', 'choose at least one account'))));
  end if;
  select array_agg(x) into v_unknown from unnest(p_account_ids) x
  where not exists (select 1 from jsonb_array_elements(v.accounts) a where a ->> 'accountId' = x);
  if v_unknown is not null then
    perform app.raise(400, 'UNKNOWN_ACCOUNT', 'This consent does not cover these accounts.', jsonb_build_object('accountIds', to_jsonb(v_unknown)));
  end if;
  for v_account in select distinct x from unnest(p_account_ids) x order by 1 loop
    select o::int into v_i from jsonb_array_elements(v.accounts) with ordinality y (a, o) where a ->> 'accountId' = v_account;
    v_saved := app.connection_save(v.organization_id, v.workspace_id, coalesce(v.user_id, (select created_by from app.api_keys where id = v.api_key_id)),
      v.connector, v.platform, v.instance_url, null,
      (v.accounts -> (v_i - 1)) || jsonb_build_object('credential',
        (v.credential_meta -> (v_i - 1)) || jsonb_build_object('ciphertext', encode(v.credentials[v_i], 'base64'))));
    v_ids := v_ids || (v_saved ->> 'integrationId')::uuid;
  end loop;
  delete from app.pending_connections where workspace_id = v.workspace_id and id = v.id;
  return (select jsonb_agg(app.integration_json(x, true) order by o) from unnest(v_ids) with ordinality u (x, o));
end
$function$;

CREATE OR REPLACE FUNCTION api.complete_media_upload(p_id uuid, p_facts jsonb, p_patch jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.media_upload_sessions;
  v_media app.media_items;
  v_type text := p_facts ->> 'type';
  v_size bigint := (p_facts ->> 'fileSize')::bigint;
  v_folder uuid;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  select * into v from app.media_upload_sessions where id = p_id and workspace_id = v_ctx_workspace
    and state = 'pending' for update;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No pending upload session with this id in this workspace.', jsonb_build_object('sessionId', p_id));
  end if;
  if v_size > app.media_max_bytes(v_type) then
    perform app.raise(413, 'MEDIA_TOO_LARGE',
      format('A %s may be at most %s bytes; this one is %s bytes.', v_type, app.media_max_bytes(v_type), v_size),
      jsonb_build_object('type', v_type, 'size', v_size, 'maxBytes', app.media_max_bytes(v_type)));
  end if;
  v_folder := case when p_patch ? 'folderId' then (p_patch ->> 'folderId')::uuid else v.folder_id end;
  if v_folder is not null then
    perform app.media_folder(v_folder, 'folderId');
  end if;
  insert into app.media_items (id, organization_id, workspace_id, folder_id, type, filename, content_type, file_size,
    width, height, duration_ms, checksum_sha256, storage_key, alt_text, source, created_by)
  values (v.id, v.organization_id, v.workspace_id, v_folder, v_type, v.filename, p_facts ->> 'contentType', v_size,
    (p_facts ->> 'width')::int, (p_facts ->> 'height')::int, (p_facts ->> 'durationMs')::int,
    p_facts ->> 'checksumSha256', p_facts ->> 'storageKey',
    case when p_patch ? 'altText' then p_patch ->> 'altText' else v.alt_text end,
    'client_upload', v.created_by)
  returning * into v_media;
  update app.media_upload_sessions set state = 'completed', completed_at = now(), media_id = v_media.id
  where id = v.id;
  return app.media_json(v_media);
end
$function$;

CREATE OR REPLACE FUNCTION api.connect_begin(p_platform text, p_connector text, p_integration_id uuid, p_instance_url text, p_state_hash bytea, p_verifier_ciphertext bytea, p_redirect_uri text, p_return_to text, p_app jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v jsonb := api.connect_prepare(p_platform, p_connector, p_integration_id, p_instance_url);
  v_connector text := v ->> 'connector';
  v_instance text := v ->> 'instanceUrl';
  v_app_id uuid;
  v_expires timestamptz := now() + interval '10 minutes';
  v_scopes text[];
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
  v_ctx_api_key uuid := app.current_api_key_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  if v ->> 'connect' <> 'oauth' and not coalesce((select c.oauth from app.connectors c where c.name = v_connector), false) then
    perform app.raise(400, 'CONNECT_FLOW_NOT_APPLICABLE',
      format('The %s connector signs in with a password: use POST .../integrations/connect-password.', v_connector),
      jsonb_build_object('connector', v_connector));
  end if;
  if p_state_hash is null or length(p_state_hash) <> 32 then
    perform app.raise(400, 'VALIDATION_FAILED', 'The state hash is the SHA-256 of the state (32 bytes).');
  end if;
  if p_app is not null and p_app ? 'secretCiphertext' then
    -- An app the server just registered on the instance (Mastodon): replaces one registered
    -- there before for another callback URL (its unfinished connections go with it).
    v_app_id := (p_app ->> 'id')::uuid;
    v_scopes := array(select jsonb_array_elements_text(coalesce(p_app -> 'scopes', '[]')));
    delete from app.platform_apps where connector = v_connector and instance = coalesce(v_instance, '') and source = 'registered';
    insert into app.platform_apps (id, connector, instance, client_id, secret_ciphertext, source, redirect_uri, scopes)
    values (v_app_id, v_connector, coalesce(v_instance, ''), p_app ->> 'clientId', decode(p_app ->> 'secretCiphertext', 'base64'),
      'registered', p_app ->> 'redirectUri', v_scopes);
  elsif p_app is not null then
    v_app_id := (p_app ->> 'id')::uuid;
    if v_app_id is distinct from (v -> 'app' ->> 'id')::uuid then
      perform app.raise(409, 'PLATFORM_APP_CHANGED', 'The platform app changed while the connection started; start again.');
    end if;
  end if;
  insert into app.oauth_states (workspace_id, state_hash, organization_id, user_id, api_key_id, connector, platform, instance_url,
    platform_app_id, redirect_uri, return_to, integration_id, verifier_ciphertext, expires_at)
  values (v_ctx_workspace, p_state_hash, v_ctx_organization, v_ctx_user, v_ctx_api_key,
    v_connector, v ->> 'platform', v_instance, v_app_id, p_redirect_uri, p_return_to, p_integration_id, p_verifier_ciphertext, v_expires);
  return jsonb_build_object('connector', v_connector, 'platform', v ->> 'platform', 'integrationId', p_integration_id,
    'instanceUrl', v_instance, 'expiresAt', v_expires);
end
$function$;

CREATE OR REPLACE FUNCTION api.connect_prepare(p_platform text, p_connector text, p_integration_id uuid, p_instance_url text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_conn app.connectors;
  v_integ app.integrations;
  v_instance text := p_instance_url;
  v_app app.platform_apps;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.connect_require_manager();
  if p_integration_id is not null then
    select * into v_integ from app.integrations
    where id = p_integration_id and workspace_id = v_ctx_workspace and deleted_at is null;
    if v_integ.id is null then
      perform app.raise_not_found('integration', p_integration_id);
    end if;
    select * into v_conn from app.connectors where name = v_integ.connector;
    if v_conn.connect = 'none' then
      perform app.raise(409, 'RECONNECT_NOT_APPLICABLE', format('A %s integration has no platform account to reconnect.', v_integ.connector),
        jsonb_build_object('integrationId', v_integ.id, 'connector', v_integ.connector));
    end if;
    v_instance := v_integ.instance_url;
  else
    v_conn := app.connect_connector(p_platform, p_connector);
  end if;
  if v_conn.connect = 'none' then
    perform app.raise(400, 'CONNECT_FLOW_NOT_APPLICABLE',
      format('The %s connector needs no platform sign-in: create the integration with POST .../integrations.', v_conn.name),
      jsonb_build_object('connector', v_conn.name));
  end if;
  select * into v_app from app.platform_apps where connector = v_conn.name and instance = coalesce(v_instance, '');
  return jsonb_build_object('connector', v_conn.name, 'connect', v_conn.connect,
    'platform', coalesce(v_integ.platform, p_platform), 'platforms', to_jsonb(v_conn.platforms),
    'integrationId', v_integ.id, 'instanceUrl', v_instance,
    'app', case when v_app.id is not null then jsonb_build_object('id', v_app.id, 'clientId', v_app.client_id,
      'redirectUri', v_app.redirect_uri, 'source', v_app.source, 'scopes', to_jsonb(v_app.scopes)) end);
end
$function$;

CREATE OR REPLACE FUNCTION api.connect_with_password(p_platform text, p_connector text, p_integration_id uuid, p_instance_url text, p_account jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v jsonb := api.connect_prepare(p_platform, p_connector, p_integration_id, p_instance_url);
  v_saved jsonb;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  if v ->> 'connect' <> 'password' then
    perform app.raise(400, 'CONNECT_FLOW_NOT_APPLICABLE',
      format('The %s connector signs in through the platform: use POST .../integrations/connect.', v ->> 'connector'),
      jsonb_build_object('connector', v ->> 'connector'));
  end if;
  v_saved := app.connection_save(v_ctx_organization, v_ctx_workspace, v_ctx_user,
    v ->> 'connector', v ->> 'platform', coalesce(v ->> 'instanceUrl', p_instance_url), p_integration_id, p_account);
  return app.integration_json((v_saved ->> 'integrationId')::uuid, true);
end
$function$;

CREATE OR REPLACE FUNCTION api.content_failed_count()
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  return jsonb_build_object('count', (select count(*) from app.content_items
    where workspace_id = v_ctx_workspace and status = 'failed' and deleted_at is null));
end
$function$;

CREATE OR REPLACE FUNCTION api.content_pending_approval_count()
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  return jsonb_build_object('count', (select count(*) from app.content_items
    where workspace_id = v_ctx_workspace and status = 'pending_approval' and deleted_at is null));
end
$function$;

CREATE OR REPLACE FUNCTION api.create_analytics_report(p_from date, p_to date, p_integration_ids uuid[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ws uuid := app.current_workspace_id();
  v_plan text;
  v_period date[];
  v_ids uuid[];
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  select o.plan into v_plan from app.organizations o where o.id = v_ctx_organization;
  if app.plan_rank(v_plan) < app.plan_rank('standard') then
    perform app.raise(401, 'PLAN_REQUIRED', format('PDF reports need the standard plan or higher; this organization is on %s.', v_plan),
      jsonb_build_object('plan', v_plan, 'requiredPlan', 'standard'));
  end if;
  v_period := app.analytics_period(v_ws, p_from, p_to);
  v_ids := app.analytics_check_integrations(v_ws, p_integration_ids);
  return app.analytics_report_insert(v_period[1], v_period[2], v_ids);
end
$function$;

CREATE OR REPLACE FUNCTION api.create_api_key(p_name text, p_workspace_ids uuid[], p_role text, p_expires_at timestamp with time zone, p_key_prefix text, p_key_hash bytea)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_inserted bigint; -- rows of the INSERT ... SELECTs below (see this migration)
  v_key_id uuid;
  v_missing uuid[];
  v_managed uuid[] := app.managed_workspace_ids();
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_session();
  perform app.require_role('manager');
  if p_expires_at is not null and p_expires_at <= now() then
    perform app.raise(400, 'VALIDATION_FAILED', 'expiresAt must be in the future.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'expiresAt',
        'code', 'in_past', 'message', 'must be in the future'))));
  end if;
  select coalesce(array_agg(x), '{}') into v_missing
  from unnest(p_workspace_ids) x where not (x = any (v_managed));
  if cardinality(v_missing) > 0 then
    perform app.raise(403, 'WORKSPACE_FORBIDDEN',
      'Every workspace granted to a key must be one you manage.',
      jsonb_build_object('workspaceIds', to_jsonb(v_missing)));
  end if;
  -- The key's role cannot exceed the creator's role in any granted
  -- workspace; managing them all, the creator is manager in each.
  insert into app.api_keys (organization_id, created_by, name, key_prefix, key_hash, role, expires_at)
  values (v_ctx_organization, v_ctx_user, p_name, p_key_prefix, p_key_hash,
          coalesce(p_role, 'editor'), p_expires_at)
  returning id into v_key_id;
  with inserted as (
    insert into app.api_key_workspaces (api_key_id, workspace_id, organization_id)
    select v_key_id, x, v_ctx_organization from (select distinct unnest(p_workspace_ids) x) s
    returning 1)
  select count(*) into v_inserted from inserted;
  return app.api_key_json(v_key_id, false);
end
$function$;

CREATE OR REPLACE FUNCTION api.create_approval_workflow(p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  w app.approval_workflows;
  v_position int;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('manager');
  perform app.raise_field_problems(app.workflow_problems(p_body, false), 'The workflow is not valid; see details.fields.');
  perform app.workflow_name_taken(p_body ->> 'name', null);
  v_position := coalesce((select max(position) + 1 from app.approval_workflows where workspace_id = v_ctx_workspace), 0);
  insert into app.approval_workflows (organization_id, workspace_id, name, position, active, match, stages,
    auto_schedule_on_approval, created_by)
  values (v_ctx_organization, v_ctx_workspace, btrim(p_body ->> 'name'),
    v_position,
    coalesce((p_body ->> 'active')::boolean, true), app.workflow_match_normalize(coalesce(p_body -> 'match', '{}')),
    app.review_stages_normalize(p_body -> 'stages'), coalesce((p_body ->> 'autoScheduleOnApproval')::boolean, false),
    app.current_person_id())
  returning * into w;
  return app.workflow_json(w);
end
$function$;

CREATE OR REPLACE FUNCTION api.create_article(p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ws uuid;
  v_org uuid;
  v_integration uuid := (p_body ->> 'integrationId')::uuid;
  v_title text := p_body ->> 'title';
  v_html text := coalesce(p_body ->> 'bodyHtml', '');
  v_count int := coalesce((p_body ->> 'characterCount')::int, 0);
  v_cover uuid := (p_body ->> 'coverMediaId')::uuid;
  v_problems jsonb := coalesce(p_body -> 'problems', '[]');
  v_root uuid;
  v_item uuid;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  select v_ctx_workspace, v_ctx_organization into v_ws, v_org;
  v_problems := v_problems || (select app.article_integration_problems(v_ws, v_integration));
  if v_title is null or char_length(v_title) not between 1 and 200 then
    v_problems := v_problems || app.field_problem('title', 'length', 'a title has 1 to 200 characters');
  end if;
  v_problems := v_problems || (select app.article_media_problems(v_ws, v_html, v_cover));
  perform app.raise_field_problems(v_problems, 'The article is not valid; see details.fields.');
  insert into app.content_roots (organization_id, workspace_id, title, created_by)
  values (v_org, v_ws, v_title, v_ctx_user)
  returning id into v_root;
  insert into app.content_items (organization_id, workspace_id, root_id, integration_id, kind, status, created_by)
  values (v_org, v_ws, v_root, v_integration, 'article', 'draft', v_ctx_user)
  returning id into v_item;
  insert into app.articles (content_item_id, organization_id, workspace_id, title, body_html, character_count, cover_media_id)
  values (v_item, v_org, v_ws, v_title, v_html, v_count, v_cover);
  return (select app.article_json(v_item, true));
end
$function$;

CREATE OR REPLACE FUNCTION api.create_campaign(p_name text, p_description text, p_color text, p_starts_on date, p_ends_on date, p_phases jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.campaigns;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  perform app.check_date_range(p_starts_on, p_ends_on);
  insert into app.campaigns (organization_id, workspace_id, name, description, color, starts_on, ends_on, created_by)
  values (v_ctx_organization, v_ctx_workspace, btrim(p_name), p_description, lower(p_color),
    p_starts_on, p_ends_on, v_ctx_user)
  returning * into v;
  if p_phases is not null then
    perform app.save_campaign_phases(v.id, p_phases);
  end if;
  return app.campaign_json(v, true);
end
$function$;

CREATE OR REPLACE FUNCTION api.create_campaign_phase(p_campaign_id uuid, p_name text, p_color text, p_starts_on date, p_ends_on date, p_position integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_campaign app.campaigns;
  v app.campaign_phases;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  v_campaign := app.campaign_for_update(p_campaign_id);
  perform app.check_date_range(p_starts_on, p_ends_on);
  insert into app.campaign_phases (organization_id, workspace_id, campaign_id, name, color, starts_on, ends_on, position)
  values (v_ctx_organization, v_ctx_workspace, v_campaign.id, btrim(p_name), lower(p_color),
    p_starts_on, p_ends_on, 2147483647)
  returning * into v;
  perform app.place_campaign_phase(v_campaign.id, v.id, p_position);
  select * into v from app.campaign_phases p where p.id = v.id;
  return app.campaign_phase_json(v);
end
$function$;

CREATE OR REPLACE FUNCTION api.create_content(p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_intent text := coalesce(p_body ->> 'intent', 'draft');
  v_channels jsonb := coalesce(p_body -> 'channels', '[]');
  v_scheduled_at timestamptz := (p_body ->> 'scheduledAt')::timestamptz;
  v_intended_at timestamptz := (p_body ->> 'intendedPublishAt')::timestamptz;
  v_problems jsonb := '[]';
  v_channel jsonb;
  v_i int := 0;
  v_platform text;
  v_root app.content_roots;
  v_ids uuid[] := '{}';
  v_prefixes text[] := '{}';
  v_status text;
  v_at timestamptz;
  v_campaign uuid;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  if v_intent = 'schedule' and v_scheduled_at is null then
    v_problems := v_problems || app.field_problem('scheduledAt', 'required', 'intent schedule needs scheduledAt');
  end if;
  if v_intent <> 'schedule' and v_scheduled_at is not null then
    v_problems := v_problems || app.field_problem('scheduledAt', 'not_allowed',
      'scheduledAt goes with intent schedule; a draft takes intendedPublishAt, publish_now publishes at once');
  end if;
  if v_intent = 'schedule' and v_scheduled_at < now() then
    v_problems := v_problems || app.field_problem('scheduledAt', 'in_past', 'a time in the past cannot be scheduled');
  end if;
  if v_intent <> 'draft' and v_intended_at is not null then
    v_problems := v_problems || app.field_problem('intendedPublishAt', 'not_allowed', 'intendedPublishAt is the planned time of a draft');
  end if;
  if v_intent <> 'draft' and jsonb_array_length(v_channels) = 0 then
    v_problems := v_problems || app.field_problem('channels', 'required', format('intent %s needs at least one channel', v_intent));
  end if;
  if p_body ? 'recurrence' and p_body -> 'recurrence' <> 'null' then
    if v_intent = 'publish_now' then
      v_problems := v_problems || app.field_problem('recurrence', 'not_allowed', 'a recurring series is scheduled or drafted, not published now');
    elsif jsonb_array_length(v_channels) = 0 then
      v_problems := v_problems || app.field_problem('channels', 'required', 'a recurring series needs at least one channel');
    elsif v_intent = 'draft' and v_intended_at is null then
      v_problems := v_problems || app.field_problem('intendedPublishAt', 'required', 'a recurring series of drafts needs intendedPublishAt as its first time');
    end if;
  end if;
  v_problems := v_problems || (select app.media_ref_problems(v_ctx_workspace, app.jsonb_uuids(p_body -> 'mediaIds'), 'mediaIds'));
  v_problems := v_problems || app.planning_problems(p_body);
  for v_channel in select e from jsonb_array_elements(v_channels) e loop
    select g.platform into v_platform from app.integrations g
    where g.id = (v_channel ->> 'integrationId')::uuid and g.workspace_id = v_ctx_workspace and g.deleted_at is null;
    if v_platform is null then
      v_problems := v_problems || app.field_problem('channels.' || v_i || '.integrationId', 'integration_not_found',
        'no connected channel with this id in this workspace');
    end if;
    if exists (select 1 from jsonb_array_elements(v_channels) with ordinality e (x, n)
               where x ->> 'integrationId' = v_channel ->> 'integrationId' and n - 1 < v_i) then
      v_problems := v_problems || app.field_problem('channels.' || v_i || '.integrationId', 'duplicate_channel',
        'a root has one edition per channel; this channel is listed twice');
    end if;
    v_problems := v_problems || app.content_payload_problems(v_platform, v_channel, 'channels.' || v_i || '.');
    v_i := v_i + 1;
  end loop;
  perform app.raise_field_problems(v_problems, 'The request is not valid; see details.fields.');

  v_campaign := coalesce((p_body ->> 'campaignId')::uuid,
                         (select campaign_id from app.campaign_phases where id = (p_body ->> 'phaseId')::uuid));
  insert into app.content_roots (organization_id, workspace_id, title, caption, organizational_title, notes,
    campaign_id, phase_id, created_by)
  values (v_ctx_organization, v_ctx_workspace, p_body ->> 'title', p_body ->> 'caption',
    p_body ->> 'organizationalTitle', case when p_body ->> 'notes' is not null then to_jsonb(p_body ->> 'notes') end,
    v_campaign,
    (p_body ->> 'phaseId')::uuid, v_ctx_user)
  returning * into v_root;
  if jsonb_typeof(p_body -> 'mediaIds') = 'array' then
    perform app.replace_root_media(v_root.id, app.jsonb_uuids(p_body -> 'mediaIds'));
  end if;
  perform app.apply_root_taxonomy(v_root, p_body);

  if p_body ? 'recurrence' and p_body -> 'recurrence' <> 'null' then
    return app.create_recurring_series(v_root, p_body);
  end if;

  v_status := case v_intent when 'draft' then 'draft' else 'scheduled' end;
  v_at := case v_intent when 'schedule' then v_scheduled_at when 'publish_now' then now() end;
  perform app.defer_content_checks();
  v_i := 0;
  for v_channel in select e from jsonb_array_elements(v_channels) e loop
    v_ids := v_ids || app.create_edition(v_root, v_channel, v_status, v_at, v_intended_at);
    v_prefixes := v_prefixes || ('channels.' || v_i || '.');
    v_i := v_i + 1;
  end loop;
  perform app.assert_publishable(v_ids, v_prefixes);
  perform app.undefer_content_checks();
  return (select app.content_mutation_json(v_root.id, v_ids));
end
$function$;

CREATE OR REPLACE FUNCTION api.create_grid_placeholder(p_integration_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.integrations;
  t app.grid_tiles;
  v_key text;
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  v := app.grid_integration(p_integration_id);
  perform app.raise_field_problems(app.grid_media_problems(v, p_body -> 'mediaIds', 'mediaIds'), 'The placeholder is not valid; see details.fields.');
  perform app.grid_lock_workspace(v.workspace_id);
  if p_body ? 'position' and jsonb_typeof(p_body -> 'position') = 'number' then
    v_key := app.grid_key_for_position(v.id, (p_body ->> 'position')::int, null);
  else
    v_key := app.grid_key_between((select max(position_key) from app.grid_tiles where integration_id = v.id), null);
  end if;
  insert into app.grid_tiles (organization_id, workspace_id, integration_id, position_key, note, created_by)
  values (v.organization_id, v.workspace_id, v.id, v_key, p_body ->> 'note', v_ctx_user)
  returning * into t;
  perform app.grid_set_placeholder_media(t, app.jsonb_uuids(p_body -> 'mediaIds'));
  perform app.grid_rebalance(v.workspace_id, v.id);
  return app.grid_tile_answer(t.id);
end
$function$;

CREATE OR REPLACE FUNCTION api.create_hashtag_group(p_name text, p_hashtags text[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.hashtag_groups;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  begin
    insert into app.hashtag_groups (organization_id, workspace_id, name, hashtags)
    values (v_ctx_organization, v_ctx_workspace, p_name, coalesce(p_hashtags, '{}'))
    returning * into v;
  exception when unique_violation then
    perform app.raise(409, 'NAME_TAKEN',
      format('A hashtag group named %s already exists in this workspace (names are compared case-insensitively).', btrim(p_name)),
      jsonb_build_object('field', 'name', 'name', btrim(p_name)));
  end;
  return app.hashtag_group_json(v);
end
$function$;

CREATE OR REPLACE FUNCTION api.create_integration(p_connector text, p_platform text, p_name text, p_username text, p_settings jsonb, p_webhook_url text, p_webhook_secret text, p_webhook_secret_sealed text)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_id uuid;
  v_settings jsonb := coalesce(p_settings, '{}'::jsonb);
  v_bad text[];
  v_conn app.connectors;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('manager');
  -- The connectors are the registry's (app.connectors, declared by app.declare_connectors);
  -- this route creates those that need no platform sign-in.
  select * into v_conn from app.connectors where name = p_connector;
  if v_conn.name is null then
    perform app.raise(400, 'UNKNOWN_CONNECTOR', format('Unknown connector %s; use one of %s.', coalesce(p_connector, 'null'),
        (select string_agg(name, ', ' order by name) from app.connectors where connect = 'none')),
      jsonb_build_object('field', 'connector', 'connectors', (select jsonb_agg(name order by name) from app.connectors where connect = 'none')));
  end if;
  if v_conn.connect <> 'none' then
    perform app.raise(400, 'CONNECT_FLOW_REQUIRED',
      format('A %s account is connected by signing in: POST .../integrations/%s.', p_connector,
             case v_conn.connect when 'oauth' then 'connect' else 'connect-password' end),
      jsonb_build_object('field', 'connector', 'connector', p_connector, 'connect', v_conn.connect));
  end if;
  if not exists (select 1 from app.platforms where code = p_platform) then
    perform app.raise(400, 'UNKNOWN_PLATFORM', format('Unknown platform %s.', coalesce(p_platform, 'null')),
      jsonb_build_object('field', 'platform', 'platforms', (select jsonb_agg(code order by code) from app.platforms)));
  end if;
  if p_platform <> all (v_conn.platforms) then
    perform app.raise(400, 'PLATFORM_NOT_SUPPORTED', format('The connector %s does not publish to %s.', p_connector, p_platform),
      jsonb_build_object('field', 'platform', 'connector', p_connector, 'platforms', to_jsonb(v_conn.platforms)));
  end if;
  if p_name is null or length(btrim(p_name)) not between 1 and 200 then
    perform app.raise(400, 'VALIDATION_FAILED', 'name must have 1 to 200 characters.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.name', 'code', 'length', 'message', 'must have 1 to 200 characters'))));
  end if;
  if jsonb_typeof(v_settings) <> 'object' then
    perform app.raise(400, 'INVALID_SETTINGS', 'settings must be an object.', jsonb_build_object('field', 'settings'));
  end if;

  if p_connector = 'sandbox' then
    if p_webhook_url is not null or p_webhook_secret is not null then
      perform app.raise(400, 'VALIDATION_FAILED', 'url and secret belong to the webhook connector only.',
        jsonb_build_object('fields', (select jsonb_agg(jsonb_build_object('field', f, 'code', 'unexpected', 'message', 'only for connector webhook'))
                                      from unnest(array[case when p_webhook_url is not null then 'body.url' end,
                                                        case when p_webhook_secret is not null then 'body.secret' end]) f
                                      where f is not null)));
    end if;
    select array_agg(k) into v_bad from jsonb_object_keys(v_settings) k where k <> 'behavior';
    if v_bad is not null
       or (v_settings ? 'behavior' and coalesce(v_settings ->> 'behavior', '') not in ('succeed', 'fail', 'transient-then-succeed', 'unknown')) then
      perform app.raise(400, 'INVALID_SETTINGS',
        'Sandbox settings take only behavior: succeed, fail, transient-then-succeed or unknown.',
        jsonb_build_object('field', 'settings', 'unknownKeys', to_jsonb(coalesce(v_bad, '{}'))));
    end if;
    v_settings := jsonb_build_object('behavior', coalesce(v_settings ->> 'behavior', 'succeed'));
  else
    if p_webhook_url is null or p_webhook_secret is null then
      perform app.raise(400, 'VALIDATION_FAILED', 'The webhook connector needs url and secret.',
        jsonb_build_object('fields', (select jsonb_agg(jsonb_build_object('field', f, 'code', 'required', 'message', 'is required for connector webhook'))
                                      from unnest(array[case when p_webhook_url is null then 'body.url' end,
                                                        case when p_webhook_secret is null then 'body.secret' end]) f
                                      where f is not null)));
    end if;
    if length(p_webhook_url) > 2048
       or p_webhook_url !~* '^https?://[^/?#@[:space:]]+([/?#][^[:space:]]*)?$' then
      perform app.raise(400, 'INVALID_WEBHOOK_URL',
        'The webhook url must be an http or https URL without credentials, at most 2048 characters.',
        jsonb_build_object('field', 'url'));
    end if;
    if app.webhook_secret_key_length(p_webhook_secret) is null then
      perform app.raise(400, 'VALIDATION_FAILED',
        'secret must be a Standard Webhooks secret: whsec_ followed by the base64 of 24 to 64 random bytes (omit it and one is issued).',
        jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.secret', 'code', 'format',
          'message', 'must be whsec_ followed by the base64 of 24 to 64 bytes'))));
    end if;
    -- The secret is checked here and stored only as the route sealed it (server/platforms/webhook-secret.ts).
    if p_webhook_secret_sealed is null or left(p_webhook_secret_sealed, 5) <> 'prv1:' then
      raise exception 'api.create_integration: the webhook secret must come sealed by the server (prv1:...)';
    end if;
    select array_agg(k) into v_bad from jsonb_object_keys(v_settings) k where k <> 'boards';
    if v_bad is not null
       or (v_settings ? 'boards' and (jsonb_typeof(v_settings -> 'boards') <> 'array'
           or jsonb_array_length(v_settings -> 'boards') > 100
           or exists (select 1 from jsonb_array_elements(v_settings -> 'boards') b
                      where jsonb_typeof(b) <> 'object' or jsonb_typeof(b -> 'id') <> 'string'
                         or jsonb_typeof(b -> 'name') <> 'string'))) then
      perform app.raise(400, 'INVALID_SETTINGS',
        'Webhook settings take only boards: up to 100 objects {id, name} with string values.',
        jsonb_build_object('field', 'settings', 'unknownKeys', to_jsonb(coalesce(v_bad, '{}'))));
    end if;
    v_settings := jsonb_build_object('boards', coalesce((
      select jsonb_agg(jsonb_build_object('id', b ->> 'id', 'name', b ->> 'name') order by ord)
      from jsonb_array_elements(v_settings -> 'boards') with ordinality x (b, ord)), '[]'));
  end if;

  insert into app.integrations (organization_id, workspace_id, connector, platform, name, username, settings,
    webhook_url, webhook_secret, created_by)
  values (v_ctx_organization, v_ctx_workspace, p_connector, p_platform, btrim(p_name),
    nullif(btrim(p_username), ''), v_settings,
    case when p_connector = 'webhook' then p_webhook_url end,
    case when p_connector = 'webhook' then p_webhook_secret_sealed end,
    v_ctx_user)
  returning id into v_id;
  return app.integration_json(v_id, true);
end
$function$;

CREATE OR REPLACE FUNCTION api.create_media_folder(p_name text, p_parent_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.media_folders;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  if p_parent_id is not null then
    perform app.media_folder(p_parent_id, 'parentId');
  end if;
  begin
    insert into app.media_folders (organization_id, workspace_id, parent_id, name)
    values (v_ctx_organization, v_ctx_workspace, p_parent_id, btrim(p_name))
    returning * into v;
  exception when unique_violation then
    perform app.media_folder_name_taken(btrim(p_name));
  end;
  return app.media_folder_json(v);
end
$function$;

CREATE OR REPLACE FUNCTION api.create_media_label(p_name text, p_color text, p_group_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.media_labels;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  if p_group_id is not null then
    perform app.media_label_group(p_group_id, 'groupId');
  end if;
  begin
    insert into app.media_labels (organization_id, workspace_id, group_id, name, color, created_by)
    values (v_ctx_organization, v_ctx_workspace, p_group_id, btrim(p_name), lower(p_color),
            v_ctx_user)
    returning * into v;
  exception when unique_violation then
    perform app.media_label_name_taken(btrim(p_name));
  end;
  return app.media_label_json(v);
end
$function$;

CREATE OR REPLACE FUNCTION api.create_media_label_group(p_name text)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.media_label_groups;
  v_position int;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  perform pg_advisory_xact_lock(hashtext('media_label_groups:' || v_ctx_workspace::text));
  v_position := coalesce((select max(position) + 1 from app.media_label_groups where workspace_id = v_ctx_workspace), 0);
  begin
    insert into app.media_label_groups (organization_id, workspace_id, name, position)
    values (v_ctx_organization, v_ctx_workspace, btrim(p_name),
            v_position)
    returning * into v;
  exception when unique_violation then
    perform app.media_label_group_name_taken(btrim(p_name));
  end;
  return app.media_label_group_json(v);
end
$function$;

CREATE OR REPLACE FUNCTION api.create_taxonomy_term(p_kind text, p_name text, p_color text)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v jsonb;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  begin
    execute format($q$
      insert into app.%I (organization_id, workspace_id, name, color) values ($1, $2, $3, $4)
      returning jsonb_build_object('id', id, 'name', name, 'color', color, 'createdAt', created_at, 'updatedAt', updated_at)$q$,
      app.taxonomy_table(p_kind))
    into v using v_ctx_organization, v_ctx_workspace, p_name, p_color;
  exception when unique_violation then
    perform app.raise(409, 'NAME_TAKEN',
      format('A %s named %s already exists in this workspace (names are compared case-insensitively).', app.taxonomy_noun(p_kind), btrim(p_name)),
      jsonb_build_object('field', 'name', 'name', btrim(p_name)));
  end;
  return v;
end
$function$;

CREATE OR REPLACE FUNCTION api.create_webhook_subscription(p_url text, p_events text[], p_description text, p_active boolean, p_secret_ciphertext bytea, p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.webhook_subscriptions;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('manager');
  if (select count(*) from app.webhook_subscriptions s where s.workspace_id = v_ctx_workspace) >= 20 then
    perform app.raise(409, 'WEBHOOK_LIMIT', 'A workspace has at most 20 webhook subscriptions.', jsonb_build_object('limit', 20));
  end if;
  insert into app.webhook_subscriptions (id, organization_id, workspace_id, url, events, description, active, paused_reason,
    secret_ciphertext, created_by)
  values (p_id, v_ctx_organization, v_ctx_workspace, app.webhook_check_url(p_url),
    app.webhook_check_events(p_events), p_description, coalesce(p_active, true),
    case when coalesce(p_active, true) then null else 'manual' end, p_secret_ciphertext, v_ctx_user)
  returning id, organization_id, workspace_id, url, events, description, active, paused_reason, null::bytea, consecutive_failures, created_by, created_at, updated_at into v;
  return app.webhook_subscription_json(v);
end
$function$;

CREATE OR REPLACE FUNCTION api.create_workbench_page(p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.workbench_pages;
  v_sections jsonb := coalesce(nullif(p_body -> 'sections', 'null'), jsonb_build_array(jsonb_build_object('name', 'Unsorted')));
  v_keys text[];
  v_s jsonb;
  v_n int := 0;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  perform app.workbench_lock(v_ctx_workspace);
  insert into app.workbench_pages (organization_id, workspace_id, name, description, position, created_by)
  values (v_ctx_organization, v_ctx_workspace, btrim(p_body ->> 'name'), p_body ->> 'description',
          app.workbench_slot('pages', v_ctx_workspace, (p_body ->> 'afterId')::uuid, (p_body ->> 'beforeId')::uuid, null),
          v_ctx_user)
  returning * into v;
  v_keys := app.workbench_keys_between(null, null, jsonb_array_length(v_sections));
  for v_s in select e from jsonb_array_elements(v_sections) e loop
    v_n := v_n + 1;
    insert into app.workbench_sections (organization_id, workspace_id, page_id, name, color, collapsed, position)
    values (v.organization_id, v.workspace_id, v.id, btrim(v_s ->> 'name'), v_s ->> 'color', coalesce((v_s ->> 'collapsed')::boolean, false), v_keys[v_n]);
  end loop;
  return app.workbench_page_json(v) || jsonb_build_object('sections',
    (select coalesce(jsonb_agg(app.workbench_section_json(row(s.*)::app.workbench_sections) order by s.position), '[]') from app.workbench_sections s where s.page_id = v.id));
end
$function$;

CREATE OR REPLACE FUNCTION api.create_workbench_section(p_page_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.workbench_sections;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  perform app.workbench_lock(p_page_id);
  perform app.workbench_page_for_update(p_page_id);
  insert into app.workbench_sections (organization_id, workspace_id, page_id, name, color, collapsed, position)
  values (v_ctx_organization, v_ctx_workspace, p_page_id, btrim(p_body ->> 'name'), p_body ->> 'color',
          coalesce((p_body ->> 'collapsed')::boolean, false),
          app.workbench_slot('sections', p_page_id, (p_body ->> 'afterId')::uuid, (p_body ->> 'beforeId')::uuid, null))
  returning * into v;
  return app.workbench_section_json(v);
end
$function$;

CREATE OR REPLACE FUNCTION api.create_workspace(p_name text, p_timezone text)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_user app.users;
  v_ws app.workspaces;
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_session();
  select * into v_user from app.users where id = v_ctx_user;
  if v_user.org_role not in ('owner', 'admin') then
    perform app.raise(403, 'ROLE_REQUIRED', 'Only organization owners and admins can create workspaces.',
      jsonb_build_object('requiredOrgRole', 'admin', 'orgRole', v_user.org_role));
  end if;
  insert into app.workspaces (organization_id, name, timezone)
  values (v_user.organization_id, p_name, coalesce(p_timezone, 'UTC'))
  returning * into v_ws;
  insert into app.workspace_members (workspace_id, user_id, organization_id, role)
  values (v_ws.id, v_user.id, v_user.organization_id, 'manager');
  return app.workspace_json(v_ws, 'manager');
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
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  v := app.campaign_for_update(p_id);
  select count(*)::int into v_editions
  from app.content_items i join app.content_roots r on r.id = i.root_id and r.workspace_id = i.workspace_id
  where r.campaign_id = p_id and r.workspace_id = v_ctx_workspace
    and r.deleted_at is null and i.deleted_at is null;
  select count(*)::int into v_roots from app.content_roots r
  where r.campaign_id = p_id and r.workspace_id = v_ctx_workspace and r.deleted_at is null;
  update app.content_roots r set campaign_id = null, phase_id = null
  where r.campaign_id = p_id and r.workspace_id = v_ctx_workspace;
  delete from app.campaigns c where c.id = p_id;
  return jsonb_build_object('id', p_id, 'deleted', true, 'contentUnassigned', v_editions, 'rootsUnassigned', v_roots);
end
$function$;

CREATE OR REPLACE FUNCTION api.delete_campaign_phase(p_campaign_id uuid, p_phase_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.campaign_phases;
  v_unassigned int;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  v := app.campaign_phase_for_update(p_campaign_id, p_phase_id);
  update app.content_roots r set phase_id = null
  where r.phase_id = v.id and r.workspace_id = v_ctx_workspace;
  get diagnostics v_unassigned = row_count;
  delete from app.campaign_phases p where p.id = v.id;
  perform app.place_campaign_phase(p_campaign_id, null, null);
  return jsonb_build_object('id', v.id, 'deleted', true, 'rootsUnassigned', v_unassigned);
end
$function$;

CREATE OR REPLACE FUNCTION api.delete_hashtag_group(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v uuid;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  delete from app.hashtag_groups where id = p_id and workspace_id = v_ctx_workspace returning id into v;
  if v is null then
    perform app.raise(404, 'NOT_FOUND', 'No hashtag group with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  return jsonb_build_object('id', v, 'deleted', true);
end
$function$;

CREATE OR REPLACE FUNCTION api.delete_integration(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_id uuid;
  v_ids uuid[];
  v_count int;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('manager');
  -- FOR UPDATE waits for transactions that are adding editions on it.
  select i.id into v_id from app.integrations i
  where i.id = p_id and i.workspace_id = v_ctx_workspace and i.deleted_at is null
  for update;
  if v_id is null then
    perform app.raise(404, 'NOT_FOUND', 'No integration with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  select count(*)::int, (array_agg(c.id order by c.scheduled_at, c.id))[1:100] into v_count, v_ids
  from app.content_items c
  where c.integration_id = p_id and c.workspace_id = v_ctx_workspace
    and c.status = 'scheduled' and c.deleted_at is null;
  if v_count > 0 then
    perform app.raise(409, 'INTEGRATION_HAS_SCHEDULED_CONTENT',
      format('%s scheduled edition(s) would publish through this integration; unschedule or delete them first.', v_count),
      jsonb_build_object('id', p_id, 'count', v_count, 'contentIds', to_jsonb(v_ids)));
  end if;
  update app.integrations set deleted_at = now(), status = 'disconnected' where id = p_id;
  return jsonb_build_object('id', p_id, 'deleted', true);
end
$function$;

CREATE OR REPLACE FUNCTION api.delete_taxonomy_term(p_kind text, p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v uuid;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  execute format('delete from app.%I where id = $1 and workspace_id = $2 returning id', app.taxonomy_table(p_kind))
  into v using p_id, v_ctx_workspace;
  if v is null then
    perform app.raise(404, 'NOT_FOUND', format('No %s with this id in this workspace.', app.taxonomy_noun(p_kind)), jsonb_build_object('id', p_id));
  end if;
  return jsonb_build_object('id', v, 'deleted', true);
end
$function$;

CREATE OR REPLACE FUNCTION api.delete_workbench_section(p_id uuid, p_query jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.workbench_sections;
  t app.workbench_sections;
  v_mode text := p_query ->> 'rows';
  v_target uuid := (p_query ->> 'targetSectionId')::uuid;
  v_n int;
  v_keys text[];
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  if v_mode is null then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('rows', 'required',
      'say what becomes of the section''s rows: rows=move with targetSectionId, or rows=delete')));
  elsif v_mode = 'move' and v_target is null then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('targetSectionId', 'required', 'rows=move needs targetSectionId')));
  elsif v_mode = 'delete' and v_target is not null then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('targetSectionId', 'not_allowed', 'targetSectionId goes with rows=move')));
  elsif v_target = p_id then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('targetSectionId', 'self', 'rows cannot move to the section being deleted')));
  end if;
  perform app.workbench_lock(p_id, v_target);
  v := app.workbench_section_for_update(p_id);
  select count(*) into v_n from app.workbench_rows where section_id = v.id;
  if v_mode = 'move' then
    select * into t from app.workbench_sections where id = v_target and workspace_id = v_ctx_workspace for update;
    if t.id is null then
      perform app.raise_field_problems(jsonb_build_array(app.field_problem('targetSectionId', 'not_found', 'no workbench section with this id in this workspace')));
    end if;
    v_keys := app.workbench_append_keys('rows', t.id, v_n);
    update app.workbench_rows w set section_id = t.id, page_id = t.page_id, position = v_keys[o.n]
    from (select id, row_number() over (order by position) n from app.workbench_rows where section_id = v.id) o
    where w.id = o.id;
  end if;
  delete from app.workbench_sections where id = v.id;
  return jsonb_build_object('id', v.id, 'rowsMoved', case when v_mode = 'move' then v_n else 0 end,
    'rowsDeleted', case when v_mode = 'delete' then v_n else 0 end, 'targetSectionId', v_target);
end
$function$;

CREATE OR REPLACE FUNCTION api.drain_job_outbox()
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  if v_ctx_workspace is null then
    return 0;
  end if;
  return app.drain_job_outbox(v_ctx_workspace);
end
$function$;

CREATE OR REPLACE FUNCTION api.duplicate_workbench_page(p_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_inserted bigint; -- rows of the INSERT ... SELECTs below (see this migration)
  v app.workbench_pages;
  v_new app.workbench_pages;
  s app.workbench_sections;
  v_section uuid;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  select * into v from app.workbench_pages where id = p_id and workspace_id = v_ctx_workspace;
  if v.id is null then
    perform app.raise_not_found('workbench page', p_id);
  end if;
  perform app.workbench_lock(v_ctx_workspace);
  insert into app.workbench_pages (organization_id, workspace_id, name, description, position, created_by)
  values (v.organization_id, v.workspace_id, coalesce(btrim(p_body ->> 'name'), left(v.name, 153) || ' (copy)'), v.description,
          app.workbench_slot('pages', v.workspace_id, v.id, null, null), v_ctx_user)
  returning * into v_new;
  for s in select * from app.workbench_sections where page_id = v.id order by position loop
    insert into app.workbench_sections (organization_id, workspace_id, page_id, name, color, collapsed, position)
    values (s.organization_id, s.workspace_id, v_new.id, s.name, s.color, s.collapsed, s.position)
    returning id into v_section;
    with inserted as (
      insert into app.workbench_rows (organization_id, workspace_id, page_id, section_id, position, title, notes, planned_at, planned_on, created_by)
      select w.organization_id, w.workspace_id, v_new.id, v_section, w.position, w.title, w.notes, w.planned_at, w.planned_on, v_ctx_user
      from app.workbench_rows w where w.section_id = s.id
      returning 1)
    select count(*) into v_inserted from inserted;
  end loop;
  return app.workbench_page_json(v_new);
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
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  select * into v from app.workbench_rows where id = p_id and workspace_id = v_ctx_workspace;
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
      'mediaIds', to_jsonb(app.content_root_media_ids(v_root.workspace_id, v_root.id)),
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

CREATE OR REPLACE FUNCTION api.empty_media_bin()
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.media_items;
  v_ids uuid[] := '{}';
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  for v in select * from app.media_items where workspace_id = v_ctx_workspace and state = 'deleted'
           order by deleted_at, id for update
  loop
    perform app.media_destroy(v, 'permanent_delete');
    v_ids := v_ids || v.id;
  end loop;
  return jsonb_build_object('deletedCount', cardinality(v_ids), 'ids', to_jsonb(v_ids));
end
$function$;

CREATE OR REPLACE FUNCTION api.end_current_session()
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_id uuid := nullif(current_setting('pressroom.session_id', true), '')::uuid;
  v_row record;
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_session();
  update app.sessions set revoked_at = now()
  where id = v_id and user_id = v_ctx_user and revoked_at is null
  returning id, revoked_at into v_row;
  if v_row.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No open session to end.');
  end if;
  return jsonb_build_object('id', v_row.id, 'endedAt', v_row.revoked_at);
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
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  select * into v from app.workbench_pages where id = p_id and workspace_id = v_ctx_workspace;
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

CREATE OR REPLACE FUNCTION api.get_analytics_report(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_report app.analytics_reports;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  select * into v_report from app.analytics_reports r where r.id = p_id and r.workspace_id = v_ctx_workspace;
  if v_report.id is null then
    perform app.raise_not_found('report', p_id);
  end if;
  return app.analytics_report_json(v_report) || jsonb_build_object('storageKey', v_report.storage_key);
end
$function$;

CREATE OR REPLACE FUNCTION api.get_content(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  if not exists (select 1 from app.content_items where id = p_id and workspace_id = v_ctx_workspace
                 and deleted_at is null) then
    perform app.raise_not_found('content', p_id);
  end if;
  return (select app.content_detail_json(p_id));
end
$function$;

CREATE OR REPLACE FUNCTION api.get_content_root(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  if not exists (select 1 from app.content_roots where id = p_id and workspace_id = v_ctx_workspace
                 and deleted_at is null) then
    perform app.raise_not_found('content root', p_id);
  end if;
  return (select app.content_root_json(p_id));
end
$function$;

CREATE OR REPLACE FUNCTION api.get_integration(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  if not exists (select 1 from app.integrations i
                 where i.id = p_id and i.workspace_id = v_ctx_workspace and i.deleted_at is null) then
    perform app.raise(404, 'NOT_FOUND', 'No integration with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  return app.integration_json(p_id, true);
end
$function$;

CREATE OR REPLACE FUNCTION api.get_media_upload(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.media_upload_sessions;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  select * into v from app.media_upload_sessions where id = p_id and workspace_id = v_ctx_workspace;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No upload session with this id in this workspace.', jsonb_build_object('sessionId', p_id));
  end if;
  -- Only those who may upload get the (write) URL again.
  return app.media_upload_json(v) || jsonb_build_object('canUpload', app.role_rank(app.current_workspace_role()) >= 2);
end
$function$;

CREATE OR REPLACE FUNCTION api.get_pending_connection(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.pending_connections;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.connect_require_manager();
  select * into v from app.pending_connections where workspace_id = v_ctx_workspace and id = p_id and expires_at > now();
  if v.id is null then
    perform app.raise_not_found('pending connection', p_id);
  end if;
  return jsonb_build_object('id', v.id, 'connector', v.connector, 'platform', v.platform, 'instanceUrl', v.instance_url,
    'expiresAt', v.expires_at, 'createdAt', v.created_at,
    'accounts', (select jsonb_agg(jsonb_build_object('accountId', a ->> 'accountId', 'username', a -> 'username', 'name', a -> 'name',
        'kind', a -> 'kind', 'avatarUrl', a -> 'avatarUrl', 'profileUrl', a -> 'profileUrl',
        'integrationId', (select i.id from app.integrations i where i.workspace_id = v.workspace_id and i.connector = v.connector
                            and coalesce(i.instance_url, '') = coalesce(v.instance_url, '') and i.account_id = a ->> 'accountId'
                            and i.deleted_at is null)) order by o)
      from jsonb_array_elements(v.accounts) with ordinality x (a, o)));
end
$function$;

CREATE OR REPLACE FUNCTION api.get_review_policy()
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  return jsonb_build_object('reviewPolicy', app.review_policy(v_ctx_workspace));
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
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  select * into v from app.workbench_pages where id = p_id and workspace_id = v_ctx_workspace;
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

CREATE OR REPLACE FUNCTION api.get_workbench_row(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.workbench_rows;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  select * into v from app.workbench_rows where id = p_id and workspace_id = v_ctx_workspace;
  if v.id is null then
    perform app.raise_not_found('workbench row', p_id);
  end if;
  return app.workbench_row_json(v);
end
$function$;

CREATE OR REPLACE FUNCTION api.idempotency_begin(p_method text, p_route text, p_key text, p_request_hash bytea)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_row app.idempotency_keys;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_principal uuid := app.current_principal_id();  -- the request context, read once (docs/citus.md)
begin
  insert into app.idempotency_keys (workspace_id, principal_id, method, route, key, request_hash)
  values (v_ctx_workspace, v_ctx_principal, p_method, p_route, p_key, p_request_hash)
  on conflict do nothing
  returning * into v_row;
  if v_row.key is not null then
    return jsonb_build_object('state', 'claimed');
  end if;
  select * into v_row from app.idempotency_keys
  where workspace_id = v_ctx_workspace and principal_id = v_ctx_principal
    and method = p_method and route = p_route and key = p_key
  for update;
  if v_row.expires_at <= now() or (v_row.state = 'in_flight' and v_row.locked_until <= now()) then
    -- An expired record, or a claim whose request died: start afresh.
    update app.idempotency_keys set request_hash = p_request_hash, state = 'in_flight',
      response_status = null, response_body = null, created_at = now(),
      locked_until = now() + interval '5 minutes', expires_at = now() + interval '24 hours'
    where workspace_id = v_row.workspace_id and principal_id = v_row.principal_id
      and method = v_row.method and route = v_row.route and key = v_row.key;
    return jsonb_build_object('state', 'claimed');
  end if;
  if v_row.request_hash <> p_request_hash then
    perform app.raise(422, 'IDEMPOTENCY_KEY_REUSED',
      'This Idempotency-Key was used with a different request body; use a new key for a new request.',
      jsonb_build_object('key', p_key));
  end if;
  if v_row.state = 'in_flight' then
    perform app.raise(409, 'IDEMPOTENCY_KEY_IN_USE',
      'A request with this Idempotency-Key is still in progress; retry when it has finished.',
      jsonb_build_object('key', p_key));
  end if;
  return jsonb_build_object('state', 'replay', 'status', v_row.response_status, 'body', v_row.response_body);
end
$function$;

CREATE OR REPLACE FUNCTION api.idempotency_finish(p_method text, p_route text, p_key text, p_status integer, p_body jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_principal uuid := app.current_principal_id();  -- the request context, read once (docs/citus.md)
begin
  update app.idempotency_keys set state = 'done', response_status = p_status, response_body = p_body
  where workspace_id = v_ctx_workspace and principal_id = v_ctx_principal
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
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_principal uuid := app.current_principal_id();  -- the request context, read once (docs/citus.md)
begin
  delete from app.idempotency_keys
  where workspace_id = v_ctx_workspace and principal_id = v_ctx_principal
    and method = p_method and route = p_route and key = p_key and state = 'in_flight';
end
$function$;

CREATE OR REPLACE FUNCTION api.integration_for_listing(p_id uuid, p_capability text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v record;
  v_with text[];
  v_what text := case p_capability when 'boards' then 'boards' when 'videoCategories' then 'video categories' end;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  if v_what is null then
    perform app.raise(400, 'VALIDATION_FAILED', format('Unknown list %s.', p_capability));
  end if;
  select i.id, i.connector, i.platform, i.name, i.username, i.settings, i.webhook_url, p.name as platform_name,
         coalesce((p.capabilities ->> p_capability)::boolean, false) as supported
  into v
  from app.integrations i join app.platforms p on p.code = i.platform
  where i.id = p_id and i.workspace_id = v_ctx_workspace and i.deleted_at is null;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No integration with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  if not v.supported then
    select coalesce(array_agg(code order by code), '{}') into v_with
    from app.platforms where coalesce((capabilities ->> p_capability)::boolean, false);
    perform app.raise(404, 'NOT_SUPPORTED',
      format('%s has no %s; they exist on: %s.', v.platform_name, v_what, array_to_string(v_with, ', ')),
      jsonb_build_object('id', p_id, 'platform', v.platform, 'supportedPlatforms', to_jsonb(v_with)));
  end if;
  return jsonb_build_object('id', v.id, 'connector', v.connector, 'platform', v.platform, 'name', v.name,
    'username', v.username, 'settings', v.settings, 'webhookUrl', v.webhook_url);
end
$function$;

CREATE OR REPLACE FUNCTION api.list_approval_workflows()
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  return coalesce((select jsonb_agg(app.workflow_json(row(w.*)::app.approval_workflows) order by w.position, w.created_at, w.id)
                   from app.approval_workflows w where w.workspace_id = v_ctx_workspace), '[]');
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
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  select v_ctx_workspace into v_ws;
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
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
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
      and r.workspace_id = v_ctx_workspace and i.workspace_id = v_ctx_workspace
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
      and r.workspace_id = v_ctx_workspace and i.workspace_id = v_ctx_workspace
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

CREATE OR REPLACE FUNCTION api.list_campaigns(p_search text, p_include_phases boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  if nullif(p_search, '') is null then
    return (
      select coalesce(jsonb_agg(app.campaign_json(row(c.*)::app.campaigns, coalesce(p_include_phases, false))
                                order by c.starts_on nulls last, lower(c.name), c.id), '[]')
      from app.campaigns c
      where c.workspace_id = v_ctx_workspace);
  end if;
  -- A search goes through the trigram index (app.campaign_search_ids), in a
  -- statement of its own: no plan shared with the unfiltered list walks the workspace.
  return (
    select coalesce(jsonb_agg(app.campaign_json(row(c.*)::app.campaigns, coalesce(p_include_phases, false))
                              order by c.starts_on nulls last, lower(c.name), c.id), '[]')
    from app.campaigns c
    where c.workspace_id = v_ctx_workspace
      and c.id = any (array(select app.campaign_search_ids('%' || app.like_escape(p_search) || '%'))));
end
$function$;

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
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
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
    using v_ctx_workspace, v_since, v_status, v_workflow, v_integration, null::int, null::bigint, v_lc, v_from, v_to;
  end if;
  execute format('select array(select i.id from app.content_items i %s where %s order by %s limit $6 offset $7)',
                 v_join, v_where, v_order)
  into v_ids
  using v_ctx_workspace, v_since, v_status, v_workflow, v_integration, v_limit, v_offset, v_lc, v_from, v_to;
  return jsonb_build_object('items', (select app.content_list_items_json(v_ids, v_review)),
    'meta', jsonb_build_object('limit', v_limit, 'offset', v_offset, 'total', v_total,
                               'hasMore', v_offset + cardinality(v_ids) < v_total));
end
$function$;

CREATE OR REPLACE FUNCTION api.list_content_roots(p_limit integer, p_offset bigint)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_total bigint;
  v_ids uuid[];
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  -- From the counter kept by trigger (app.content_root_counts).
  v_total := app.content_root_total();
  v_ids := array(select r.id from app.content_roots r
                 where r.workspace_id = v_ctx_workspace and r.deleted_at is null
                 order by r.updated_at desc, r.id desc
                 limit p_limit offset p_offset);
  return jsonb_build_object('items', (select app.content_roots_json(v_ids)),
    'meta', jsonb_build_object('limit', p_limit, 'offset', p_offset, 'total', v_total,
                               'hasMore', p_offset + cardinality(v_ids) < v_total));
end
$function$;

CREATE OR REPLACE FUNCTION api.list_content_versions(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_current int;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  select version into v_current from app.content_items
  where id = p_id and workspace_id = v_ctx_workspace and deleted_at is null;
  if v_current is null then
    perform app.raise_not_found('content', p_id);
  end if;
  return (select coalesce(jsonb_agg(app.content_version_json(row(x.*)::app.content_versions, v_current) order by x.version desc), '[]')
          from app.content_versions x where x.content_item_id = p_id);
end
$function$;

CREATE OR REPLACE FUNCTION api.list_hashtag_groups()
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  return (select coalesce(jsonb_agg(app.hashtag_group_json(row(g.*)::app.hashtag_groups) order by lower(g.name), g.id), '[]')
          from app.hashtag_groups g where g.workspace_id = v_ctx_workspace);
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
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  v_ids := array(select i.id from app.integrations i
                 where i.workspace_id = v_ctx_workspace and i.deleted_at is null
                 order by i.created_at, i.id);
  return (select coalesce(jsonb_agg(app.integration_json(x) order by n), '[]') from unnest(v_ids) with ordinality u (x, n));
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
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
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
    using v_ctx_workspace, v_state, (p_filters ->> 'folderId')::uuid, v_labels, p_filters ->> 'type',
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

CREATE OR REPLACE FUNCTION api.list_media_folders(p_parent text, p_after jsonb, p_limit integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_limit int := least(greatest(coalesce(p_limit, 50), 1), 100);
  v_parent uuid;
  v_rows app.media_folders[];
  v_has_more boolean;
  v_last app.media_folders;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  if p_parent is not null and p_parent <> 'root' then
    v_parent := (app.media_folder(p_parent::uuid, 'parentId')).id;
  end if;
  select array(
    select f from app.media_folders f
    where f.workspace_id = v_ctx_workspace
      and (p_parent is null or (p_parent = 'root' and f.parent_id is null) or f.parent_id = v_parent)
      and (p_after is null or (lower(f.name), f.id) > (p_after -> 'k' ->> 0, (p_after -> 'k' ->> 1)::uuid))
    order by lower(f.name), f.id
    limit v_limit + 1) into v_rows;
  v_has_more := cardinality(v_rows) > v_limit;
  if v_has_more then
    v_rows := v_rows[1:v_limit];
    v_last := v_rows[v_limit];
  end if;
  return jsonb_build_object(
    'items', (select coalesce(jsonb_agg(app.media_folder_json(v_rows[i]) order by i), '[]') from generate_subscripts(v_rows, 1) i),
    'hasMore', v_has_more,
    'last', case when v_has_more then jsonb_build_array(lower(v_last.name), v_last.id) end);
end
$function$;

CREATE OR REPLACE FUNCTION api.list_media_labels(p_group text, p_include_merged boolean, p_search text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_group uuid;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  if nullif(p_group, '') is not null then
    v_group := (app.media_label_group(p_group::uuid, 'groupId')).id;
  end if;
  return (
    select coalesce(jsonb_agg(app.media_label_json(row(l.*)::app.media_labels) order by lower(l.name), l.id), '[]')
    from app.media_labels l
    where l.workspace_id = v_ctx_workspace
      and (coalesce(p_include_merged, false) or l.merged_into_id is null)
      and (p_group is null or (p_group = '' and l.group_id is null) or l.group_id = v_group)
      -- Through the trigram index (app.media_label_search_ids).
      and (coalesce(p_search, '') = '' or l.id = any (array(select app.media_label_search_ids(app.media_contains_pattern(p_search))))));
end
$function$;

CREATE OR REPLACE FUNCTION api.list_media_usage_history(p_id uuid, p_after jsonb, p_limit integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_limit int := least(greatest(coalesce(p_limit, 50), 1), 100);
  v_items jsonb;
  v_count int;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  perform app.media_item(p_id);
  select coalesce(jsonb_agg(jsonb_build_object('id', e.id, 'event', e.event, 'via', e.via,
           'contentId', e.content_item_id, 'rootId', e.root_id, 'contentStatus', e.content_status,
           'scheduledAt', e.scheduled_at, 'occurredAt', e.occurred_at) order by e.occurred_at desc, e.id desc), '[]'),
         count(*)
    into v_items, v_count
  from (select * from app.media_usage_events e
        where e.media_id = p_id and e.workspace_id = v_ctx_workspace
          and (p_after is null or (e.occurred_at, e.id) < ((p_after -> 'k' ->> 0)::timestamptz, (p_after -> 'k' ->> 1)::uuid))
        order by e.occurred_at desc, e.id desc
        limit v_limit + 1) e;
  if v_count > v_limit then
    v_items := v_items - v_limit;
    return jsonb_build_object('items', v_items, 'hasMore', true,
      'last', jsonb_build_array(v_items -> (v_limit - 1) -> 'occurredAt', v_items -> (v_limit - 1) -> 'id'));
  end if;
  return jsonb_build_object('items', v_items, 'hasMore', false, 'last', null);
end
$function$;

CREATE OR REPLACE FUNCTION api.list_members()
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_sees_email boolean;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  v_sees_email := app.current_workspace_role() = 'manager';
  return (
    select coalesce(jsonb_agg(case when v_sees_email then app.member_json(row(m.*)::app.workspace_members) else app.member_json(row(m.*)::app.workspace_members) - 'email' end
                              order by m.created_at, m.user_id), '[]')
    from app.workspace_members m
    where m.workspace_id = v_ctx_workspace);
end
$function$;

CREATE OR REPLACE FUNCTION api.list_notifications(p_limit integer, p_cursor uuid, p_unread boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_session();
  return app.notifications_page(v_ctx_user, null, p_limit, p_cursor, p_unread);
end
$function$;

CREATE OR REPLACE FUNCTION api.list_reviews(p_status text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  return coalesce((select jsonb_agg(app.review_json(row(r.*)::app.reviews) order by r.created_at desc, r.id desc)
                   from (select * from app.reviews r where r.workspace_id = v_ctx_workspace
                           and (p_status is null or r.status = p_status)
                         order by r.created_at desc, r.id desc limit 200) r), '[]');
end
$function$;

CREATE OR REPLACE FUNCTION api.list_sandbox_posts(p_integration_id uuid, p_limit integer, p_offset bigint)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  g record;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  select id, connector into g from app.integrations where id = p_integration_id and workspace_id = v_ctx_workspace
    and deleted_at is null;
  if g.id is null or g.connector <> 'sandbox' then
    perform app.raise(404, 'NOT_FOUND', 'No sandbox integration with this id in this workspace.', jsonb_build_object('id', p_integration_id));
  end if;
  return jsonb_build_object(
    'items', (select coalesce(jsonb_agg(jsonb_build_object('id', p.id, 'contentId', p.content_item_id,
                'platformPostId', p.platform_post_id, 'permalink', p.permalink, 'caption', p.caption,
                'idempotencyToken', p.idempotency_token, 'deliveries', p.deliveries, 'captionEdits', p.caption_edits,
                'payload', p.payload, 'receivedAt', p.received_at) order by p.received_at, p.id), '[]')
              from (select * from app.sandbox_posts where integration_id = g.id
                    order by received_at, id limit p_limit offset p_offset) p),
    'meta', jsonb_build_object('total', (select count(*) from app.sandbox_posts where integration_id = g.id),
                               'limit', p_limit, 'offset', p_offset));
end
$function$;

CREATE OR REPLACE FUNCTION api.list_taxonomy_terms(p_kind text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v jsonb;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  execute format($q$
    select coalesce(jsonb_agg(jsonb_build_object('id', t.id, 'name', t.name, 'color', t.color,
             'createdAt', t.created_at, 'updatedAt', t.updated_at) order by lower(t.name), t.id), '[]')
    from app.%I t where t.workspace_id = $1$q$, app.taxonomy_table(p_kind))
  into v using v_ctx_workspace;
  return v;
end
$function$;

CREATE OR REPLACE FUNCTION api.list_webhook_subscriptions()
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('manager');
  return coalesce((select jsonb_agg(app.webhook_subscription_json(row(s.id, s.organization_id, s.workspace_id, s.url, s.events, s.description, s.active, s.paused_reason, null::bytea, s.consecutive_failures, s.created_by, s.created_at, s.updated_at)::app.webhook_subscriptions)
                     order by s.created_at, s.id)
                   from app.webhook_subscriptions s where s.workspace_id = v_ctx_workspace), '[]'::jsonb);
end
$function$;

CREATE OR REPLACE FUNCTION api.list_workbench_pages(p_query jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_limit int := coalesce((p_query ->> 'limit')::int, 100);
  v_offset bigint := coalesce((p_query ->> 'offset')::bigint, 0);
  v_state text := coalesce(p_query ->> 'state', 'active');
  v_ids uuid[];
  v_total bigint;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  select count(*) into v_total from app.workbench_pages p
  where p.workspace_id = v_ctx_workspace
    and (v_state = 'all' or (v_state = 'archived') = (p.archived_at is not null));
  v_ids := array(select p.id from app.workbench_pages p
                 where p.workspace_id = v_ctx_workspace
                   and (v_state = 'all' or (v_state = 'archived') = (p.archived_at is not null))
                 order by p.position, p.id limit v_limit offset v_offset);
  return jsonb_build_object(
    'items', coalesce((select jsonb_agg(app.workbench_page_json(row(p.*)::app.workbench_pages) order by x.n) from unnest(v_ids) with ordinality x (id, n)
                       join app.workbench_pages p on p.id = x.id), '[]'),
    'meta', jsonb_build_object('limit', v_limit, 'offset', v_offset, 'total', v_total, 'hasMore', v_offset + cardinality(v_ids) < v_total));
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
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  if v_from is not null and v_to is not null and v_from > v_to then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('to', 'before_from', 'to is before from')));
  end if;
  select timezone into v_tz from app.workspaces where id = v_ctx_workspace;
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
    where w.workspace_id = v_ctx_workspace
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

CREATE OR REPLACE FUNCTION api.list_workbench_sections(p_page_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  if not exists (select 1 from app.workbench_pages where id = p_page_id and workspace_id = v_ctx_workspace) then
    perform app.raise_not_found('workbench page', p_page_id);
  end if;
  return (select coalesce(jsonb_agg(app.workbench_section_json(row(s.*)::app.workbench_sections) order by s.position), '[]') from app.workbench_sections s where s.page_id = p_page_id);
end
$function$;

CREATE OR REPLACE FUNCTION api.mark_inbox_thread(p_id uuid, p_read boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.inbox_threads;
  v_at timestamptz;
  v_now timestamptz := now();
  v_ctx_principal uuid := app.current_principal_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  v := app.inbox_thread(p_id);
  if v_ctx_principal is null then
    perform app.raise(403, 'ROLE_REQUIRED', 'Read state belongs to a member or API key.');
  end if;
  if p_read then
    v_at := greatest(now(), (select max(created_at) from app.inbox_messages where thread_id = p_id));
  else
    -- Unread from the newest inbound message on (none: nothing is unread).
    v_at := (select max(created_at) from app.inbox_messages
             where thread_id = p_id and direction = 'inbound' and has_original) - interval '1 microsecond';
    v_at := coalesce(v_at, now());
  end if;
  insert into app.inbox_reads (thread_id, principal_id, organization_id, workspace_id, read_at)
  values (p_id, v_ctx_principal, v_ctx_organization, v.workspace_id, v_at)
  on conflict (thread_id, principal_id, workspace_id) do update set read_at = excluded.read_at, updated_at = v_now;
  return app.inbox_thread_json(v);
end
$function$;

CREATE OR REPLACE FUNCTION api.mark_notifications_read(p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_count int;
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_session();
  update app.notifications set read_at = now()
  where user_id = v_ctx_user and read_at is null
    and (coalesce((p_body ->> 'all')::boolean, false)
         or id in (select x::uuid from jsonb_array_elements_text(coalesce(p_body -> 'ids', '[]')) x));
  get diagnostics v_count = row_count;
  return jsonb_build_object('marked', v_count);
end
$function$;

CREATE OR REPLACE FUNCTION api.media_label_usage()
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
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
    where l.workspace_id = v_ctx_workspace and l.merged_into_id is null);
end
$function$;

CREATE OR REPLACE FUNCTION api.merge_media_labels(p_source_id uuid, p_target_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_source app.media_labels;
  v_target app.media_labels;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  if p_source_id = p_target_id then
    perform app.media_invalid('body.targetLabelId', 'same_label', 'must differ from the source label');
  end if;
  -- Lock both in id order, so two opposite merges cannot deadlock.
  perform 1 from app.media_labels where id in (p_source_id, p_target_id) and workspace_id = v_ctx_workspace
    order by id for update;
  v_source := app.media_label(p_source_id);
  select * into v_target from app.media_labels where id = p_target_id and workspace_id = v_ctx_workspace;
  if v_target.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No target label with this id in this workspace.', jsonb_build_object('targetLabelId', p_target_id));
  end if;
  if v_source.merged_into_id is not null then
    perform app.raise(409, 'LABEL_MERGED', 'The source label was already merged.',
      jsonb_build_object('labelId', v_source.id, 'mergedIntoId', v_source.merged_into_id));
  end if;
  if v_target.merged_into_id is not null then
    perform app.raise(409, 'LABEL_MERGED', 'The target label was merged into another; merge into that label.',
      jsonb_build_object('labelId', v_target.id, 'mergedIntoId', v_target.merged_into_id));
  end if;
  insert into app.media_item_labels (media_id, label_id, workspace_id, organization_id, created_by)
  select x.media_id, v_target.id, x.workspace_id, x.organization_id, v_ctx_user
  from app.media_item_labels x where x.label_id = v_source.id
  on conflict do nothing;
  delete from app.media_item_labels where label_id = v_source.id;
  -- Earlier aliases of the source now point at the target.
  update app.media_labels set merged_into_id = v_target.id where merged_into_id = v_source.id;
  update app.media_labels set merged_into_id = v_target.id, merged_at = now(), group_id = null
  where id = v_source.id
  returning * into v_source;
  return app.media_label_json(v_source);
end
$function$;

CREATE OR REPLACE FUNCTION api.move_media_labels_to_group(p_group_id uuid, p_label_ids uuid[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  if p_group_id is not null then
    perform app.media_label_group(p_group_id);
  end if;
  perform app.media_check_labels(p_label_ids);
  update app.media_labels set group_id = p_group_id
  where id = any (p_label_ids) and workspace_id = v_ctx_workspace and group_id is distinct from p_group_id;
  return (select coalesce(jsonb_agg(app.media_label_json(row(l.*)::app.media_labels) order by lower(l.name), l.id), '[]')
          from app.media_labels l where l.id = any (p_label_ids));
end
$function$;

CREATE OR REPLACE FUNCTION api.move_workbench_page(p_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.workbench_pages;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  perform app.workbench_lock(v_ctx_workspace);
  v := app.workbench_page_for_update(p_id);
  update app.workbench_pages
  set position = app.workbench_slot('pages', v.workspace_id, (p_body ->> 'afterId')::uuid, (p_body ->> 'beforeId')::uuid, v.id)
  where id = v.id returning * into v;
  return app.workbench_page_json(v);
end
$function$;

CREATE OR REPLACE FUNCTION api.move_workbench_row(p_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.workbench_rows;
  t app.workbench_sections;
  v_from uuid;
  v_to uuid := (p_body ->> 'sectionId')::uuid;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  select section_id into v_from from app.workbench_rows where id = p_id and workspace_id = v_ctx_workspace;
  perform app.workbench_lock(v_from, v_to);
  v := app.workbench_row_for_update(p_id);
  if v.section_id is distinct from v_from then
    -- It moved while this waited for the lock: take the lock of where it is now too.
    perform app.workbench_lock(v.section_id);
  end if;
  if v_to is null then
    v_to := v.section_id;
  end if;
  select * into t from app.workbench_sections where id = v_to and workspace_id = v_ctx_workspace;
  if t.id is null then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('sectionId', 'not_found', 'no workbench section with this id in this workspace')));
  end if;
  update app.workbench_rows
  set section_id = t.id, page_id = t.page_id,
      position = app.workbench_slot('rows', t.id, (p_body ->> 'afterId')::uuid, (p_body ->> 'beforeId')::uuid, v.id)
  where id = v.id returning * into v;
  return app.workbench_row_json(v);
end
$function$;

CREATE OR REPLACE FUNCTION api.published_caption_target(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.content_items;
  g record;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  select * into v from app.content_items where id = p_id and workspace_id = v_ctx_workspace and deleted_at is null;
  if v.id is null then
    perform app.raise_not_found('content', p_id);
  end if;
  if v.status <> 'sent' then
    perform app.raise(400, 'INVALID_CONTENT_STATUS',
      format('Only published (sent) content has a published caption; this content is %s.', v.status),
      jsonb_build_object('contentId', v.id, 'status', v.status, 'allowedStatuses', jsonb_build_array('sent')));
  end if;
  select i.id, i.connector, i.platform, i.name, i.username, i.settings, i.webhook_url, i.deleted_at,
         coalesce((p.capabilities ->> 'editPublishedCaption')::boolean, true) as can_edit
  into g from app.integrations i left join app.platforms p on p.code = i.platform where i.id = v.integration_id;
  if not g.can_edit then
    perform app.raise(409, 'CAPTION_EDIT_NOT_SUPPORTED',
      format('The channel''s connector (%s, %s) cannot edit a published caption.', g.connector, g.platform),
      jsonb_build_object('contentId', v.id, 'connector', g.connector, 'platform', g.platform));
  end if;
  if g.deleted_at is not null then
    perform app.raise(409, 'INTEGRATION_UNAVAILABLE', 'The channel of this content was deleted.', jsonb_build_object('integrationId', g.id));
  end if;
  return jsonb_build_object('contentId', v.id, 'integrationId', g.id, 'connector', g.connector, 'platform', g.platform,
    'name', g.name, 'username', g.username, 'settings', g.settings, 'webhookUrl', g.webhook_url,
    'platformPostId', v.platform_post_id, 'caption', v.caption,
    'attempt', coalesce((select edits from app.published_captions where content_item_id = v.id), 0) + 1);
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
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
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
        where i.id = (v_ref ->> 'contentId')::uuid and i.workspace_id = v_ctx_workspace and i.deleted_at is null and r.deleted_at is null;
        if v_root.id is null then
          perform app.raise_not_found('content', (v_ref ->> 'contentId')::uuid);
        end if;
      else
        select * into v_root from app.content_roots r
        where r.id = (v_ref ->> 'rootId')::uuid and r.workspace_id = v_ctx_workspace and r.deleted_at is null;
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
              left(coalesce(v_root.organizational_title, v_root.title), 500), v_at, v_root.id, v_ctx_user)
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

CREATE OR REPLACE FUNCTION api.remove_member(p_user_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_removed uuid;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('manager');
  delete from app.workspace_members
  where workspace_id = v_ctx_workspace and user_id = p_user_id
  returning user_id into v_removed;
  if v_removed is null then
    perform app.raise(404, 'NOT_FOUND', 'No such member in this workspace.', jsonb_build_object('userId', p_user_id));
  end if;
  return jsonb_build_object('userId', v_removed, 'removed', true);
end
$function$;

CREATE OR REPLACE FUNCTION api.reorder_approval_workflows(p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ids uuid[] := array(select x::uuid from jsonb_array_elements_text(p_body -> 'workflowIds') x);
  v_have uuid[];
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('manager');
  v_have := array(select id from app.approval_workflows where workspace_id = v_ctx_workspace order by id for update);
  if cardinality(v_ids) <> cardinality(v_have)
     or array(select distinct x from unnest(v_ids) x order by x) <> v_have then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('workflowIds', 'not_a_permutation',
      'list every workflow of the workspace exactly once')), 'List every workflow of the workspace exactly once.',
      jsonb_build_object('workflowIds', to_jsonb(v_have)));
  end if;
  update app.approval_workflows w set position = x.n - 1
  from unnest(v_ids) with ordinality x (id, n)
  where w.id = x.id and w.position <> x.n - 1;
  return api.list_approval_workflows();
end
$function$;

CREATE OR REPLACE FUNCTION api.reorder_media_label_groups(p_ids uuid[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_current uuid[];
  v_missing uuid[];
  v_unknown uuid[];
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  perform pg_advisory_xact_lock(hashtext('media_label_groups:' || v_ctx_workspace::text));
  select coalesce(array_agg(id order by id), '{}') into v_current
  from app.media_label_groups where workspace_id = v_ctx_workspace;
  select coalesce(array_agg(x order by x), '{}') into v_missing from unnest(v_current) x where not (x = any (p_ids));
  select coalesce(array_agg(x order by x), '{}') into v_unknown from unnest(p_ids) x where not (x = any (v_current));
  if cardinality(v_missing) > 0 or cardinality(v_unknown) > 0 then
    perform app.raise(409, 'LABEL_GROUPS_CHANGED',
      'groupIds must list every label group of the workspace exactly once; reload the groups and retry.',
      jsonb_build_object('missingGroupIds', to_jsonb(v_missing), 'unknownGroupIds', to_jsonb(v_unknown)));
  end if;
  update app.media_label_groups g set position = (u.ord - 1)::int
  from unnest(p_ids) with ordinality u (id, ord)
  where g.id = u.id and g.position is distinct from (u.ord - 1)::int;
  return app.media_label_groups_json();
end
$function$;

CREATE OR REPLACE FUNCTION api.replace_media_labels(p_id uuid, p_label_ids uuid[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.media_items;
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  perform app.media_check_labels(p_label_ids);
  v := app.media_item(p_id, true);
  perform app.media_require_active(v);
  delete from app.media_item_labels where media_id = v.id and not (label_id = any (p_label_ids));
  insert into app.media_item_labels (media_id, label_id, workspace_id, organization_id, created_by)
  select v.id, x, v.workspace_id, v.organization_id, v_ctx_user from unnest(p_label_ids) x
  on conflict do nothing;
  return app.media_json(v);
end
$function$;

CREATE OR REPLACE FUNCTION api.reply_inbox_thread(p_thread uuid, p_text text, p_in_reply_to uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  t app.inbox_threads;
  v_integ record;
  v_rule app.inbox_platform_rules;
  v_parent app.inbox_messages;
  v app.inbox_messages;
  v_max int := coalesce(app.setting('inbox_reply_max_length')::int, 8000);
  v_job uuid;
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  t := app.inbox_thread(p_thread);
  if p_text is null or length(btrim(p_text)) = 0 or length(p_text) > v_max then
    perform app.raise(400, 'VALIDATION_FAILED', format('text must have 1 to %s characters.', v_max),
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.text', 'code', 'length', 'message', format('must have 1 to %s characters', v_max)))));
  end if;
  select i.id, i.organization_id, i.workspace_id, i.connector, i.platform, i.status, i.deleted_at into v_integ from app.integrations i where i.id = t.integration_id;
  if v_integ.deleted_at is not null or v_integ.status <> 'active' then
    perform app.raise(400, 'REPLY_NOT_ALLOWED', 'The integration of this thread is disconnected or deleted; nothing can be sent through it.',
      jsonb_build_object('reason', 'integration_inactive', 'integrationId', v_integ.id));
  end if;
  v_rule := app.inbox_rule(t.platform, t.kind);
  if not v_rule.can_reply then
    perform app.raise(400, 'REPLY_NOT_ALLOWED', coalesce(v_rule.reason, format('%s does not allow replies here.', t.platform)),
      jsonb_build_object('reason', 'platform', 'platform', t.platform, 'kind', t.kind));
  end if;
  if v_rule.reply_window_hours is not null
     and (t.last_inbound_at is null or t.last_inbound_at < now() - make_interval(hours => v_rule.reply_window_hours)) then
    perform app.raise(400, 'REPLY_NOT_ALLOWED', v_rule.reason,
      jsonb_build_object('reason', 'reply_window', 'platform', t.platform, 'windowHours', v_rule.reply_window_hours,
                         'lastInboundAt', t.last_inbound_at));
  end if;
  if p_in_reply_to is not null then
    v_parent := app.inbox_message(p_thread, p_in_reply_to);
    if v_parent.direction = 'note' or v_parent.message_key is null then
      perform app.raise(400, 'REPLY_NOT_ALLOWED', 'Only a message the platform has can be replied to (not a note or an unsent reply).',
        jsonb_build_object('reason', 'parent_not_on_platform', 'inReplyToId', p_in_reply_to));
    end if;
    if v_parent.moderation = 'deleted' then
      perform app.raise(400, 'REPLY_NOT_ALLOWED', 'The message was deleted; it cannot be replied to.',
        jsonb_build_object('reason', 'parent_deleted', 'inReplyToId', p_in_reply_to));
    end if;
  end if;
  insert into app.inbox_messages (organization_id, workspace_id, integration_id, thread_id, direction, in_reply_to_id, author, body, delivery_state, created_by)
  values (t.organization_id, t.workspace_id, t.integration_id, t.id, 'outbound', p_in_reply_to, app.inbox_author(), p_text, 'pending', v_ctx_user)
  returning * into v;
  v_job := app.inbox_enqueue('inbox.action', jsonb_build_object('messageId', v.id, 'workspaceId', v.workspace_id, 'action', 'reply'), v.id::text);
  update app.inbox_messages set action_job_id = v_job where id = v.id returning * into v;
  return app.inbox_message_json(v);
end
$function$;

CREATE OR REPLACE FUNCTION api.resolve_reviews(p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ids uuid[];
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  if p_body ? 'contentIds' then
    v_ids := array(select distinct x::uuid from jsonb_array_elements_text(p_body -> 'contentIds') x);
    perform app.require_content_ids(v_ids);
    return coalesce((select jsonb_agg(app.content_resolution(i.id) order by x.n)
                     from unnest(array(select x::uuid from jsonb_array_elements_text(p_body -> 'contentIds') x)) with ordinality x (id, n)
                     join app.content_items i on i.id = x.id), '[]');
  end if;
  -- Unsaved channels, routed as authored.
  if exists (select 1 from jsonb_array_elements(coalesce(p_body -> 'channels', '[]')) c
             where not exists (select 1 from app.integrations g where g.id = (c ->> 'integrationId')::uuid
                               and g.workspace_id = v_ctx_workspace and g.deleted_at is null)) then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('channels', 'integration_not_found',
      'a channel is not a connected channel of this workspace')), 'A channel is not a connected channel of this workspace.');
  end if;
  return coalesce((select jsonb_agg(
      jsonb_build_object('contentId', null, 'rootId', null, 'integrationId', g.id, 'platform', g.platform,
        'contentVersion', null, 'status', null,
        'workflow', case when w.id is not null then jsonb_build_object('id', w.id, 'name', w.name) end,
        'reviewRequired', app.review_policy(v_ctx_workspace) = 'required', 'approved', false) order by c.n)
    from jsonb_array_elements(coalesce(p_body -> 'channels', '[]')) with ordinality c (ch, n)
    join app.integrations g on g.id = (c.ch ->> 'integrationId')::uuid
    left join lateral app.route_channel(g.id, g.platform,
      array(select x::uuid from jsonb_array_elements_text(coalesce(p_body -> 'tagIds', '[]')) x),
      (p_body ->> 'campaignId')::uuid) w on true), '[]');
end
$function$;

CREATE OR REPLACE FUNCTION api.revert_content_to_draft(p_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.content_items;
  v_scope uuid[];
  v_expected uuid[];
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  if (p_body ? 'expectedRootPostId') <> (p_body ? 'expectedRootEditionIds') then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem(
      case when p_body ? 'expectedRootPostId' then 'expectedRootEditionIds' else 'expectedRootPostId' end,
      'required', 'expectedRootPostId and expectedRootEditionIds go together')),
      'expectedRootPostId and expectedRootEditionIds must be supplied together.');
  end if;
  -- Lock order: the root, then its editions (two reverts of sibling
  -- editions queue instead of deadlocking).
  perform 1 from app.content_roots r
  where r.id = (select i.root_id from app.content_items i where i.id = p_id and i.workspace_id = v_ctx_workspace)
  for update;
  v := app.content_item_for_update(p_id);
  perform app.require_content_status(v, array['scheduled']);
  -- The scope: every scheduled edition of the root, locked.
  perform 1 from app.content_items where root_id = v.root_id and deleted_at is null for update;
  v_scope := array(select id from app.content_items
                   where root_id = v.root_id and status = 'scheduled' and deleted_at is null order by id);
  if p_body ? 'expectedRootPostId' then
    v_expected := array(select distinct x from unnest(app.jsonb_uuids(p_body -> 'expectedRootEditionIds')) x order by x);
    if (p_body ->> 'expectedRootPostId')::uuid <> v.root_id or v_expected <> v_scope then
      perform app.raise(409, 'REVERT_SCOPE_STALE',
        'The root or its scheduled editions changed since you looked; reload and retry with the current scope.',
        jsonb_build_object('expectedRootPostId', p_body -> 'expectedRootPostId', 'rootPostId', v.root_id,
                           'expectedRootEditionIds', to_jsonb(v_expected), 'rootEditionIds', to_jsonb(v_scope)));
    end if;
  end if;
  update app.content_items
  set status = 'draft', intended_publish_at = coalesce(intended_publish_at, scheduled_at), scheduled_at = null
  where id = any (v_scope);
  return (select app.content_mutation_json(v.root_id, v_scope));
end
$function$;

CREATE OR REPLACE FUNCTION api.review_history(p_limit integer, p_offset bigint)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_total bigint;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  select count(*) into v_total from app.reviews where workspace_id = v_ctx_workspace
    and status in ('completed', 'cancelled', 'expired');
  return jsonb_build_object('items', coalesce((select jsonb_agg(app.review_json(row(r.*)::app.reviews, false) order by r.completed_at desc, r.id desc)
      from (select * from app.reviews r where r.workspace_id = v_ctx_workspace and r.status in ('completed', 'cancelled', 'expired')
            order by r.completed_at desc, r.id desc limit p_limit offset p_offset) r), '[]'),
    'meta', jsonb_build_object('limit', p_limit, 'offset', p_offset, 'total', v_total,
      'hasMore', p_offset + p_limit < v_total));
end
$function$;

CREATE OR REPLACE FUNCTION api.review_history_content(p_content_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('viewer');
  if not exists (select 1 from app.content_items where id = p_content_id and workspace_id = v_ctx_workspace) then
    perform app.raise_not_found('content', p_content_id);
  end if;
  return coalesce((select jsonb_agg(app.review_item_json(row(r.*)::app.reviews, row(it.*)::app.review_items)
                      || jsonb_build_object('reviewTitle', r.title, 'reviewStatus', r.status) order by it.created_at desc, it.id desc)
                   from app.review_items it join app.reviews r on r.id = it.review_id and r.workspace_id = it.workspace_id
                   where it.content_id = p_content_id), '[]');
end
$function$;

CREATE OR REPLACE FUNCTION api.review_submission_sealed_tokens(p_request_id text)
 RETURNS bytea
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v bytea;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  select sealed_tokens into v from app.review_submissions
  where workspace_id = v_ctx_workspace and principal_key = coalesce(app.current_approver_key(), 'anonymous')
    and request_id = p_request_id;
  return v;
end
$function$;

CREATE OR REPLACE FUNCTION api.revoke_api_key(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_id uuid;
  v_ids uuid[];
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_session();
  perform app.require_role('manager');
  v_ids := app.administrable_api_key_id_list();
  update app.api_keys set revoked_at = now(), revoked_by = v_ctx_user
  where id = p_id and revoked_at is null
    and id = any (v_ids)
  returning id into v_id;
  if v_id is null then
    perform app.raise(404, 'NOT_FOUND', 'No active API key with this id that you may administer.',
      jsonb_build_object('id', p_id));
  end if;
  return jsonb_build_object('id', v_id, 'revoked', true);
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
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  -- The rows and their live editions (in channel order), in one statement.
  with x as (
    select (e #>> '{}')::uuid as id, n from jsonb_array_elements(p_body -> 'rowIds') with ordinality e (e, n)
  ), w as (
    select x.n, x.id, r.id as found, r.content_root_id, r.planned_at
    from x left join app.workbench_rows r on r.id = x.id and r.workspace_id = v_ctx_workspace
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

CREATE OR REPLACE FUNCTION api.seal_review_submission(p_request_id text, p_sealed bytea)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  update app.review_submissions set sealed_tokens = p_sealed
  where workspace_id = v_ctx_workspace and principal_key = coalesce(app.current_approver_key(), 'anonymous')
    and request_id = p_request_id and sealed_tokens is null;
end
$function$;

CREATE OR REPLACE FUNCTION api.set_inbox_hook_secret(p_integration uuid, p_source text, p_secret text, p_secret_ciphertext bytea, p_verify_token_hash bytea)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_integ record;
  v_row app.inbox_hook_secrets;
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('manager');
  select i.id, i.organization_id, i.workspace_id, i.connector, i.platform, i.status, i.deleted_at into v_integ from app.integrations i where i.id = p_integration and i.deleted_at is null;
  if v_integ.id is null then
    perform app.raise(404, 'INTEGRATION_NOT_FOUND', 'No integration with this id in this workspace.', jsonb_build_object('id', p_integration));
  end if;
  if p_source not in ('facebook', 'instagram', 'x', 'sandbox') then
    perform app.raise(400, 'VALIDATION_FAILED', 'source must be facebook, instagram, x or sandbox.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'path.source', 'code', 'enum', 'message', 'must be facebook, instagram, x or sandbox'))));
  end if;
  if (p_source = 'sandbox' and v_integ.connector <> 'sandbox') or (p_source <> 'sandbox' and v_integ.platform <> p_source) then
    perform app.raise(400, 'HOOK_SOURCE_MISMATCH',
      format('This integration (%s, connector %s) cannot receive %s deliveries: a platform source must be the integration''s platform, sandbox needs the sandbox connector.',
             v_integ.platform, v_integ.connector, p_source),
      jsonb_build_object('platform', v_integ.platform, 'connector', v_integ.connector, 'source', p_source));
  end if;
  if p_source = 'sandbox' and app.webhook_secret_key_length(p_secret) is null then
    perform app.raise(400, 'VALIDATION_FAILED', 'A sandbox secret is a Standard Webhooks secret: whsec_ followed by the base64 of 24 to 64 bytes.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.secret', 'code', 'format', 'message', 'must be whsec_ followed by the base64 of 24 to 64 bytes'))));
  end if;
  if p_secret is null or length(p_secret) not between 16 and 512 then
    perform app.raise(400, 'VALIDATION_FAILED', 'secret must have 16 to 512 characters.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.secret', 'code', 'length', 'message', 'must have 16 to 512 characters'))));
  end if;
  if p_source in ('facebook', 'instagram') and p_verify_token_hash is null then
    perform app.raise(400, 'VALIDATION_FAILED', 'Meta sources need verifyToken, the token Meta sends with the subscription handshake.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.verifyToken', 'code', 'required', 'message', 'is required for facebook and instagram'))));
  end if;
  if p_source not in ('facebook', 'instagram') and p_verify_token_hash is not null then
    perform app.raise(400, 'VALIDATION_FAILED', 'verifyToken belongs to the Meta sources only.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.verifyToken', 'code', 'unexpected', 'message', 'only for facebook and instagram'))));
  end if;
  update app.inbox_hook_secrets set secret_ciphertext = p_secret_ciphertext, verify_token_hash = p_verify_token_hash, updated_at = now()
  where integration_id = p_integration and source = p_source;
  if not found then
    insert into app.inbox_hook_secrets (integration_id, source, organization_id, workspace_id, secret_ciphertext, verify_token_hash, created_by)
    values (p_integration, p_source, v_integ.organization_id, v_integ.workspace_id, p_secret_ciphertext, p_verify_token_hash, v_ctx_user);
  end if;
  return jsonb_build_object('integrationId', p_integration, 'source', p_source,
    'path', format('/v1/hooks/%s/%s', p_source, p_integration),
    'verifyTokenSet', p_verify_token_hash is not null, 'updatedAt', now());
end
$function$;

CREATE OR REPLACE FUNCTION api.set_inbox_platform_token(p_integration uuid, p_token_length integer, p_token_ciphertext bytea)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_integ record;
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('manager');
  select i.id, i.organization_id, i.workspace_id, i.platform, i.connector into v_integ from app.integrations i where i.id = p_integration and i.deleted_at is null;
  if v_integ.id is null then
    perform app.raise(404, 'INTEGRATION_NOT_FOUND', 'No integration with this id in this workspace.', jsonb_build_object('id', p_integration));
  end if;
  if v_integ.platform not in ('facebook', 'instagram', 'x') then
    perform app.raise(400, 'PLATFORM_TOKEN_UNSUPPORTED',
      format('The inbox talks to the platform''s API for facebook, instagram and x only; this integration is %s.', v_integ.platform),
      jsonb_build_object('platform', v_integ.platform, 'supported', jsonb_build_array('facebook', 'instagram', 'x')));
  end if;
  if exists (select 1 from app.connectors c where c.name = v_integ.connector and c.connect <> 'none') then
    perform app.raise(400, 'PLATFORM_TOKEN_UNSUPPORTED',
      format('This integration is a connected %s account: its inbox replies use the account''s own credentials (reconnect it to renew them); a platform token is for sandbox and webhook integrations.', v_integ.connector),
      jsonb_build_object('platform', v_integ.platform, 'connector', v_integ.connector, 'supported', jsonb_build_array('facebook', 'instagram', 'x')));
  end if;
  if p_token_length is null or p_token_length not between 16 and 4096 then
    perform app.raise(400, 'VALIDATION_FAILED', 'accessToken must have 16 to 4096 characters.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.accessToken', 'code', 'length', 'message', 'must have 16 to 4096 characters'))));
  end if;
  -- Update, else insert (no upsert: requests may not read the ciphertext column that ON CONFLICT would).
  update app.inbox_platform_tokens set token_ciphertext = p_token_ciphertext, updated_at = now() where integration_id = p_integration;
  if not found then
    insert into app.inbox_platform_tokens (integration_id, organization_id, workspace_id, token_ciphertext, created_by)
    values (p_integration, v_integ.organization_id, v_integ.workspace_id, p_token_ciphertext, v_ctx_user);
  end if;
  return jsonb_build_object('integrationId', p_integration, 'platform', v_integ.platform, 'updatedAt', now());
end
$function$;

CREATE OR REPLACE FUNCTION api.set_review_policy(p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_now timestamptz := now();
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('manager');
  insert into app.review_settings (workspace_id, organization_id, review_policy, updated_by)
  values (v_ctx_workspace, v_ctx_organization, p_body ->> 'reviewPolicy', app.current_person_id())
  on conflict (workspace_id) do update set review_policy = excluded.review_policy, updated_at = v_now, updated_by = excluded.updated_by;
  return jsonb_build_object('reviewPolicy', app.review_policy(v_ctx_workspace));
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
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
  v_ctx_organization uuid := app.current_organization_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  if v_request is not null then
    select results into v_stored from app.review_submissions
    where workspace_id = v_ctx_workspace and principal_key = v_principal and request_id = v_request;
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
         where w.id = (v_item -> 'choice' ->> 'workflowId')::uuid and w.workspace_id = v_ctx_workspace and w.active
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
    values (v_ctx_workspace, v_ctx_organization, v_request, v_principal, v_stored - 'replayed');
  end if;
  return v_stored;
end
$function$;

CREATE OR REPLACE FUNCTION api.update_content_root(p_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_root app.content_roots;
  v_ids uuid[];
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  select * into v_root from app.content_roots
  where id = p_id and workspace_id = v_ctx_workspace and deleted_at is null for update;
  if v_root.id is null then
    perform app.raise_not_found('content root', p_id);
  end if;
  perform app.raise_field_problems(app.media_ref_problems(v_root.workspace_id, app.jsonb_uuids(p_body -> 'mediaIds'), 'mediaIds'),
    'The request is not valid; see details.fields.');
  perform app.defer_content_checks();
  update app.content_roots set
    title = case when p_body ? 'title' then p_body ->> 'title' else title end,
    caption = case when p_body ? 'caption' then p_body ->> 'caption' else caption end,
    updated_at = now()
  where id = v_root.id returning * into v_root;
  if p_body ? 'mediaIds' then
    perform app.replace_root_media(v_root.id, coalesce(app.jsonb_uuids(p_body -> 'mediaIds'), '{}'));
  end if;
  v_ids := array(select id from app.content_items where root_id = v_root.id and status = 'scheduled' and deleted_at is null
                 order by id);
  perform app.assert_publishable(v_ids, array(select 'editions.' || x || '.' from unnest(v_ids) x));
  perform app.undefer_content_checks();
  return (select app.content_root_json(v_root.id));
end
$function$;

CREATE OR REPLACE FUNCTION api.update_hashtag_group(p_id uuid, p_patch jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.hashtag_groups;
  v_patch jsonb := coalesce(p_patch, '{}'::jsonb);
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  if v_patch ? 'hashtags' and jsonb_typeof(v_patch -> 'hashtags') <> 'array' then
    perform app.raise(400, 'INVALID_HASHTAG', 'hashtags must be an array of strings.', jsonb_build_object('field', 'hashtags'));
  end if;
  begin
    update app.hashtag_groups g set
      name = case when v_patch ? 'name' then v_patch ->> 'name' else g.name end,
      hashtags = case when v_patch ? 'hashtags'
                      then array(select jsonb_array_elements_text(v_patch -> 'hashtags'))
                      else g.hashtags end
    where g.id = p_id and g.workspace_id = v_ctx_workspace
    returning * into v;
  exception when unique_violation then
    perform app.raise(409, 'NAME_TAKEN',
      format('A hashtag group named %s already exists in this workspace (names are compared case-insensitively).', btrim(v_patch ->> 'name')),
      jsonb_build_object('field', 'name', 'name', btrim(v_patch ->> 'name')));
  end;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No hashtag group with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  return app.hashtag_group_json(v);
end
$function$;

CREATE OR REPLACE FUNCTION api.update_inbox_thread(p_id uuid, p_patch jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.inbox_threads;
  v_assignee uuid;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  v := app.inbox_thread(p_id);
  if p_patch ? 'assigneeId' then
    v_assignee := (p_patch ->> 'assigneeId')::uuid;
    if v_assignee is not null and not exists (
         select 1 from app.user_workspace_roles(v_assignee) r where r.workspace_id = v_ctx_workspace) then
      perform app.raise(400, 'ASSIGNEE_NOT_MEMBER', 'The assignee must be a member of this workspace.',
        jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.assigneeId', 'code', 'not_member', 'message', 'is not a member of this workspace'))));
    end if;
    update app.inbox_threads set assignee_id = v_assignee, updated_at = now() where id = p_id;
  end if;
  if p_patch ? 'status' then
    update app.inbox_threads
    set status = p_patch ->> 'status',
        archived_at = case when p_patch ->> 'status' = 'archived' then now() end,
        updated_at = now()
    where id = p_id;
  end if;
  select * into v from app.inbox_threads where id = p_id;
  return app.inbox_thread_json(v);
end
$function$;

CREATE OR REPLACE FUNCTION api.update_member(p_user_id uuid, p_role text)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_member app.workspace_members;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('manager');
  update app.workspace_members set role = p_role
  where workspace_id = v_ctx_workspace and user_id = p_user_id
  returning * into v_member;
  if v_member.user_id is null then
    perform app.raise(404, 'NOT_FOUND', 'No such member in this workspace.', jsonb_build_object('userId', p_user_id));
  end if;
  return app.member_json(v_member);
end
$function$;

CREATE OR REPLACE FUNCTION api.update_taxonomy_term(p_kind text, p_id uuid, p_patch jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v jsonb;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  begin
    execute format($q$
      update app.%I set
        name = case when $3 ? 'name' then $3 ->> 'name' else name end,
        color = case when $3 ? 'color' then $3 ->> 'color' else color end
      where id = $1 and workspace_id = $2
      returning jsonb_build_object('id', id, 'name', name, 'color', color, 'createdAt', created_at, 'updatedAt', updated_at)$q$,
      app.taxonomy_table(p_kind))
    into v using p_id, v_ctx_workspace, coalesce(p_patch, '{}'::jsonb);
  exception when unique_violation then
    perform app.raise(409, 'NAME_TAKEN',
      format('A %s named %s already exists in this workspace (names are compared case-insensitively).', app.taxonomy_noun(p_kind), btrim(p_patch ->> 'name')),
      jsonb_build_object('field', 'name', 'name', btrim(p_patch ->> 'name')));
  end;
  if v is null then
    perform app.raise(404, 'NOT_FOUND', format('No %s with this id in this workspace.', app.taxonomy_noun(p_kind)), jsonb_build_object('id', p_id));
  end if;
  return v;
end
$function$;
