--! Previous: sha1:246519953d89150e2e6a4959cfe6aec09f877dce
--! Hash: sha1:8eb9dcc641cb3e2d5b47d8d4e68219b3a34baa55
--! Message: the request time on every node

--! split: 01-current.sql
-- The request's time on every node (docs/citus.md, "Triggers").
--
-- now() is the transaction's start on the node that evaluates it. On a Citus cluster a trigger
-- runs on a worker, whose part of the transaction starts when the coordinator first reaches it,
-- later than the request's: "publish now" (scheduled at the request's now()) was refused there as
-- a time in the past. The request's context now carries its time (pressroom.now, with SET LOCAL,
-- which Citus hands to the workers with the rest), and app.now() reads it, falling back to now()
-- outside a request (one node: the same value). The status machine's "a time in the past cannot
-- be scheduled" compares with it; its root-caption lookup of a newly sent edition carries the
-- workspace (a trigger on a shard reads its own workspace only).

CREATE OR REPLACE FUNCTION app.now()
 RETURNS timestamp with time zone
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog'
AS $function$
  select coalesce(nullif(current_setting('pressroom.now', true), '')::timestamptz, now())
$function$;
comment on function app.now() is 'The request''s time: the coordinator''s now() as app.set_request_context recorded it (pressroom.now), the same on every node of a Citus cluster; now() outside a request. For rules that triggers check against the time the client''s request started (000059).';
revoke all on function app.now() from public;
grant execute on function app.now() to pressroom_api, pressroom_definer, pressroom_worker;

CREATE OR REPLACE FUNCTION app.set_request_context(p_actor_kind text, p_user uuid, p_session uuid, p_api_key uuid, p_review_link uuid, p_organization uuid, p_workspace uuid, p_role text, p_request_id text)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog'
AS $function$
begin
  -- Citus hands the transaction's SET LOCALs to its workers only with propagate_set_commands;
  -- without Citus it is a placeholder setting that nothing reads. The lists the
  -- organization-level policies read are remembered per context, on first use (app.recall_ids):
  -- a new context starts without them.
  execute format('set local citus.propagate_set_commands = local; '
    'set local pressroom.actor_kind = %L; set local pressroom.user_id = %L; set local pressroom.session_id = %L; '
    'set local pressroom.api_key_id = %L; set local pressroom.review_link_id = %L; set local pressroom.organization_id = %L; '
    'set local pressroom.workspace_id = %L; set local pressroom.workspace_role = %L; set local pressroom.request_id = %L; '
    'set local pressroom.accessible_workspaces = ''''; set local pressroom.managed_workspaces = ''''; '
    'set local pressroom.administrable_api_keys = ''''; set local pressroom.now = %L',
    coalesce(p_actor_kind, ''), coalesce(p_user::text, ''), coalesce(p_session::text, ''), coalesce(p_api_key::text, ''),
    coalesce(p_review_link::text, ''), coalesce(p_organization::text, ''), coalesce(p_workspace::text, ''),
    coalesce(p_role, ''), coalesce(p_request_id, ''), to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'));
  -- The accessibility of the workspace, computed once here (as pressroom_app, before the role
  -- switch), for app.current_accessible_workspace_id on every node: the context's key when the
  -- principal may act in it, '!' and the key when it may not.
  execute format('set local pressroom.accessible_workspace = %L',
    case when p_workspace is null then ''
         when app.current_workspace_accessible() then app.context_key()
         else '!' || app.context_key() end);
  -- Last, and not with SET LOCAL (committed/000040-request-context-with-set-local.sql says why).
  perform set_config('role', 'pressroom_request', true);
end
$function$;
CREATE OR REPLACE FUNCTION app.tg_content_items_status_machine()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
declare
  v_root_caption text;
  v_becomes_live boolean;
begin
  if tg_op = 'INSERT' then
    if new.status not in ('draft', 'scheduled') then
      perform app.raise(409, 'INVALID_STATUS_TRANSITION',
        format('New content starts as draft or scheduled, not %s.', new.status),
        jsonb_build_object('from', null, 'to', new.status));
    end if;
    if not exists (select 1 from app.content_roots r where r.id = new.root_id and r.workspace_id = new.workspace_id
                   and r.organization_id = new.organization_id) then
      perform app.raise_field_problems(jsonb_build_array(app.field_problem('rootId', 'not_found', 'no content root with this id in this workspace')));
    end if;
    if not exists (select 1 from app.integrations g where g.id = new.integration_id and g.workspace_id = new.workspace_id
                   and g.deleted_at is null) then
      perform app.raise_field_problems(jsonb_build_array(app.field_problem('integrationId', 'integration_not_found',
        'no connected channel with this id in this workspace')));
    end if;
    new.publish_job_id := null;
    if new.status = 'scheduled' and new.scheduled_at < app.now() then
      perform app.raise_field_problems(jsonb_build_array(app.field_problem('scheduledAt', 'in_past', 'a time in the past cannot be scheduled')));
    end if;
    return new;
  end if;

  if old.deleted_at is not null and new.deleted_at is not null then
    perform app.raise(409, 'CONTENT_DELETED', 'This content was deleted and cannot change.',
      jsonb_build_object('contentId', old.id));
  end if;
  if new.id <> old.id or new.root_id <> old.root_id or new.integration_id <> old.integration_id
     or new.workspace_id <> old.workspace_id or new.organization_id <> old.organization_id or new.kind <> old.kind then
    perform app.raise(400, 'IMMUTABLE_FIELD',
      'An edition''s root, channel, kind and workspace cannot change; create another edition instead.',
      jsonb_build_object('contentId', old.id));
  end if;
  if new.status <> old.status and not app.content_transition_allowed(old.status, new.status) then
    perform app.raise(409, 'INVALID_STATUS_TRANSITION',
      format('Content cannot move from %s to %s.', old.status, new.status),
      jsonb_build_object('contentId', old.id, 'from', old.status, 'to', new.status));
  end if;
  if (new.caption is distinct from old.caption or new.thread <> old.thread or new.settings <> old.settings
      or new.own_media <> old.own_media)
     and old.status not in ('draft', 'scheduled') then
    perform app.raise(400, 'INVALID_CONTENT_STATUS',
      format('Only draft or scheduled content can be edited; this content is %s.', old.status),
      jsonb_build_object('contentId', old.id, 'status', old.status, 'allowedStatuses', jsonb_build_array('draft', 'scheduled')));
  end if;
  -- Published content keeps what it published, whatever happens to its root.
  if new.status = 'sent' and old.status <> 'sent' then
    new.sent_at := coalesce(new.sent_at, now());
    if new.caption is null then
      select caption into v_root_caption from app.content_roots where workspace_id = new.workspace_id and id = new.root_id;
      new.caption := coalesce(v_root_caption, '');
    end if;
    new.own_media := true;
  end if;
  v_becomes_live := new.status = 'scheduled' and new.deleted_at is null
    and (old.status <> 'scheduled' or old.deleted_at is not null or new.scheduled_at is distinct from old.scheduled_at);
  if v_becomes_live and new.scheduled_at < app.now() then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('scheduledAt', 'in_past', 'a time in the past cannot be scheduled')),
      'A time in the past cannot be scheduled.');
  end if;
  return new;
end
$function$;
