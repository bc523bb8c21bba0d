-- Reviews and approval workflows: the api functions the routes call
-- (server/routes/approvalWorkflows.ts, server/routes/reviews.ts). The engine
-- and the tables are in 10-reviews.sql. Every function checks the role;
-- row-level security holds each to the request's workspace.

-- ---------------------------------------------------------------------------
-- Helpers.
-- ---------------------------------------------------------------------------
create function app.workflow_for(p_id uuid, p_lock boolean default false) returns app.approval_workflows
language plpgsql as $$
declare
  w app.approval_workflows;
begin
  if p_lock then
    select * into w from app.approval_workflows where id = p_id and workspace_id = app.current_workspace_id() for update;
  else
    select * into w from app.approval_workflows where id = p_id and workspace_id = app.current_workspace_id();
  end if;
  if w.id is null then
    perform app.raise_not_found('approval workflow', p_id);
  end if;
  return w;
end
$$;
comment on function app.workflow_for(uuid, boolean) is 'The approval workflow of the current workspace with this id (locked on request), or 404 NOT_FOUND.';
grant execute on function app.workflow_for(uuid, boolean) to pressroom_api, pressroom_definer, pressroom_worker;

create function app.review_for(p_id uuid, p_lock boolean default false) returns app.reviews
language plpgsql as $$
declare
  r app.reviews;
begin
  if p_lock then
    select * into r from app.reviews where id = p_id and workspace_id = app.current_workspace_id() for update;
  else
    select * into r from app.reviews where id = p_id and workspace_id = app.current_workspace_id();
  end if;
  if r.id is null then
    perform app.raise_not_found('review', p_id);
  end if;
  return r;
end
$$;
comment on function app.review_for(uuid, boolean) is 'The review of the current workspace with this id (locked on request), or 404 NOT_FOUND.';
grant execute on function app.review_for(uuid, boolean) to pressroom_api, pressroom_definer, pressroom_worker;

create function app.review_item_for(r app.reviews, p_item_id uuid, p_lock boolean default false) returns app.review_items
language plpgsql as $$
declare
  it app.review_items;
begin
  if p_lock then
    select * into it from app.review_items where id = p_item_id and review_id = r.id for update;
  else
    select * into it from app.review_items where id = p_item_id and review_id = r.id;
  end if;
  if it.id is null then
    perform app.raise_not_found('review item', p_item_id);
  end if;
  return it;
end
$$;
comment on function app.review_item_for(app.reviews, uuid, boolean) is 'The item of this review with this id, or 404 NOT_FOUND.';
grant execute on function app.review_item_for(app.reviews, uuid, boolean) to pressroom_api, pressroom_definer, pressroom_worker;

create function app.require_review_status(r app.reviews, p_allowed text[]) returns void
language plpgsql as $$
begin
  if not (r.status = any (p_allowed)) then
    perform app.raise(409, 'INVALID_REVIEW_STATUS',
      format('This operation needs a review that is %s; this review is %s.', array_to_string(p_allowed, ' or '), r.status),
      jsonb_build_object('reviewId', r.id, 'status', r.status, 'allowedStatuses', to_jsonb(p_allowed)));
  end if;
end
$$;
comment on function app.require_review_status(app.reviews, text[]) is 'Raises 409 INVALID_REVIEW_STATUS unless the review is in one of the statuses.';
grant execute on function app.require_review_status(app.reviews, text[]) to pressroom_api, pressroom_definer, pressroom_worker;

-- Adds an item for one edition (draft review: just the row; active: the content enters review).
create function app.review_add_item(r app.reviews, p_content uuid) returns app.review_items
language plpgsql as $$
declare
  it app.review_items;
  v app.content_items;
begin
  select * into v from app.content_items where id = p_content and workspace_id = r.workspace_id and deleted_at is null;
  if v.id is null then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('contentId', 'not_found', 'no content with this id in this workspace')),
      'No content with this id in this workspace.');
  end if;
  if v.status not in ('draft', 'scheduled') then
    perform app.raise(400, 'INVALID_CONTENT_STATUS',
      format('Only draft or scheduled content can enter a review; this content is %s.', v.status),
      jsonb_build_object('contentId', v.id, 'status', v.status, 'allowedStatuses', jsonb_build_array('draft', 'scheduled')));
  end if;
  if exists (select 1 from app.review_items x where x.content_id = v.id and x.open) then
    perform app.raise(409, 'CONTENT_IN_REVIEW', 'This content is already in an open review.',
      jsonb_build_object('contentId', v.id, 'reviewId', (select x.review_id from app.review_items x where x.content_id = v.id and x.open limit 1)));
  end if;
  insert into app.review_items (organization_id, workspace_id, review_id, content_id)
  values (r.organization_id, r.workspace_id, r.id, v.id) returning * into it;
  if r.status = 'active' then
    it := app.review_hold_content(it);
    perform app.review_activity_add(r, it.id, 'system', 'sent');
    perform app.review_item_refresh_waiting(it.id);
  end if;
  return it;
end
$$;
comment on function app.review_add_item(app.reviews, uuid) is 'Adds an edition to a review: draft or scheduled content of the workspace, in no other open review (409 CONTENT_IN_REVIEW); in an active review the content enters review at once.';
grant execute on function app.review_add_item(app.reviews, uuid) to pressroom_api, pressroom_definer, pressroom_worker;

-- A random link token: 'prr_' + 64 hex digits of two v4 UUIDs (244 random bits from the server's CSPRNG).
create function app.new_review_link_token() returns text
language sql volatile as $$
  select 'prr_' || replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '')
$$;
comment on function app.new_review_link_token() is 'A new client review link token (prr_ + 64 hex digits, 244 random bits); only its SHA-256 is stored.';
grant execute on function app.new_review_link_token() to pressroom_api, pressroom_definer;

-- Creates the missing client links of a review; returns the new ones with their tokens (shown once).
create function app.review_create_links(r app.reviews) returns jsonb
language plpgsql as $$
declare
  v_client record;
  v_token text;
  v_out jsonb := '[]';
  v_link app.review_links;
begin
  for v_client in
    select distinct on (lower(a ->> 'email')) lower(a ->> 'email') as email, a ->> 'name' as name
    from jsonb_array_elements(r.stages) s, jsonb_array_elements(s -> 'approvers') a
    where a ->> 'type' = 'client'
    order by lower(a ->> 'email')
  loop
    continue when exists (select 1 from app.review_links l where l.review_id = r.id and l.email = v_client.email);
    v_token := app.new_review_link_token();
    insert into app.review_links (organization_id, workspace_id, review_id, email, name, token_hash, expires_at)
    values (r.organization_id, r.workspace_id, r.id, v_client.email, v_client.name,
            sha256(convert_to(v_token, 'UTF8')), r.due_at)
    returning id, email, name, expires_at into v_link.id, v_link.email, v_link.name, v_link.expires_at;
    v_out := v_out || jsonb_build_object('id', v_link.id, 'email', v_link.email, 'name', v_link.name,
                                         'token', v_token, 'expiresAt', v_link.expires_at);
  end loop;
  return v_out;
end
$$;
comment on function app.review_create_links(app.reviews) is 'Creates one review link per client reviewer of the review''s stages that has none yet (token hashed with SHA-256, expiring with the review); returns the new links with their tokens, which are never shown again.';
grant execute on function app.review_create_links(app.reviews) to pressroom_api, pressroom_definer;

-- Notifies the members a review now waits on.
create function app.review_notify_waiting(r app.reviews, p_kind text, p_data jsonb default '{}', p_only text[] default null)
returns int
language plpgsql as $$
declare
  v_count int;
begin
  with waiting as (
    select distinct k as approver_key from app.review_items it, unnest(it.waiting_on) k
    where it.review_id = r.id and it.state = 'pending' and it.open
      and (p_only is null or k = any (p_only))
  ), ins as (
    insert into app.notifications (organization_id, workspace_id, user_id, review_link_id, kind, review_id, data)
    select r.organization_id, r.workspace_id,
           case when w.approver_key like 'user:%' then substr(w.approver_key, 6)::uuid end,
           case when w.approver_key like 'client:%' then
             (select l.id from app.review_links l where l.review_id = r.id and 'client:' || l.email = w.approver_key) end,
           p_kind, r.id, jsonb_build_object('title', r.title) || p_data
    from waiting w
    where w.approver_key like 'user:%'
       or exists (select 1 from app.review_links l where l.review_id = r.id and 'client:' || l.email = w.approver_key)
    returning 1
  )
  select count(*) into v_count from ins;
  return v_count;
end
$$;
comment on function app.review_notify_waiting(app.reviews, text, jsonb, text[]) is 'Writes a notification (review_requested or review_reminder) for every approver a review waits on (members by user, clients by link), optionally only for the listed approver keys; returns how many.';
grant execute on function app.review_notify_waiting(app.reviews, text, jsonb, text[]) to pressroom_api, pressroom_definer;

-- The one decision function: members (api.decide_review_item) and clients
-- (api.review_link_decide) both end here.
create function app.review_decide(r app.reviews, it app.review_items, p_decision text, p_comment text) returns jsonb
language plpgsql as $$
declare
  v_key text := app.current_approver_key();
  v_stage jsonb;
  d app.review_decisions;
begin
  if r.status <> 'active' then
    perform app.require_review_status(r, array['active']);
  end if;
  if it.state <> 'pending' or not it.open then
    perform app.raise(409, 'ITEM_ALREADY_DECIDED', format('This review item is %s; it takes no more decisions.', it.state),
      jsonb_build_object('itemId', it.id, 'state', it.state));
  end if;
  v_stage := r.stages -> it.current_stage;
  if v_key is null or not exists (select 1 from jsonb_array_elements(v_stage -> 'approvers') a where app.approver_key(a) = v_key) then
    perform app.raise(403, 'NOT_AN_APPROVER',
      format('Only an approver of the open stage (%s) decides this item.', v_stage ->> 'name'),
      jsonb_build_object('itemId', it.id, 'stage', it.current_stage, 'stageName', v_stage ->> 'name'));
  end if;
  if exists (select 1 from app.review_decisions x where x.item_id = it.id and x.stage = it.current_stage
             and x.approver_key = v_key and x.revoked_at is null and x.superseded_at is null) then
    perform app.raise(409, 'ALREADY_DECIDED', 'You already decided this item at this stage; revoke that decision first to change it.',
      jsonb_build_object('itemId', it.id, 'stage', it.current_stage));
  end if;
  insert into app.review_decisions (organization_id, workspace_id, review_id, item_id, stage, stage_name, approver_key,
    user_id, client_email, decision, comment)
  values (r.organization_id, r.workspace_id, r.id, it.id, it.current_stage, v_stage ->> 'name', v_key,
    case when v_key like 'user:%' then substr(v_key, 6)::uuid end,
    case when v_key like 'client:%' then substr(v_key, 8) end, p_decision, p_comment)
  returning * into d;
  perform app.review_activity_add(r, it.id, 'decision', p_decision, p_comment,
    jsonb_build_object('decisionId', d.id, 'stage', d.stage, 'stageName', d.stage_name));
  perform app.review_advance(r.id, it.id);
  select * into it from app.review_items where id = it.id;
  return jsonb_build_object('decisionId', d.id, 'itemId', it.id, 'decision', d.decision, 'stage', d.stage,
    'itemState', it.state, 'currentStage', it.current_stage,
    'contentStatus', (select status from app.content_items where id = it.content_id),
    'reviewStatus', (select status from app.reviews where id = r.id));
end
$$;
comment on function app.review_decide(app.reviews, app.review_items, text, text) is 'Records the caller''s decision on an item at its open stage: the review must be active (409 INVALID_REVIEW_STATUS), the item pending (409 ITEM_ALREADY_DECIDED), the caller an approver of that stage (403 NOT_AN_APPROVER) without a live decision there (409 ALREADY_DECIDED); then the engine advances (app.review_advance).';
grant execute on function app.review_decide(app.reviews, app.review_items, text, text) to pressroom_api, pressroom_definer;

create function app.review_comment(r app.reviews, it app.review_items, p_body text, p_mentions uuid[]) returns jsonb
language plpgsql as $$
declare
  v_id uuid;
  v_bad uuid[];
  a app.review_activity;
begin
  if btrim(coalesce(p_body, '')) = '' then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('body', 'required', 'a comment needs text')), 'A comment needs text.');
  end if;
  v_bad := array(select m from unnest(coalesce(p_mentions, '{}')) m
                 where not exists (select 1 from app.user_workspace_roles(m) x where x.workspace_id = r.workspace_id));
  if cardinality(v_bad) > 0 then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('mentions', 'not_a_member',
      'every mentioned user must be a member of this workspace')), 'A mentioned user is not a member of this workspace.',
      jsonb_build_object('userIds', to_jsonb(v_bad)));
  end if;
  v_id := app.review_activity_add(r, it.id, 'comment', 'comment', p_body, '{}',
    array(select distinct m from unnest(coalesce(p_mentions, '{}')) m));
  insert into app.notifications (organization_id, workspace_id, user_id, kind, review_id, item_id, data)
  select r.organization_id, r.workspace_id, m, 'mention', r.id, it.id,
         jsonb_build_object('title', r.title, 'activityId', v_id, 'excerpt', left(p_body, 200))
  from (select distinct m from unnest(coalesce(p_mentions, '{}')) m) x;
  select * into a from app.review_activity where id = v_id;
  return app.review_activity_json(a);
end
$$;
comment on function app.review_comment(app.reviews, app.review_items, text, uuid[]) is 'Adds a comment to a review item, with @mentions of workspace members (each mentioned member gets a notification).';
grant execute on function app.review_comment(app.reviews, app.review_items, text, uuid[]) to pressroom_api, pressroom_definer;

create function app.review_react(r app.reviews, it app.review_items, p_activity uuid, p_emoji text, p_add boolean) returns jsonb
language plpgsql as $$
declare
  v_key text := app.current_approver_key();
begin
  if not exists (select 1 from app.review_activity a where a.id = p_activity and a.item_id = it.id) then
    perform app.raise_not_found('activity entry', p_activity);
  end if;
  if p_add then
    insert into app.review_reactions (activity_id, actor_key, organization_id, workspace_id, emoji)
    values (p_activity, v_key, r.organization_id, r.workspace_id, p_emoji)
    on conflict (activity_id, actor_key) do update set emoji = excluded.emoji;
  else
    delete from app.review_reactions where activity_id = p_activity and actor_key = v_key and emoji = p_emoji;
    if not found then
      perform app.raise(404, 'NOT_FOUND', 'You have no such reaction on this activity entry.',
        jsonb_build_object('activityId', p_activity, 'emoji', p_emoji));
    end if;
  end if;
  return jsonb_build_object('activityId', p_activity, 'emoji', p_emoji, 'reacted', p_add);
end
$$;
comment on function app.review_react(app.reviews, app.review_items, uuid, text, boolean) is 'Adds (replacing the caller''s previous one) or removes the caller''s emoji on an activity entry of the item; 404 when there is nothing to remove.';
grant execute on function app.review_react(app.reviews, app.review_items, uuid, text, boolean) to pressroom_api, pressroom_definer;

create function app.review_item_activity(it app.review_items) returns jsonb
language sql stable as $$
  select coalesce(jsonb_agg(app.review_activity_json(a) order by a.created_at, a.id), '[]')
  from app.review_activity a where a.item_id = it.id
$$;
comment on function app.review_item_activity(app.review_items) is 'An item''s activity in order: decisions, comments, system events, each with its reactions.';
grant execute on function app.review_item_activity(app.review_items) to pressroom_api, pressroom_definer;

-- ---------------------------------------------------------------------------
-- Review policy.
-- ---------------------------------------------------------------------------
create function api.get_review_policy() returns jsonb
language plpgsql stable as $$
begin
  perform app.require_role('viewer');
  return jsonb_build_object('reviewPolicy', app.review_policy(app.current_workspace_id()));
end
$$;
comment on function api.get_review_policy() is 'Serves GET /v1/workspaces/{workspaceId}/review-policy (getReviewPolicy_v1): none, optional or required. Viewer role.';

create function api.set_review_policy(p_body jsonb) returns jsonb
language plpgsql as $$
begin
  perform app.require_role('manager');
  insert into app.review_settings (workspace_id, organization_id, review_policy, updated_by)
  values (app.current_workspace_id(), app.current_organization_id(), p_body ->> 'reviewPolicy', app.current_person_id())
  on conflict (workspace_id) do update set review_policy = excluded.review_policy, updated_at = now(), updated_by = excluded.updated_by;
  return jsonb_build_object('reviewPolicy', app.review_policy(app.current_workspace_id()));
end
$$;
comment on function api.set_review_policy(jsonb) is 'Serves PUT /v1/workspaces/{workspaceId}/review-policy (setReviewPolicy_v1): sets the workspace''s review policy. Manager role.';

-- ---------------------------------------------------------------------------
-- Approval workflows.
-- ---------------------------------------------------------------------------
create function app.workflow_problems(p_body jsonb, p_partial boolean) returns jsonb
language plpgsql stable as $$
declare
  v_problems jsonb := '[]';
  v_bad text[];
begin
  if p_body ? 'stages' or not p_partial then
    v_problems := v_problems || app.review_stages_problems(p_body -> 'stages', 'stages');
  end if;
  if p_body ? 'match' then
    v_bad := array(select x from jsonb_array_elements_text(coalesce(p_body -> 'match' -> 'integrationIds', '[]')) x
                   where not exists (select 1 from app.integrations g where g.id = x::uuid and g.workspace_id = app.current_workspace_id()));
    if cardinality(v_bad) > 0 then
      v_problems := v_problems || app.field_problem('match/integrationIds', 'not_found', 'no channel with this id in this workspace: ' || array_to_string(v_bad, ', '));
    end if;
    v_bad := array(select x from jsonb_array_elements_text(coalesce(p_body -> 'match' -> 'tagIds', '[]')) x
                   where not exists (select 1 from app.tags t where t.id = x::uuid and t.workspace_id = app.current_workspace_id()));
    if cardinality(v_bad) > 0 then
      v_problems := v_problems || app.field_problem('match/tagIds', 'not_found', 'no tag with this id in this workspace: ' || array_to_string(v_bad, ', '));
    end if;
    v_bad := array(select x from jsonb_array_elements_text(coalesce(p_body -> 'match' -> 'campaignIds', '[]')) x
                   where not exists (select 1 from app.campaigns c where c.id = x::uuid and c.workspace_id = app.current_workspace_id()));
    if cardinality(v_bad) > 0 then
      v_problems := v_problems || app.field_problem('match/campaignIds', 'not_found', 'no campaign with this id in this workspace: ' || array_to_string(v_bad, ', '));
    end if;
  end if;
  return v_problems;
end
$$;
comment on function app.workflow_problems(jsonb, boolean) is 'Field problems of a workflow body: its stages (app.review_stages_problems) and match references (channels, tags, campaigns of this workspace).';
grant execute on function app.workflow_problems(jsonb, boolean) to pressroom_api;

create function app.workflow_name_taken(p_name text, p_except uuid) returns void
language plpgsql as $$
begin
  if exists (select 1 from app.approval_workflows w where w.workspace_id = app.current_workspace_id()
             and lower(btrim(w.name)) = lower(btrim(p_name)) and w.id is distinct from p_except) then
    perform app.raise(409, 'NAME_TAKEN', 'An approval workflow with this name exists in this workspace.',
      jsonb_build_object('name', btrim(p_name)));
  end if;
end
$$;
comment on function app.workflow_name_taken(text, uuid) is 'Raises 409 NAME_TAKEN when another workflow of the workspace has this name (case-insensitive, trimmed).';
grant execute on function app.workflow_name_taken(text, uuid) to pressroom_api;

create function api.list_approval_workflows() returns jsonb
language plpgsql stable as $$
begin
  perform app.require_role('viewer');
  return coalesce((select jsonb_agg(app.workflow_json(w) order by w.position, w.created_at, w.id)
                   from app.approval_workflows w where w.workspace_id = app.current_workspace_id()), '[]');
end
$$;
comment on function api.list_approval_workflows() is 'Serves GET /v1/workspaces/{workspaceId}/approval-workflows (listApprovalWorkflows_v1): the workspace''s workflows in routing order. Viewer role.';

create function api.create_approval_workflow(p_body jsonb) returns jsonb
language plpgsql as $$
declare
  w app.approval_workflows;
begin
  perform app.require_role('manager');
  perform app.raise_field_problems(app.workflow_problems(p_body, false), 'The workflow is not valid; see details.fields.');
  perform app.workflow_name_taken(p_body ->> 'name', null);
  insert into app.approval_workflows (organization_id, workspace_id, name, position, active, match, stages,
    auto_schedule_on_approval, created_by)
  values (app.current_organization_id(), app.current_workspace_id(), btrim(p_body ->> 'name'),
    coalesce((select max(position) + 1 from app.approval_workflows where workspace_id = app.current_workspace_id()), 0),
    coalesce((p_body ->> 'active')::boolean, true), app.workflow_match_normalize(coalesce(p_body -> 'match', '{}')),
    app.review_stages_normalize(p_body -> 'stages'), coalesce((p_body ->> 'autoScheduleOnApproval')::boolean, false),
    app.current_person_id())
  returning * into w;
  return app.workflow_json(w);
end
$$;
comment on function api.create_approval_workflow(jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/approval-workflows (createApprovalWorkflow_v1): a workflow, last in routing order. Manager role; 400 VALIDATION_FAILED (stages, match references), 409 NAME_TAKEN.';

create function api.get_approval_workflow(p_id uuid) returns jsonb
language plpgsql stable as $$
begin
  perform app.require_role('viewer');
  return app.workflow_json(app.workflow_for(p_id));
end
$$;
comment on function api.get_approval_workflow(uuid) is 'Serves GET /v1/workspaces/{workspaceId}/approval-workflows/{workflowId} (getApprovalWorkflow_v1). Viewer role; 404 NOT_FOUND.';

create function api.update_approval_workflow(p_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  w app.approval_workflows;
begin
  perform app.require_role('manager');
  w := app.workflow_for(p_id, true);
  perform app.raise_field_problems(app.workflow_problems(p_body, true), 'The workflow is not valid; see details.fields.');
  if p_body ? 'name' then
    perform app.workflow_name_taken(p_body ->> 'name', w.id);
  end if;
  update app.approval_workflows set
    name = case when p_body ? 'name' then btrim(p_body ->> 'name') else name end,
    active = case when p_body ? 'active' then (p_body ->> 'active')::boolean else active end,
    match = case when p_body ? 'match' then app.workflow_match_normalize(p_body -> 'match') else match end,
    stages = case when p_body ? 'stages' then app.review_stages_normalize(p_body -> 'stages') else stages end,
    auto_schedule_on_approval = case when p_body ? 'autoScheduleOnApproval' then (p_body ->> 'autoScheduleOnApproval')::boolean
                                     else auto_schedule_on_approval end
  where id = w.id returning * into w;
  return app.workflow_json(w);
end
$$;
comment on function api.update_approval_workflow(uuid, jsonb) is 'Serves PATCH /v1/workspaces/{workspaceId}/approval-workflows/{workflowId} (updateApprovalWorkflow_v1): name, active, match, stages, autoScheduleOnApproval; reviews already sent keep the stages they copied. Manager role; 400 VALIDATION_FAILED, 404 NOT_FOUND, 409 NAME_TAKEN.';

create function api.delete_approval_workflow(p_id uuid) returns jsonb
language plpgsql as $$
declare
  w app.approval_workflows;
  v_ids uuid[];
begin
  perform app.require_role('manager');
  w := app.workflow_for(p_id, true);
  v_ids := array(select r.id from app.reviews r where r.workflow_id = w.id and r.status in ('draft', 'active') order by r.created_at limit 100);
  if cardinality(v_ids) > 0 then
    perform app.raise(409, 'WORKFLOW_IN_USE',
      'Open reviews use this workflow; deactivate it instead (PATCH active: false), or delete it once they are closed.',
      jsonb_build_object('workflowId', w.id, 'reviewIds', to_jsonb(v_ids)));
  end if;
  delete from app.approval_workflows where id = w.id;
  return jsonb_build_object('id', w.id, 'deleted', true);
end
$$;
comment on function api.delete_approval_workflow(uuid) is 'Serves DELETE /v1/workspaces/{workspaceId}/approval-workflows/{workflowId} (deleteApprovalWorkflow_v1). Manager role; 404 NOT_FOUND, 409 WORKFLOW_IN_USE while a draft or active review uses it.';

create function api.reorder_approval_workflows(p_body jsonb) returns jsonb
language plpgsql as $$
declare
  v_ids uuid[] := array(select x::uuid from jsonb_array_elements_text(p_body -> 'workflowIds') x);
  v_have uuid[];
begin
  perform app.require_role('manager');
  v_have := array(select id from app.approval_workflows where workspace_id = app.current_workspace_id() order by id for update);
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
$$;
comment on function api.reorder_approval_workflows(jsonb) is 'Serves PUT /v1/workspaces/{workspaceId}/approval-workflows/order (reorderApprovalWorkflows_v1): the routing order, every workflow listed once. Manager role; 400 VALIDATION_FAILED.';

-- ---------------------------------------------------------------------------
-- Resolve, preview, submit.
-- ---------------------------------------------------------------------------
create function app.require_content_ids(p_ids uuid[]) returns void
language plpgsql as $$
declare
  v_missing uuid[];
begin
  v_missing := array(select x from unnest(p_ids) x
                     where not exists (select 1 from app.content_items i where i.id = x
                                       and i.workspace_id = app.current_workspace_id() and i.deleted_at is null));
  if cardinality(v_missing) > 0 then
    perform app.raise(404, 'NOT_FOUND', 'No content with these ids in this workspace.', jsonb_build_object('ids', to_jsonb(v_missing)));
  end if;
end
$$;
comment on function app.require_content_ids(uuid[]) is 'Raises 404 NOT_FOUND listing the ids that are not live content of the workspace.';
grant execute on function app.require_content_ids(uuid[]) to pressroom_api;

create function api.resolve_reviews(p_body jsonb) returns jsonb
language plpgsql stable as $$
declare
  v_ids uuid[];
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
                               and g.workspace_id = app.current_workspace_id() and g.deleted_at is null)) then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('channels', 'integration_not_found',
      'a channel is not a connected channel of this workspace')), 'A channel is not a connected channel of this workspace.');
  end if;
  return coalesce((select jsonb_agg(
      jsonb_build_object('contentId', null, 'rootId', null, 'integrationId', g.id, 'platform', g.platform,
        'contentVersion', null, 'status', null,
        'workflow', case when w.id is not null then jsonb_build_object('id', w.id, 'name', w.name) end,
        'reviewRequired', app.review_policy(app.current_workspace_id()) = 'required', 'approved', false) order by c.n)
    from jsonb_array_elements(coalesce(p_body -> 'channels', '[]')) with ordinality c (ch, n)
    join app.integrations g on g.id = (c.ch ->> 'integrationId')::uuid
    left join lateral app.route_channel(g.id, g.platform,
      array(select x::uuid from jsonb_array_elements_text(coalesce(p_body -> 'tagIds', '[]')) x),
      (p_body ->> 'campaignId')::uuid) w on true), '[]');
end
$$;
comment on function api.resolve_reviews(jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/resolve (resolveReviews_v1): the routing preview, one resolution per saved edition (contentIds) or unsaved channel (channels with the root''s tagIds and campaignId): the workflow or null, whether review is required, and the content version seen. Editor role; 400 VALIDATION_FAILED, 404 NOT_FOUND.';

create function app.review_content_eligibility(p_id uuid) returns jsonb
language sql stable as $$
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
$$;
comment on function app.review_content_eligibility(uuid) is 'Whether an edition can enter a review, and why not: not_found, in_review (with the review), or status_<status> (only draft and scheduled content can).';
grant execute on function app.review_content_eligibility(uuid) to pressroom_api;

create function api.preview_review(p_body jsonb) returns jsonb
language plpgsql stable as $$
begin
  perform app.require_role('editor');
  return coalesce((select jsonb_agg(app.review_content_eligibility(x::uuid) order by n)
                   from jsonb_array_elements_text(p_body -> 'contentIds') with ordinality t (x, n)), '[]');
end
$$;
comment on function api.preview_review(jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/preview (previewReview_v1): for each content id, whether it can enter a review and the reason if not. Editor role.';

-- ---------------------------------------------------------------------------
-- Reviews.
-- ---------------------------------------------------------------------------
create function app.review_new(p_title text, p_message text, p_due_at timestamptz, p_workflow uuid, p_stages jsonb) returns app.reviews
language plpgsql as $$
declare
  r app.reviews;
  w app.approval_workflows;
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
    select * into w from app.approval_workflows where id = p_workflow and workspace_id = app.current_workspace_id();
    if w.id is null or not w.active then
      perform app.raise(409, 'REVIEW_WORKFLOW_UNAVAILABLE', 'This workflow is inactive or gone.', jsonb_build_object('workflowId', p_workflow));
    end if;
  end if;
  if p_stages is not null then
    perform app.raise_field_problems(app.review_stages_problems(p_stages, 'stages'), 'The stages are not valid; see details.fields.');
  end if;
  insert into app.reviews (organization_id, workspace_id, workflow_id, title, message, due_at, stages,
    auto_schedule_on_approval, created_by)
  values (app.current_organization_id(), app.current_workspace_id(), w.id, btrim(p_title), p_message, p_due_at,
    case when p_stages is not null then app.review_stages_normalize(p_stages) end,
    coalesce(w.auto_schedule_on_approval, false), app.current_person_id())
  returning * into r;
  return r;
end
$$;
comment on function app.review_new(text, text, timestamptz, uuid, jsonb) is 'A new draft review with a workflow (active, of this workspace; 409 REVIEW_WORKFLOW_UNAVAILABLE) or custom stages (validated), not both.';
grant execute on function app.review_new(text, text, timestamptz, uuid, jsonb) to pressroom_api;

create function app.review_send(r app.reviews) returns jsonb
language plpgsql as $$
declare
  w app.approval_workflows;
  it app.review_items;
  v_links jsonb;
  v_due timestamptz;
begin
  perform app.require_review_status(r, array['draft']);
  if r.stages is null then
    select * into w from app.approval_workflows where id = r.workflow_id;
    if w.id is null or not w.active then
      perform app.raise(409, 'REVIEW_WORKFLOW_UNAVAILABLE', 'The review''s workflow is inactive or gone; choose another or custom stages.',
        jsonb_build_object('reviewId', r.id, 'workflowId', r.workflow_id));
    end if;
  end if;
  if not exists (select 1 from app.review_items where review_id = r.id and state = 'pending') then
    perform app.raise(409, 'REVIEW_EMPTY', 'A review needs at least one item to be sent.', jsonb_build_object('reviewId', r.id));
  end if;
  update app.reviews set status = 'active', sent_at = now(), sent_by = app.current_person_id(),
    stages = coalesce(stages, w.stages),
    auto_schedule_on_approval = case when stages is null then w.auto_schedule_on_approval else auto_schedule_on_approval end
  where id = r.id returning * into r;
  for it in select * from app.review_items where review_id = r.id and state = 'pending' order by created_at, id loop
    it := app.review_hold_content(it);
    perform app.review_activity_add(r, it.id, 'system', 'sent');
    perform app.review_item_refresh_waiting(it.id);
  end loop;
  v_links := app.review_create_links(r);
  perform app.review_notify_waiting(r, 'review_requested');
  return jsonb_build_object('reviewId', r.id, 'status', r.status, 'sentAt', r.sent_at, 'links', v_links);
end
$$;
comment on function app.review_send(app.reviews) is 'Sends a draft review (draft -> active): copies the workflow''s stages (409 REVIEW_WORKFLOW_UNAVAILABLE when it is inactive or gone), puts every item''s content in review, creates the client links (tokens returned once) and notifies the first stage''s approvers. 409 REVIEW_EMPTY without items.';
grant execute on function app.review_send(app.reviews) to pressroom_api;

create function api.create_review(p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  v_id text;
begin
  perform app.require_role('editor');
  r := app.review_new(p_body ->> 'title', p_body ->> 'message', (p_body ->> 'dueAt')::timestamptz,
                      (p_body ->> 'workflowId')::uuid, p_body -> 'stages');
  for v_id in select x from jsonb_array_elements_text(coalesce(p_body -> 'contentIds', '[]')) x loop
    perform app.review_add_item(r, v_id::uuid);
  end loop;
  return app.review_json(r);
end
$$;
comment on function api.create_review(jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/reviews (createReview_v1): a draft review with a workflow or custom stages and its first items. Editor role; 400 VALIDATION_FAILED, 400 INVALID_CONTENT_STATUS, 409 CONTENT_IN_REVIEW, 409 REVIEW_WORKFLOW_UNAVAILABLE.';

create function api.list_reviews(p_status text) returns jsonb
language plpgsql stable as $$
begin
  perform app.require_role('viewer');
  return coalesce((select jsonb_agg(app.review_json(r) order by r.created_at desc, r.id desc)
                   from (select * from app.reviews r where r.workspace_id = app.current_workspace_id()
                           and (p_status is null or r.status = p_status)
                         order by r.created_at desc, r.id desc limit 200) r), '[]');
end
$$;
comment on function api.list_reviews(text) is 'Serves GET /v1/workspaces/{workspaceId}/reviews (listReviews_v1): the newest 200 reviews, optionally of one status, with stages and items. Viewer role.';

create function api.get_review(p_id uuid) returns jsonb
language plpgsql stable as $$
begin
  perform app.require_role('viewer');
  return app.review_json(app.review_for(p_id));
end
$$;
comment on function api.get_review(uuid) is 'Serves GET /v1/workspaces/{workspaceId}/reviews/{reviewId} (getReview_v1): the review with one view per item. Viewer role; 404 NOT_FOUND.';

create function api.update_review(p_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id, true);
  perform app.require_review_status(r, array['draft', 'active']);
  if p_body ? 'expectedConfigRevision' and (p_body ->> 'expectedConfigRevision')::int <> r.config_revision then
    perform app.raise(409, 'REVIEW_CONFIG_STALE', format('The review is at config revision %s.', r.config_revision),
      jsonb_build_object('reviewId', r.id, 'configRevision', r.config_revision));
  end if;
  if p_body ? 'dueAt' and (p_body ->> 'dueAt')::timestamptz <= now() then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('dueAt', 'in_past', 'a due time must be ahead')),
      'A due time must be ahead.');
  end if;
  update app.reviews set
    title = case when p_body ? 'title' then btrim(p_body ->> 'title') else title end,
    message = case when p_body ? 'message' then p_body ->> 'message' else message end,
    due_at = case when p_body ? 'dueAt' then (p_body ->> 'dueAt')::timestamptz else due_at end,
    config_revision = config_revision + 1
  where id = r.id returning * into r;
  if p_body ? 'dueAt' then
    update app.review_links set expires_at = r.due_at where review_id = r.id and revoked_at is null;
  end if;
  return jsonb_build_object('reviewId', r.id, 'configRevision', r.config_revision, 'review', app.review_json(r));
end
$$;
comment on function api.update_review(uuid, jsonb) is 'Serves PATCH /v1/workspaces/{workspaceId}/reviews/{reviewId} (updateReview_v1): title, message, due time of a draft or active review; answers the new config revision. Editor role; 409 INVALID_REVIEW_STATUS, 409 REVIEW_CONFIG_STALE.';

create function api.replace_review_stages(p_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  it app.review_items;
  v_links jsonb := '[]';
begin
  perform app.require_role('editor');
  r := app.review_for(p_id, true);
  perform app.require_review_status(r, array['draft', 'active']);
  if p_body ? 'expectedConfigRevision' and (p_body ->> 'expectedConfigRevision')::int <> r.config_revision then
    perform app.raise(409, 'REVIEW_CONFIG_STALE', format('The review is at config revision %s.', r.config_revision),
      jsonb_build_object('reviewId', r.id, 'configRevision', r.config_revision));
  end if;
  perform app.raise_field_problems(app.review_stages_problems(p_body -> 'stages', 'stages'), 'The stages are not valid; see details.fields.');
  update app.reviews set stages = app.review_stages_normalize(p_body -> 'stages'), config_revision = config_revision + 1
  where id = r.id returning * into r;
  if r.status = 'active' then
    -- Decisions under the old stages stay in history; pending items start again at the first stage.
    update app.review_decisions set superseded_at = now()
    where review_id = r.id and revoked_at is null and superseded_at is null
      and item_id in (select id from app.review_items where review_id = r.id and state = 'pending' and open);
    for it in select * from app.review_items where review_id = r.id and state = 'pending' and open loop
      update app.review_items set current_stage = 0, stage_opened_at = now() where id = it.id;
      perform app.review_activity_add(r, it.id, 'system', 'stages_replaced', null, jsonb_build_object('configRevision', r.config_revision));
      perform app.review_item_refresh_waiting(it.id);
    end loop;
    v_links := app.review_create_links(r);
  end if;
  return jsonb_build_object('reviewId', r.id, 'configRevision', r.config_revision, 'stages', r.stages, 'links', v_links);
end
$$;
comment on function api.replace_review_stages(uuid, jsonb) is 'Serves PUT /v1/workspaces/{workspaceId}/reviews/{reviewId}/stages (replaceReviewStages_v1): new stages for a draft or active review; in an active one the pending items start again at the first stage, earlier decisions kept in history as superseded, and new client reviewers get links (tokens returned once). Editor role; 400 VALIDATION_FAILED, 409 INVALID_REVIEW_STATUS, 409 REVIEW_CONFIG_STALE.';

create function api.send_review(p_id uuid) returns jsonb
language plpgsql as $$
begin
  perform app.require_role('editor');
  return app.review_send(app.review_for(p_id, true));
end
$$;
comment on function api.send_review(uuid) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/{reviewId}/send (sendReview_v1): draft -> active (app.review_send); the client links'' tokens are in the answer, once. Editor role; 409 INVALID_REVIEW_STATUS, REVIEW_EMPTY, REVIEW_WORKFLOW_UNAVAILABLE.';

create function api.cancel_review(p_id uuid) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id, true);
  perform app.require_review_status(r, array['draft', 'active']);
  r := app.review_end(r.id, 'cancelled');
  return jsonb_build_object('reviewId', r.id, 'status', r.status);
end
$$;
comment on function api.cancel_review(uuid) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/{reviewId}/cancel (cancelReview_v1): draft or active -> cancelled; pending items'' content returns to where it was. Editor role; 409 INVALID_REVIEW_STATUS.';

create function api.add_review_item(p_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  it app.review_items;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id, true);
  perform app.require_review_status(r, array['draft', 'active']);
  it := app.review_add_item(r, (p_body ->> 'contentId')::uuid);
  return app.review_item_json(r, it);
end
$$;
comment on function api.add_review_item(uuid, jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/{reviewId}/items (addReviewItem_v1): adds an edition to a draft or active review. Editor role; 400 INVALID_CONTENT_STATUS, 409 CONTENT_IN_REVIEW, 409 INVALID_REVIEW_STATUS.';

create function api.remove_review_item(p_id uuid, p_item_id uuid) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  it app.review_items;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id, true);
  perform app.require_review_status(r, array['draft', 'active']);
  it := app.review_item_for(r, p_item_id, true);
  if it.state <> 'pending' then
    perform app.raise(409, 'ITEM_ALREADY_DECIDED', format('This review item is %s and stays in the review''s history.', it.state),
      jsonb_build_object('itemId', it.id, 'state', it.state));
  end if;
  update app.review_items set state = 'removed', open = false, waiting_on = '{}' where id = it.id returning * into it;
  if r.status = 'active' then
    perform app.review_release_content(it);
  end if;
  perform app.review_activity_add(r, it.id, 'system', 'removed');
  perform app.review_complete_if_done(r.id);
  return jsonb_build_object('reviewId', r.id, 'itemId', it.id, 'state', it.state);
end
$$;
comment on function api.remove_review_item(uuid, uuid) is 'Serves DELETE /v1/workspaces/{workspaceId}/reviews/{reviewId}/items/{itemId} (removeReviewItem_v1): a pending item leaves the review and its content returns to where it was. Editor role; 404 NOT_FOUND, 409 ITEM_ALREADY_DECIDED, 409 INVALID_REVIEW_STATUS.';

create function api.decide_review_item(p_id uuid, p_item_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id, true);
  return app.review_decide(r, app.review_item_for(r, p_item_id, true), p_body ->> 'decision', p_body ->> 'comment');
end
$$;
comment on function api.decide_review_item(uuid, uuid, jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/{reviewId}/items/{itemId}/decision (decideReviewItem_v1): the caller''s decision (approved or changes_requested, optional comment) at the item''s open stage (app.review_decide). Editor role and approver of the open stage; 403 NOT_AN_APPROVER, 404 NOT_FOUND, 409 INVALID_REVIEW_STATUS, ITEM_ALREADY_DECIDED, ALREADY_DECIDED.';

create function api.decide_review_items(p_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  d jsonb;
  v_out jsonb := '[]';
  v_result jsonb;
  v_state text;
  v_code text;
  v_msg text;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id, true);
  for d in select e from jsonb_array_elements(p_body -> 'decisions') e loop
    begin
      v_result := app.review_decide(r, app.review_item_for(r, (d ->> 'itemId')::uuid, true), d ->> 'decision', d ->> 'comment');
      v_out := v_out || jsonb_build_object('itemId', d ->> 'itemId', 'ok', true, 'result', v_result, 'error', null);
    exception when others then
      get stacked diagnostics v_state = returned_sqlstate, v_code = pg_exception_detail, v_msg = message_text;
      if v_state not like 'PT%' then
        raise;
      end if;
      v_out := v_out || jsonb_build_object('itemId', d ->> 'itemId', 'ok', false, 'result', null,
        'error', jsonb_build_object('status', substr(v_state, 3)::int, 'code', v_code, 'message', v_msg));
    end;
    select * into r from app.reviews where id = r.id;
  end loop;
  return v_out;
end
$$;
comment on function api.decide_review_items(uuid, jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/{reviewId}/items/decisions (decideReviewItems_v1): several decisions, each alone (partial success): one result per decision, with its own error code when refused. Editor role.';

create function api.override_review_item(p_id uuid, p_item_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  it app.review_items;
  d app.review_decisions;
begin
  perform app.require_role('manager');
  r := app.review_for(p_id, true);
  perform app.require_review_status(r, array['active']);
  it := app.review_item_for(r, p_item_id, true);
  if it.state <> 'pending' or not it.open then
    perform app.raise(409, 'ITEM_ALREADY_DECIDED', format('This review item is %s; it takes no more decisions.', it.state),
      jsonb_build_object('itemId', it.id, 'state', it.state));
  end if;
  if btrim(coalesce(p_body ->> 'reason', '')) = '' then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('reason', 'required', 'an override needs a reason')),
      'An override needs a reason.');
  end if;
  insert into app.review_decisions (organization_id, workspace_id, review_id, item_id, stage, stage_name, approver_key,
    user_id, decision, comment, override, reason)
  values (r.organization_id, r.workspace_id, r.id, it.id, it.current_stage, r.stages -> it.current_stage ->> 'name',
    'override:' || gen_random_uuid(), app.current_person_id(), p_body ->> 'decision', p_body ->> 'comment', true, btrim(p_body ->> 'reason'))
  returning * into d;
  perform app.review_activity_add(r, it.id, 'decision', 'override_' || d.decision, d.reason,
    jsonb_build_object('decisionId', d.id, 'stage', d.stage, 'stageName', d.stage_name, 'override', true));
  perform app.review_advance(r.id, it.id);
  return jsonb_build_object('decisionId', d.id);
end
$$;
comment on function api.override_review_item(uuid, uuid, jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/{reviewId}/items/{itemId}/override (overrideReviewItem_v1): a manager decides the item''s open stage (reason required); the engine advances. Manager role; 400 VALIDATION_FAILED, 409 INVALID_REVIEW_STATUS, ITEM_ALREADY_DECIDED.';

create function app.review_revoke(r app.reviews, it app.review_items) returns jsonb
language plpgsql as $$
declare
  d app.review_decisions;
begin
  perform app.require_review_status(r, array['active']);
  select * into d from app.review_decisions
  where item_id = it.id and stage = it.current_stage and approver_key = app.current_approver_key()
    and revoked_at is null and superseded_at is null and it.state = 'pending' and it.open
  for update;
  if d.id is null then
    perform app.raise(409, 'NOTHING_TO_REVOKE', 'You have no decision on this item''s open stage to take back.',
      jsonb_build_object('itemId', it.id, 'stage', it.current_stage));
  end if;
  update app.review_decisions set revoked_at = now() where id = d.id;
  perform app.review_activity_add(r, it.id, 'decision', 'revoked', null, jsonb_build_object('decisionId', d.id, 'stage', d.stage));
  perform app.review_item_refresh_waiting(it.id);
  return jsonb_build_object('decisionId', d.id);
end
$$;
comment on function app.review_revoke(app.reviews, app.review_items) is 'Takes back the caller''s live decision on the item''s open stage (409 NOTHING_TO_REVOKE when there is none: a closed stage cannot be revoked).';
grant execute on function app.review_revoke(app.reviews, app.review_items) to pressroom_api, pressroom_definer;

create function api.revoke_review_decision(p_id uuid, p_item_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id, true);
  return app.review_revoke(r, app.review_item_for(r, p_item_id, true));
end
$$;
comment on function api.revoke_review_decision(uuid, uuid, jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/{reviewId}/items/{itemId}/revoke (revokeReviewDecision_v1): takes back one''s own decision while the stage is open. Editor role; 409 NOTHING_TO_REVOKE, 409 INVALID_REVIEW_STATUS.';

create function api.comment_review_item(p_id uuid, p_item_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  v jsonb;
  a app.review_activity;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id);
  v := app.review_comment(r, app.review_item_for(r, p_item_id),
    p_body ->> 'body', array(select x::uuid from jsonb_array_elements_text(coalesce(p_body -> 'mentions', '[]')) x));
  if jsonb_array_length(coalesce(p_body -> 'attachmentIds', '[]')) > 0 then
    -- Completed comment attachments of this item (10d-review-attachments.sql).
    perform app.review_attach_to_comment(p_item_id, (v ->> 'id')::uuid,
      array(select x::uuid from jsonb_array_elements_text(p_body -> 'attachmentIds') x));
    select * into a from app.review_activity where id = (v ->> 'id')::uuid;
    v := app.review_activity_json(a);
  end if;
  return v;
end
$$;
comment on function api.comment_review_item(uuid, uuid, jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/{reviewId}/items/{itemId}/comments (commentReviewItem_v1): a comment with @mentions of members (each notified) and completed attachments of the item. Editor role; 400 VALIDATION_FAILED, 404 NOT_FOUND.';

create function api.list_review_item_activity(p_id uuid, p_item_id uuid) returns jsonb
language plpgsql stable as $$
declare
  r app.reviews;
begin
  perform app.require_role('viewer');
  r := app.review_for(p_id);
  return app.review_item_activity(app.review_item_for(r, p_item_id));
end
$$;
comment on function api.list_review_item_activity(uuid, uuid) is 'Serves GET /v1/workspaces/{workspaceId}/reviews/{reviewId}/items/{itemId}/activity (listReviewItemActivity_v1): decisions, comments and system events in order, with reactions. Viewer role; 404 NOT_FOUND.';

create function api.add_review_reaction(p_id uuid, p_item_id uuid, p_activity_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id);
  return app.review_react(r, app.review_item_for(r, p_item_id), p_activity_id, p_body ->> 'emoji', true);
end
$$;
comment on function api.add_review_reaction(uuid, uuid, uuid, jsonb) is 'Serves POST .../reviews/{reviewId}/items/{itemId}/activity/{activityId}/reactions (addReviewReaction_v1): the caller''s one emoji on the entry (replaces a previous one). Editor role; 404 NOT_FOUND.';

create function api.remove_review_reaction(p_id uuid, p_item_id uuid, p_activity_id uuid, p_emoji text) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id);
  return app.review_react(r, app.review_item_for(r, p_item_id), p_activity_id, p_emoji, false);
end
$$;
comment on function api.remove_review_reaction(uuid, uuid, uuid, text) is 'Serves DELETE .../reviews/{reviewId}/items/{itemId}/activity/{activityId}/reactions/{emoji} (removeReviewReaction_v1). Editor role; 404 NOT_FOUND.';

create function api.remind_review(p_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  v_waiting text[];
  v_recent text[];
  v_interval int := app.setting_int('review_remind_interval_seconds');
  v_count int;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id, true);
  perform app.require_review_status(r, array['active']);
  v_waiting := array(select distinct k from app.review_items it, unnest(it.waiting_on) k
                     where it.review_id = r.id and it.state = 'pending' and it.open order by k);
  if cardinality(v_waiting) = 0 then
    perform app.raise(409, 'NOTHING_TO_REMIND', 'No approver is pending on this review.', jsonb_build_object('reviewId', r.id));
  end if;
  v_recent := array(select m.approver_key from app.review_reminders m
                    where m.review_id = r.id and m.approver_key = any (v_waiting)
                      and m.reminded_at > now() - make_interval(secs => v_interval) order by 1);
  if cardinality(v_recent) > 0 then
    perform app.raise(409, 'REMIND_TOO_SOON',
      format('An approver of this review was reminded less than %s seconds ago.', v_interval),
      jsonb_build_object('reviewId', r.id, 'approvers', to_jsonb(v_recent), 'intervalSeconds', v_interval,
        'retryAfter', (select ceil(extract(epoch from (max(m.reminded_at) + make_interval(secs => v_interval) - now())))::int
                       from app.review_reminders m where m.review_id = r.id and m.approver_key = any (v_recent))));
  end if;
  insert into app.review_reminders (review_id, approver_key, organization_id, workspace_id)
  select r.id, k, r.organization_id, r.workspace_id from unnest(v_waiting) k
  on conflict (review_id, approver_key) do update set reminded_at = now();
  v_count := app.review_notify_waiting(r, 'review_reminder', jsonb_build_object('message', p_body ->> 'message'));
  perform app.review_activity_add(r, null, 'system', 'reminded', p_body ->> 'message', jsonb_build_object('approvers', to_jsonb(v_waiting)));
  return jsonb_build_object('reviewId', r.id, 'reminded', cardinality(v_waiting), 'notifications', v_count);
end
$$;
comment on function api.remind_review(uuid, jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/{reviewId}/remind (remindReview_v1): a reminder to every pending approver of the open stages, into their notifications; at most one per approver per review_remind_interval_seconds (409 REMIND_TOO_SOON). Editor role; 409 INVALID_REVIEW_STATUS, NOTHING_TO_REMIND.';

-- ---------------------------------------------------------------------------
-- Inbox, summary, history.
-- ---------------------------------------------------------------------------
create function app.review_urgency(p_due timestamptz, p_tz text) returns text
language sql stable as $$
  select case
    when p_due is null then 'later'
    when p_due < now() then 'overdue'
    when p_due < (date_trunc('day', now() at time zone p_tz) + interval '1 day') at time zone p_tz then 'today'
    when p_due < now() + interval '7 days' then 'week'
    else 'later' end
$$;
comment on function app.review_urgency(timestamptz, text) is 'An inbox item''s urgency from its due time: overdue, today (before midnight in the workspace''s zone), week (within 7 days), later (or no due time).';
grant execute on function app.review_urgency(timestamptz, text) to pressroom_api, pressroom_definer;

-- The items waiting on the caller (index review_items_waiting_on_idx). As
-- pressroom_definer, scoped here to the request's organization and workspace:
-- under row-level security a non-leakproof operator such as @> cannot use an
-- index ahead of the policies, and the inbox would read every item of the
-- workspace. Only pressroom_api runs it, from api functions that checked the
-- role and pass app.current_approver_key().
create function app.review_inbox_rows(p_key text)
returns table (item app.review_items, review app.reviews, platform text, due_at timestamptz, urgency text)
language sql stable security definer set search_path = pg_catalog, app as $$
  select it, r, g.platform, app.review_item_due_at(r, it), app.review_urgency(app.review_item_due_at(r, it), w.timezone)
  from app.review_items it
  join app.reviews r on r.id = it.review_id and r.status = 'active'
  join app.content_items i on i.id = it.content_id
  join app.integrations g on g.id = i.integration_id
  join app.workspaces w on w.id = it.workspace_id
  where it.workspace_id = app.current_workspace_id() and it.organization_id = app.current_organization_id()
    and it.waiting_on @> array[p_key] and cardinality(it.waiting_on) > 0
$$;
alter function app.review_inbox_rows(text) owner to pressroom_definer;
comment on function app.review_inbox_rows(text) is 'The pending items of active reviews of the request''s workspace that wait on an approver, with platform, due time and urgency (definer-owned so the GIN index on waiting_on serves it; scoped to the request''s organization and workspace).';
grant execute on function app.review_inbox_rows(text) to pressroom_api;

create function api.review_inbox(p_platform text, p_urgency text) returns jsonb
language plpgsql stable as $$
declare
  v_key text := app.current_approver_key();
begin
  perform app.require_role('viewer');
  return coalesce((select jsonb_agg(app.review_item_json(x.review, x.item)
                      || jsonb_build_object('reviewTitle', (x.review).title, 'urgency', x.urgency)
                    order by x.due_at nulls last, (x.item).created_at, (x.item).id)
                   from app.review_inbox_rows(v_key) x
                   where (p_platform = 'all' or x.platform = p_platform) and (p_urgency = 'all' or x.urgency = p_urgency)), '[]');
end
$$;
comment on function api.review_inbox(text, text) is 'Serves GET /v1/workspaces/{workspaceId}/reviews/inbox (reviewInbox_v1): the items waiting on the caller, by platform (or all) and urgency (overdue, today, week, later or all), soonest due first. Viewer role.';

create function api.review_summary() returns jsonb
language plpgsql stable as $$
declare
  v_key text := app.current_approver_key();
begin
  perform app.require_role('viewer');
  return (select jsonb_build_object('total', count(*),
            'overdue', count(*) filter (where urgency = 'overdue'), 'today', count(*) filter (where urgency = 'today'),
            'week', count(*) filter (where urgency = 'week'), 'later', count(*) filter (where urgency = 'later'))
          from app.review_inbox_rows(v_key));
end
$$;
comment on function api.review_summary() is 'Serves GET /v1/workspaces/{workspaceId}/reviews/summary (reviewSummary_v1): the caller''s inbox counted by urgency. Viewer role.';

create function api.review_history(p_limit int, p_offset bigint) returns jsonb
language plpgsql stable as $$
declare
  v_total bigint;
begin
  perform app.require_role('viewer');
  select count(*) into v_total from app.reviews where workspace_id = app.current_workspace_id()
    and status in ('completed', 'cancelled', 'expired');
  return jsonb_build_object('items', coalesce((select jsonb_agg(app.review_json(r, false) order by r.completed_at desc, r.id desc)
      from (select * from app.reviews r where r.workspace_id = app.current_workspace_id() and r.status in ('completed', 'cancelled', 'expired')
            order by r.completed_at desc, r.id desc limit p_limit offset p_offset) r), '[]'),
    'meta', jsonb_build_object('limit', p_limit, 'offset', p_offset, 'total', v_total,
      'hasMore', p_offset + p_limit < v_total));
end
$$;
comment on function api.review_history(int, bigint) is 'Serves GET /v1/workspaces/{workspaceId}/reviews/history (reviewHistory_v1): completed, cancelled and expired reviews, most recently closed first, paginated. Viewer role.';

create function api.review_history_content(p_content_id uuid) returns jsonb
language plpgsql stable as $$
begin
  perform app.require_role('viewer');
  if not exists (select 1 from app.content_items where id = p_content_id and workspace_id = app.current_workspace_id()) then
    perform app.raise_not_found('content', p_content_id);
  end if;
  return coalesce((select jsonb_agg(app.review_item_json(r, it)
                      || jsonb_build_object('reviewTitle', r.title, 'reviewStatus', r.status) order by it.created_at desc, it.id desc)
                   from app.review_items it join app.reviews r on r.id = it.review_id
                   where it.content_id = p_content_id), '[]');
end
$$;
comment on function api.review_history_content(uuid) is 'Serves GET /v1/workspaces/{workspaceId}/reviews/history/content/{contentId} (reviewHistoryContent_v1): every review item of one edition, newest first, with its decisions. Viewer role; 404 NOT_FOUND.';

create function api.review_history_review(p_id uuid) returns jsonb
language plpgsql stable as $$
declare
  r app.reviews;
begin
  perform app.require_role('viewer');
  r := app.review_for(p_id);
  return app.review_json(r) || jsonb_build_object('activity',
    coalesce((select jsonb_agg(app.review_activity_json(a) order by a.created_at, a.id)
              from app.review_activity a where a.review_id = r.id), '[]'));
end
$$;
comment on function api.review_history_review(uuid) is 'Serves GET /v1/workspaces/{workspaceId}/reviews/history/{reviewId} (reviewHistoryReview_v1): the review, one view per item, and its whole activity. Viewer role; 404 NOT_FOUND.';

-- ---------------------------------------------------------------------------
-- Submit: resolve, group and send in one call, replayable by requestId.
-- ---------------------------------------------------------------------------
create function api.submit_reviews(p_body jsonb) returns jsonb
language plpgsql as $$
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
         join app.content_roots cr on cr.id = i.root_id
         where w.id = (v_item -> 'choice' ->> 'workflowId')::uuid and w.workspace_id = app.current_workspace_id() and w.active
           and app.workflow_matches(w.match, i.integration_id, v_res ->> 'platform',
                 array(select t.tag_id from app.content_root_tags t where t.root_id = cr.id), cr.campaign_id)) then
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
$$;
comment on function api.submit_reviews(jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/submit (submitReviews_v1): each item names its choice (workflow, custom stages, none) and action; workflow and custom items are grouped (one review per group, sent at once), none items run their action. All or nothing: 409 REVIEW_REQUIRED (details.resolutions), REVIEW_WORKFLOW_UNAVAILABLE, REVIEW_SUBMIT_STALE. A requestId replays the stored results. Editor role.';

select app.harden_api_functions();
