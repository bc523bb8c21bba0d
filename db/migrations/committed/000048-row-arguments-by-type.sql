--! Previous: sha1:b2e69b1b8d57e9e70851e350ca19e9b9a7069818
--! Hash: sha1:b7e82cb92a9d20a434a28c72cfb06498e2cdb300
--! Message: row arguments by type

--! split: 01-current.sql
-- Whole rows of a table passed to a helper in a query, given by type (docs/citus.md,
-- "Functions"). A query over a distributed table runs on the workers against the shards, and
-- Citus sends it as written: `app.workspace_json(w, r.role) ... from app.workspaces w` reaches a
-- worker as a call with the shard's row type, and fails there:
--   function app.workspace_json(app.workspaces_102023, text) does not exist
-- The caller now builds the row by the table's type: `app.workspace_json(row(w.*)::app.workspaces,
-- r.role)`, which the worker resolves to the helper (every node has the table's type), and which
-- on a single PostgreSQL is the same row. The helpers keep their typed signatures; a row held in
-- a plpgsql variable (`v app.reviews`) is sent as a parameter of the table's type and needs
-- nothing. The functions below are re-created with only those arguments changed;
-- tests/db/10-distributable.test.sql fails on a call written the old way.
CREATE OR REPLACE FUNCTION app.campaign_phases_json(p_campaign_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(jsonb_agg(app.campaign_phase_json(row(p.*)::app.campaign_phases) order by p.position, p.created_at, p.id), '[]')
    from app.campaign_phases p where p.campaign_id = p_campaign_id
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
    join app.content_roots r on r.id = i.root_id
    join app.integrations g on g.id = i.integration_id
    where i.id = p_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.content_list_items_json(p_ids uuid[], p_review boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
begin
  -- PL/pgSQL, so the plan is prepared once per connection.
  return (
  with x as (select id, n from unnest(p_ids) with ordinality x (id, n)),
  rec as (select b.root_id, b.metadata from app.content_recurring_metadata_batch(
            array(select i.root_id from x join app.content_items i on i.id = x.id)) b)
  select coalesce(jsonb_agg(
    case when i.deleted_at is not null
      then jsonb_build_object('id', i.id, 'rootId', i.root_id, 'deleted', true, 'deletedAt', i.deleted_at)
      else app.content_list_item_json(row(i.*)::app.content_items, row(r.*)::app.content_roots, g.platform,
             case when i.own_media then (select count(*) from app.content_item_media m where m.content_item_id = i.id)
                  else (select count(*) from app.content_root_media m where m.root_id = i.root_id) end::int,
             rec.metadata, p_review)
    end order by x.n), '[]')
  from x
  join app.content_items i on i.id = x.id
  join app.content_roots r on r.id = i.root_id
  join app.integrations g on g.id = i.integration_id
  left join rec on rec.root_id = i.root_id);
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
      'editions', coalesce((select jsonb_agg(app.content_edition_json(row(i.*)::app.content_items) order by x.n)
                            from unnest(p_item_ids) with ordinality x (id, n)
                            join app.content_items i on i.id = x.id), '[]'))
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
    select coalesce(jsonb_agg(app.credentials_row_json(row(i.*)::app.integrations, row(c.*)::app.integration_credentials) order by i.id), '[]')
    from app.integrations i
    left join app.integration_credentials c on c.workspace_id = i.workspace_id and c.integration_id = i.id
    where i.id = any (p_ids)
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
          join app.integration_credentials c on c.integration_id = i.id where i.id = p_integration);
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
    select app.grid_tiles_json(jsonb_build_array(jsonb_build_object('id', t.id, 'pos', app.grid_position(row(t.*)::app.grid_tiles)))) -> 0
    from app.grid_tiles t where t.id = p_tile_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.media_label_groups_json()
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
  select coalesce(jsonb_agg(app.media_label_group_json(row(g.*)::app.media_label_groups) order by g.position, g.id), '[]')
  from app.media_label_groups g where g.workspace_id = app.current_workspace_id()
$function$;

CREATE OR REPLACE FUNCTION app.publishing_json(p_content_item_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select app.publishing_json_of(row(i.*)::app.content_items, row(s.*)::app.publishing_states, (select count(*) from app.publish_attempts a where a.content_item_id = i.id))
    from app.content_items i
    left join app.publishing_states s on s.content_item_id = i.id
    where i.id = p_content_item_id
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
    select coalesce(jsonb_agg(app.review_activity_json(row(a.*)::app.review_activity) order by a.created_at, a.id), '[]')
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
      'decisions', coalesce((select jsonb_agg(app.review_decision_json(row(d.*)::app.review_decisions) order by d.created_at, d.id)
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
         coalesce((select jsonb_agg(app.review_item_json(r, row(it.*)::app.review_items) order by it.created_at, it.id)
                   from app.review_items it where it.review_id = r.id), '[]')) else '{}' end
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
        jsonb_agg(app.content_edition_json(row(i.*)::app.content_items) order by g.created_at, g.id) editions,
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
begin
  perform app.require_role('editor');
  perform app.workbench_lock(app.current_workspace_id());
  insert into app.workbench_pages (organization_id, workspace_id, name, description, position, created_by)
  values (app.current_organization_id(), app.current_workspace_id(), btrim(p_body ->> 'name'), p_body ->> 'description',
          app.workbench_slot('pages', app.current_workspace_id(), (p_body ->> 'afterId')::uuid, (p_body ->> 'beforeId')::uuid, null),
          app.current_user_id())
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
  v_ids := array(select w.id from app.workbench_rows w join app.workbench_sections s on s.id = w.section_id
                 where w.page_id = v.id order by s.position, w.position limit v_limit offset v_offset);
  return jsonb_build_object(
    'page', app.workbench_page_json(v)
      || jsonb_build_object('sections', (select coalesce(jsonb_agg(app.workbench_section_json(row(s.*)::app.workbench_sections) order by s.position), '[]')
                                         from app.workbench_sections s where s.page_id = v.id))
      || jsonb_build_object('rows', app.workbench_rows_json(v_ids)),
    'meta', jsonb_build_object('limit', v_limit, 'offset', v_offset, 'total', v_total, 'hasMore', v_offset + cardinality(v_ids) < v_total));
end
$function$;

CREATE OR REPLACE FUNCTION api.list_approval_workflows()
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
begin
  perform app.require_role('viewer');
  return coalesce((select jsonb_agg(app.workflow_json(row(w.*)::app.approval_workflows) order by w.position, w.created_at, w.id)
                   from app.approval_workflows w where w.workspace_id = app.current_workspace_id()), '[]');
end
$function$;

CREATE OR REPLACE FUNCTION api.list_campaigns(p_search text, p_include_phases boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
begin
  perform app.require_role('viewer');
  if nullif(p_search, '') is null then
    return (
      select coalesce(jsonb_agg(app.campaign_json(row(c.*)::app.campaigns, coalesce(p_include_phases, false))
                                order by c.starts_on nulls last, lower(c.name), c.id), '[]')
      from app.campaigns c
      where c.workspace_id = app.current_workspace_id());
  end if;
  -- A search goes through the trigram index (app.campaign_search_ids), in a
  -- statement of its own: no plan shared with the unfiltered list walks the workspace.
  return (
    select coalesce(jsonb_agg(app.campaign_json(row(c.*)::app.campaigns, coalesce(p_include_phases, false))
                              order by c.starts_on nulls last, lower(c.name), c.id), '[]')
    from app.campaigns c
    where c.workspace_id = app.current_workspace_id()
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
    v_join := 'join app.integrations g on g.id = i.integration_id';
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

CREATE OR REPLACE FUNCTION api.list_content_versions(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_current int;
begin
  perform app.require_role('viewer');
  select version into v_current from app.content_items
  where id = p_id and workspace_id = app.current_workspace_id() and deleted_at is null;
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
begin
  perform app.require_role('viewer');
  return (select coalesce(jsonb_agg(app.hashtag_group_json(row(g.*)::app.hashtag_groups) order by lower(g.name), g.id), '[]')
          from app.hashtag_groups g where g.workspace_id = app.current_workspace_id());
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
begin
  perform app.require_role('viewer');
  if nullif(p_group, '') is not null then
    v_group := (app.media_label_group(p_group::uuid, 'groupId')).id;
  end if;
  return (
    select coalesce(jsonb_agg(app.media_label_json(row(l.*)::app.media_labels) order by lower(l.name), l.id), '[]')
    from app.media_labels l
    where l.workspace_id = app.current_workspace_id()
      and (coalesce(p_include_merged, false) or l.merged_into_id is null)
      and (p_group is null or (p_group = '' and l.group_id is null) or l.group_id = v_group)
      -- Through the trigram index (app.media_label_search_ids).
      and (coalesce(p_search, '') = '' or l.id = any (array(select app.media_label_search_ids(app.media_contains_pattern(p_search))))));
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
begin
  perform app.require_role('viewer');
  v_sees_email := app.current_workspace_role() = 'manager';
  return (
    select coalesce(jsonb_agg(case when v_sees_email then app.member_json(row(m.*)::app.workspace_members) else app.member_json(row(m.*)::app.workspace_members) - 'email' end
                              order by m.created_at, m.user_id), '[]')
    from app.workspace_members m
    where m.workspace_id = app.current_workspace_id());
end
$function$;

CREATE OR REPLACE FUNCTION api.list_reviews(p_status text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
begin
  perform app.require_role('viewer');
  return coalesce((select jsonb_agg(app.review_json(row(r.*)::app.reviews) order by r.created_at desc, r.id desc)
                   from (select * from app.reviews r where r.workspace_id = app.current_workspace_id()
                           and (p_status is null or r.status = p_status)
                         order by r.created_at desc, r.id desc limit 200) r), '[]');
end
$function$;

CREATE OR REPLACE FUNCTION api.list_webhook_deliveries(p_id uuid, p_limit integer, p_offset integer, p_state text)
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
    'data', coalesce((select jsonb_agg(app.webhook_delivery_json(row(d.*)::app.webhook_deliveries) order by d.seq desc)
                      from (select * from app.webhook_deliveries d where d.subscription_id = v.id
                              and (p_state is null or d.state = p_state)
                            order by d.seq desc limit p_limit offset p_offset) d), '[]'::jsonb),
    'meta', jsonb_build_object('limit', p_limit, 'offset', p_offset,
      'total', (select count(*)::int from app.webhook_deliveries d where d.subscription_id = v.id and (p_state is null or d.state = p_state))));
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
begin
  perform app.require_role('viewer');
  select count(*) into v_total from app.workbench_pages p
  where p.workspace_id = app.current_workspace_id()
    and (v_state = 'all' or (v_state = 'archived') = (p.archived_at is not null));
  v_ids := array(select p.id from app.workbench_pages p
                 where p.workspace_id = app.current_workspace_id()
                   and (v_state = 'all' or (v_state = 'archived') = (p.archived_at is not null))
                 order by p.position, p.id limit v_limit offset v_offset);
  return jsonb_build_object(
    'items', coalesce((select jsonb_agg(app.workbench_page_json(row(p.*)::app.workbench_pages) order by x.n) from unnest(v_ids) with ordinality x (id, n)
                       join app.workbench_pages p on p.id = x.id), '[]'),
    'meta', jsonb_build_object('limit', v_limit, 'offset', v_offset, 'total', v_total, 'hasMore', v_offset + cardinality(v_ids) < v_total));
end
$function$;

CREATE OR REPLACE FUNCTION api.list_workbench_sections(p_page_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
begin
  perform app.require_role('viewer');
  if not exists (select 1 from app.workbench_pages where id = p_page_id and workspace_id = app.current_workspace_id()) then
    perform app.raise_not_found('workbench page', p_page_id);
  end if;
  return (select coalesce(jsonb_agg(app.workbench_section_json(row(s.*)::app.workbench_sections) order by s.position), '[]') from app.workbench_sections s where s.page_id = p_page_id);
end
$function$;

CREATE OR REPLACE FUNCTION api.list_workspaces()
 RETURNS jsonb
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  select coalesce(jsonb_agg(app.workspace_json(row(w.*)::app.workspaces, r.role) order by w.created_at, w.id), '[]')
  from app.workspaces w
  join app.principal_workspace_roles() r on r.workspace_id = w.id
  where w.organization_id = app.current_organization_id()
$function$;

CREATE OR REPLACE FUNCTION api.move_media_labels_to_group(p_group_id uuid, p_label_ids uuid[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
begin
  perform app.require_role('editor');
  if p_group_id is not null then
    perform app.media_label_group(p_group_id);
  end if;
  perform app.media_check_labels(p_label_ids);
  update app.media_labels set group_id = p_group_id
  where id = any (p_label_ids) and workspace_id = app.current_workspace_id() and group_id is distinct from p_group_id;
  return (select coalesce(jsonb_agg(app.media_label_json(row(l.*)::app.media_labels) order by lower(l.name), l.id), '[]')
          from app.media_labels l where l.id = any (p_label_ids));
end
$function$;

CREATE OR REPLACE FUNCTION api.promote_grid_tile(p_integration_id uuid, p_tile_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.integrations;
  t app.grid_tiles;
  n app.grid_tiles;
  v_content jsonb;
  v_item uuid;
begin
  perform app.require_role('editor');
  v := app.grid_integration(p_integration_id);
  perform app.grid_lock(v.id);
  t := app.grid_tile(v.id, p_tile_id, true);
  perform app.grid_require_placeholder(t);
  -- The content route's function: platform rules, versions, the publish job.
  v_content := api.create_content(jsonb_strip_nulls(jsonb_build_object(
    'intent', 'schedule',
    'scheduledAt', p_body -> 'scheduledAt',
    'title', p_body -> 'title',
    'caption', coalesce(p_body -> 'caption', to_jsonb(t.note)),
    'mediaIds', to_jsonb(app.grid_tile_media_ids(t))))
    || jsonb_build_object('channels', jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
         'integrationId', v.id, 'settings', p_body -> 'settings')))));
  v_item := (v_content -> 'editions' -> 0 ->> 'id')::uuid;
  -- The placeholder becomes the edition's tile, where its time puts it (placed
  -- now rather than by the deferred trigger, which then finds it in place).
  perform app.grid_place_edition(row(i.*)::app.content_items) from app.content_items i where i.id = v_item;
  select * into n from app.grid_tiles where content_item_id = v_item;
  delete from app.grid_tiles where id = n.id;
  update app.grid_tiles set content_item_id = v_item, position_key = coalesce(n.position_key, position_key)
  where id = t.id;
  delete from app.grid_tile_media where tile_id = t.id;
  return jsonb_build_object('tile', app.grid_tile_answer(t.id), 'content', v_content);
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
begin
  perform app.require_role('viewer');
  select count(*) into v_total from app.reviews where workspace_id = app.current_workspace_id()
    and status in ('completed', 'cancelled', 'expired');
  return jsonb_build_object('items', coalesce((select jsonb_agg(app.review_json(row(r.*)::app.reviews, false) order by r.completed_at desc, r.id desc)
      from (select * from app.reviews r where r.workspace_id = app.current_workspace_id() and r.status in ('completed', 'cancelled', 'expired')
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
begin
  perform app.require_role('viewer');
  if not exists (select 1 from app.content_items where id = p_content_id and workspace_id = app.current_workspace_id()) then
    perform app.raise_not_found('content', p_content_id);
  end if;
  return coalesce((select jsonb_agg(app.review_item_json(row(r.*)::app.reviews, row(it.*)::app.review_items)
                      || jsonb_build_object('reviewTitle', r.title, 'reviewStatus', r.status) order by it.created_at desc, it.id desc)
                   from app.review_items it join app.reviews r on r.id = it.review_id
                   where it.content_id = p_content_id), '[]');
end
$function$;

CREATE OR REPLACE FUNCTION api.review_history_review(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  r app.reviews;
begin
  perform app.require_role('viewer');
  r := app.review_for(p_id);
  return app.review_json(r) || jsonb_build_object('activity',
    coalesce((select jsonb_agg(app.review_activity_json(row(a.*)::app.review_activity) order by a.created_at, a.id)
              from app.review_activity a where a.review_id = r.id), '[]'));
end
$function$;
