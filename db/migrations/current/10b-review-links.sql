-- Reviews, part 3: client reviewer links (their gate and the functions a
-- link may call), the members' notifications feed, the audit actor kind
-- review_link, and the content functions that refuse content in review.

-- ---------------------------------------------------------------------------
-- Audit: calls made with a review link are audited with actor kind review_link.
-- ---------------------------------------------------------------------------
alter table audit.api_calls drop constraint api_calls_actor_kind_check;
alter table audit.api_calls add constraint api_calls_actor_kind_check
  check (actor_kind in ('user', 'api_key', 'anonymous', 'review_link'));

-- ---------------------------------------------------------------------------
-- The gate of the client-review routes (x-auth: reviewLink in openapi.yaml).
-- ---------------------------------------------------------------------------
create function api.gate_review_link(p_token_hash bytea, p_class text, p_client text) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_window timestamptz := date_trunc('minute', now());
  v_reset int := greatest(1, ceil(extract(epoch from (date_trunc('minute', now()) + interval '1 minute' - clock_timestamp())))::int);
  v_failures int;
  v_link app.review_links;
  v_org app.organizations;
  v_principal jsonb;
  v_limit int := app.setting_int('rate_limit_' || p_class);
  v_rate jsonb;
begin
  select failures into v_failures from app.auth_failures where client = p_client and window_start = v_window;
  if coalesce(v_failures, 0) >= app.setting_int('auth_failure_limit') then
    update app.auth_failures set failures = failures + 1 where client = p_client and window_start = v_window;
    return jsonb_build_object('audit', false, 'retryAfter', v_reset,
      'error', jsonb_build_object('status', 429, 'code', 'AUTH_THROTTLED',
        'message', 'Too many failed credentials from this address; retry after the time in Retry-After.',
        'details', jsonb_build_object('retryAfter', v_reset)));
  end if;
  select * into v_link from app.review_links where token_hash = p_token_hash;
  if p_token_hash is null or v_link.id is null or v_link.revoked_at is not null
     or (v_link.expires_at is not null and v_link.expires_at <= now()) then
    perform app.flush_auth_failures(p_client);
    insert into app.auth_failures as f (client, window_start, failures, audited)
    values (p_client, v_window, 1, 1)
    on conflict (client, window_start) do update
      set failures = f.failures + 1,
          audited = f.audited + case when f.failures < app.setting_int('auth_failure_audit') then 1 else 0 end
    returning failures into v_failures;
    return jsonb_build_object('audit', v_failures <= app.setting_int('auth_failure_audit'),
      'error', jsonb_build_object('status', 401, 'code', 'UNAUTHENTICATED',
        'message', case when v_link.id is null then 'Send a review link token: Authorization: Bearer <review link token>.'
                        else 'This review link has ended (the review closed or expired).' end));
  end if;
  select * into v_org from app.organizations where id = v_link.organization_id;
  v_principal := jsonb_build_object('actorKind', 'review_link', 'reviewLinkId', v_link.id,
    'organizationId', v_link.organization_id, 'plan', v_org.plan);
  if (v_org.plan = 'trial' and v_org.trial_ends_at <= now()) or app.plan_rank(v_org.plan) < app.plan_rank('standard') then
    return jsonb_build_object('principal', v_principal, 'error', jsonb_build_object('status', 401, 'code', 'PLAN_REQUIRED',
      'message', format('Client review needs the standard plan or higher; this organization is on %s%s.', v_org.plan,
                        case when v_org.plan = 'trial' then ' (ended)' else '' end),
      'details', jsonb_build_object('plan', v_org.plan, 'requiredPlan', 'standard')));
  end if;
  v_rate := app.rate_limit_hit('review_link:' || v_link.id, p_class, v_limit);
  if not (v_rate ->> 'allowed')::boolean then
    return jsonb_build_object('principal', v_principal, 'workspaceId', v_link.workspace_id, 'rate', v_rate,
      'error', jsonb_build_object('status', 429, 'code', 'RATE_LIMITED',
        'message', format('The %s limit of %s requests per minute for this link is used up; retry after %s s.', p_class, v_limit, v_rate ->> 'reset'),
        'details', jsonb_build_object('class', p_class, 'limit', v_limit, 'retryAfter', (v_rate ->> 'reset')::int)));
  end if;
  return jsonb_build_object('principal', v_principal, 'workspaceId', v_link.workspace_id, 'workspaceRole', null, 'rate', v_rate);
end
$$;
alter function api.gate_review_link(bytea, text, text) owner to pressroom_definer;
comment on function api.gate_review_link(bytea, text, text) is 'The gate of the client-review routes (server/http/pipeline.ts, operations with x-auth: reviewLink), as pressroom_app: the review link of the bearer token (SHA-256), live (not revoked, not expired), of an organization on the standard plan or higher (401 PLAN_REQUIRED), the rate limit per link, and the failed-credential guard of api.gate_guarded. Returns the principal (actorKind review_link) and the link''s workspace.';
revoke all on function api.gate_review_link(bytea, text, text) from public;
grant execute on function api.gate_review_link(bytea, text, text) to pressroom_app;

-- ---------------------------------------------------------------------------
-- What a link may do: its own review, nothing else.
-- ---------------------------------------------------------------------------
create function app.review_link_context() returns app.review_links
language plpgsql stable security definer set search_path = pg_catalog, app as $$
declare
  l app.review_links;
begin
  if app.current_actor_kind() is distinct from 'review_link' then
    perform app.raise(403, 'REVIEW_LINK_REQUIRED', 'This operation is for client reviewers with a review link.');
  end if;
  select * into l from app.review_links where id = app.current_review_link_id()
    and workspace_id = app.current_workspace_id() and revoked_at is null and (expires_at is null or expires_at > now());
  if l.id is null then
    perform app.raise(401, 'UNAUTHENTICATED', 'This review link has ended.');
  end if;
  return l;
end
$$;
alter function app.review_link_context() owner to pressroom_definer;
comment on function app.review_link_context() is 'The live review link of a client reviewer''s request (403 REVIEW_LINK_REQUIRED for any other caller, 401 when it has ended).';
grant execute on function app.review_link_context() to pressroom_definer;

create function app.review_link_item(l app.review_links, p_item_id uuid) returns app.review_items
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  it app.review_items;
begin
  select * into it from app.review_items where id = p_item_id and review_id = l.review_id and state <> 'removed' for update;
  if it.id is null then
    perform app.raise_not_found('review item', p_item_id);
  end if;
  return it;
end
$$;
alter function app.review_link_item(app.review_links, uuid) owner to pressroom_definer;
comment on function app.review_link_item(app.review_links, uuid) is 'An item of the link''s review (never one of another review), or 404 NOT_FOUND.';
grant execute on function app.review_link_item(app.review_links, uuid) to pressroom_definer;

create function api.review_link_get() returns jsonb
language plpgsql stable security definer set search_path = pg_catalog, app as $$
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
        'caption', coalesce(i.caption, cr.caption), 'thread', i.thread,
        'scheduledAt', coalesce(i.scheduled_at, i.intended_publish_at),
        'media', coalesce((select jsonb_agg(jsonb_build_object('id', m.id, 'type', m.type, 'contentType', m.content_type,
                              'filename', m.filename, 'storageKey', m.storage_key) order by x.n)
                           from unnest(app.content_item_media_ids(i.id, i.root_id, i.own_media)) with ordinality x (id, n)
                           join app.media_items m on m.id = x.id), '[]')) order by it.created_at, it.id)
      from app.review_items it
      join app.content_items i on i.id = it.content_id
      join app.content_roots cr on cr.id = i.root_id
      join app.integrations g on g.id = i.integration_id
      where it.review_id = r.id and it.state <> 'removed'), '[]'));
end
$$;
alter function api.review_link_get() owner to pressroom_definer;
comment on function api.review_link_get() is 'Serves GET /v1/review-link (getReviewLink_v1): the link''s review and its items as a client sees them (platform, caption, thread, scheduled time, media; the route signs media view URLs and drops the storage keys). Review link only.';
grant execute on function api.review_link_get() to pressroom_request;

create function api.review_link_decide(p_item_id uuid, p_body jsonb) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  l app.review_links := app.review_link_context();
  r app.reviews;
begin
  select * into r from app.reviews where id = l.review_id for update;
  return app.review_decide(r, app.review_link_item(l, p_item_id), p_body ->> 'decision', p_body ->> 'comment');
end
$$;
alter function api.review_link_decide(uuid, jsonb) owner to pressroom_definer;
comment on function api.review_link_decide(uuid, jsonb) is 'Serves POST /v1/review-link/items/{itemId}/decision (decideReviewLinkItem_v1): the client''s decision at the item''s open stage, as app.review_decide (403 NOT_AN_APPROVER when the client is not an approver of that stage). Review link only.';
grant execute on function api.review_link_decide(uuid, jsonb) to pressroom_request;

create function api.review_link_comment(p_item_id uuid, p_body jsonb) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  l app.review_links := app.review_link_context();
  r app.reviews;
begin
  select * into r from app.reviews where id = l.review_id;
  return app.review_comment(r, app.review_link_item(l, p_item_id), p_body ->> 'body', '{}');
end
$$;
alter function api.review_link_comment(uuid, jsonb) owner to pressroom_definer;
comment on function api.review_link_comment(uuid, jsonb) is 'Serves POST /v1/review-link/items/{itemId}/comments (commentReviewLinkItem_v1): a client''s comment on an item of its review. Review link only.';
grant execute on function api.review_link_comment(uuid, jsonb) to pressroom_request;

create function api.review_link_activity(p_item_id uuid) returns jsonb
language plpgsql stable security definer set search_path = pg_catalog, app as $$
declare
  l app.review_links := app.review_link_context();
begin
  return app.review_item_activity(app.review_link_item(l, p_item_id));
end
$$;
alter function api.review_link_activity(uuid) owner to pressroom_definer;
comment on function api.review_link_activity(uuid) is 'Serves GET /v1/review-link/items/{itemId}/activity (listReviewLinkItemActivity_v1). Review link only.';
grant execute on function api.review_link_activity(uuid) to pressroom_request;

create function api.review_link_react(p_item_id uuid, p_activity_id uuid, p_emoji text, p_add boolean) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  l app.review_links := app.review_link_context();
  r app.reviews;
begin
  select * into r from app.reviews where id = l.review_id;
  return app.review_react(r, app.review_link_item(l, p_item_id), p_activity_id, p_emoji, p_add);
end
$$;
alter function api.review_link_react(uuid, uuid, text, boolean) owner to pressroom_definer;
comment on function api.review_link_react(uuid, uuid, text, boolean) is 'Serves POST and DELETE /v1/review-link/items/{itemId}/activity/{activityId}/reactions[/{emoji}] (addReviewLinkReaction_v1, removeReviewLinkReaction_v1). Review link only.';
grant execute on function api.review_link_react(uuid, uuid, text, boolean) to pressroom_request;

-- ---------------------------------------------------------------------------
-- Notifications feeds (cursor: the id of the last entry of the previous page).
-- ---------------------------------------------------------------------------
create function app.notifications_page(p_user uuid, p_link uuid, p_limit int, p_cursor uuid, p_unread boolean) returns jsonb
language plpgsql stable security definer set search_path = pg_catalog, app as $$
declare
  v_after_at timestamptz;
  v_after_id uuid;
  v_rows jsonb;
  v_next uuid;
  v_count int;
begin
  if p_cursor is not null then
    select created_at, id into v_after_at, v_after_id from app.notifications
    where id = p_cursor and (user_id = p_user or review_link_id = p_link);
    if v_after_id is null then
      perform app.raise_field_problems(jsonb_build_array(app.field_problem('cursor', 'invalid', 'not a cursor of this feed')),
        'The cursor is not one of this feed.');
    end if;
  end if;
  with page as (
    select n.* from app.notifications n
    where (n.user_id = p_user or n.review_link_id = p_link)
      and (not p_unread or n.read_at is null)
      and (v_after_id is null or (n.created_at, n.id) < (v_after_at, v_after_id))
    order by n.created_at desc, n.id desc
    limit p_limit + 1)
  select jsonb_agg(jsonb_build_object('id', p.id, 'kind', p.kind, 'workspaceId', p.workspace_id, 'reviewId', p.review_id,
           'itemId', p.item_id, 'data', p.data, 'read', p.read_at is not null, 'readAt', p.read_at, 'createdAt', p.created_at)
           order by p.created_at desc, p.id desc) filter (where p.rn <= p_limit),
         (array_agg(p.id order by p.created_at desc, p.id desc) filter (where p.rn = p_limit))[1],
         count(*)
  into v_rows, v_next, v_count
  from (select page.*, row_number() over (order by created_at desc, id desc) as rn from page) p;
  return jsonb_build_object('items', coalesce(v_rows, '[]'),
    'meta', jsonb_build_object('limit', p_limit, 'nextCursor', case when v_count > p_limit then v_next end,
      'unread', (select count(*) from app.notifications n where (n.user_id = p_user or n.review_link_id = p_link) and n.read_at is null)));
end
$$;
alter function app.notifications_page(uuid, uuid, int, uuid, boolean) owner to pressroom_definer;
comment on function app.notifications_page(uuid, uuid, int, uuid, boolean) is 'A page of one person''s notifications (a user''s or a review link''s), newest first, after a cursor (the last id of the previous page), optionally unread only; meta has nextCursor and the unread count.';
grant execute on function app.notifications_page(uuid, uuid, int, uuid, boolean) to pressroom_definer;

create function api.list_notifications(p_limit int, p_cursor uuid, p_unread boolean) returns jsonb
language plpgsql stable security definer set search_path = pg_catalog, app as $$
begin
  perform app.require_session();
  return app.notifications_page(app.current_user_id(), null, p_limit, p_cursor, p_unread);
end
$$;
alter function api.list_notifications(int, uuid, boolean) owner to pressroom_definer;
comment on function api.list_notifications(int, uuid, boolean) is 'Serves GET /v1/me/notifications (listNotifications_v1): the signed-in user''s notifications (reminders, review requests, mentions), cursor-paginated, with read state. Session only (403 SESSION_REQUIRED).';
grant execute on function api.list_notifications(int, uuid, boolean) to pressroom_request;

create function api.mark_notifications_read(p_body jsonb) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_count int;
begin
  perform app.require_session();
  update app.notifications set read_at = now()
  where user_id = app.current_user_id() and read_at is null
    and (coalesce((p_body ->> 'all')::boolean, false)
         or id in (select x::uuid from jsonb_array_elements_text(coalesce(p_body -> 'ids', '[]')) x));
  get diagnostics v_count = row_count;
  return jsonb_build_object('marked', v_count);
end
$$;
alter function api.mark_notifications_read(jsonb) owner to pressroom_definer;
comment on function api.mark_notifications_read(jsonb) is 'Serves POST /v1/me/notifications/read (markNotificationsRead_v1): marks the listed (or all) of the signed-in user''s notifications read. Session only.';
grant execute on function api.mark_notifications_read(jsonb) to pressroom_request;

create function api.review_link_notifications(p_limit int, p_cursor uuid, p_unread boolean) returns jsonb
language plpgsql stable security definer set search_path = pg_catalog, app as $$
declare
  l app.review_links := app.review_link_context();
begin
  return app.notifications_page(null, l.id, p_limit, p_cursor, p_unread);
end
$$;
alter function api.review_link_notifications(int, uuid, boolean) owner to pressroom_definer;
comment on function api.review_link_notifications(int, uuid, boolean) is 'Serves GET /v1/review-link/notifications (listReviewLinkNotifications_v1): the client''s feed (reminders, review requests). Review link only.';
grant execute on function api.review_link_notifications(int, uuid, boolean) to pressroom_request;

-- ---------------------------------------------------------------------------
-- Content functions: content in review is refused by schedule and publish
-- with 409 REVIEW_IN_PROGRESS (before the status check, which answers 400 to
-- edits), and editing rejected content returns it to draft. Each is the
-- function of db/schema.sql with the lines marked "reviews" added.
-- ---------------------------------------------------------------------------
create or replace function api.schedule_content(p_id uuid, p_scheduled_at timestamp with time zone)
returns jsonb
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  v app.content_items;
begin
  perform app.require_role('editor');
  v := app.content_item_for_update(p_id);
  perform app.assert_not_in_review(v);  -- reviews: 409 REVIEW_IN_PROGRESS
  perform app.require_content_status(v, array['draft', 'scheduled']);
  if p_scheduled_at < now() then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('scheduledAt', 'in_past', 'a time in the past cannot be scheduled')),
      'A time in the past cannot be scheduled.');
  end if;
  perform app.defer_content_checks();
  update app.content_items set status = 'scheduled', scheduled_at = p_scheduled_at
  where id = v.id returning * into v;
  perform app.assert_publishable(array[v.id], array['']);
  perform app.undefer_content_checks();
  return (select app.content_mutation_json(v.root_id, array[v.id]));
end
$$;
comment on function api.schedule_content(uuid,timestamp with time zone) is 'Serves PATCH /v1/workspaces/{workspaceId}/content/{id}/schedule (scheduleContent_v1). Schedules or reschedules a draft or scheduled edition at a future time, validated against its platform''s rules; the publish job follows in the same transaction. Requires the editor role; 400 INVALID_CONTENT_STATUS, 400 VALIDATION_FAILED (time in the past, platform rules), 409 PUBLISHING_IN_PROGRESS, 409 PUBLISHING_AWAITS_CONFIRMATION, 409 REVIEW_IN_PROGRESS (content in review), 409 REVIEW_REQUIRED (the workspace requires an approved review).';

create or replace function api.publish_content(p_id uuid)
returns jsonb
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  v app.content_items;
  s app.publishing_states;
begin
  perform app.require_role('editor');
  v := app.content_item_for_update(p_id);
  perform app.assert_not_in_review(v);  -- reviews: 409 REVIEW_IN_PROGRESS
  perform app.require_content_status(v, array['draft', 'scheduled']);
  select * into s from app.publishing_states where content_item_id = v.id;
  if v.status = 'scheduled' and s.state = 'awaiting_confirmation' and s.job_id is not distinct from v.publish_job_id then
    perform app.raise(409, 'PUBLISHING_AWAITS_CONFIRMATION',
      'The last attempt may have published this content; resolve its outcome first (resolve-publishing-result).',
      jsonb_build_object('contentId', v.id));
  end if;
  perform app.defer_content_checks();
  update app.content_items set status = 'scheduled', scheduled_at = now() where id = v.id returning * into v;
  perform app.assert_publishable(array[v.id], array['']);
  perform app.undefer_content_checks();
  perform app.publishing_reset(v.id);
  return (select app.content_mutation_json(v.root_id, array[v.id]));
end
$$;
comment on function api.publish_content(uuid) is 'Serves POST /v1/workspaces/{workspaceId}/content/{id}/publish (publishContent_v1). Moves a draft or scheduled edition to scheduled now, validated against its platform''s rules, and starts a new publishing run. Requires the editor role; 404 NOT_FOUND, 400 INVALID_CONTENT_STATUS, 400 VALIDATION_FAILED, 409 PUBLISHING_AWAITS_CONFIRMATION, 409 PUBLISHING_IN_PROGRESS, 409 REVIEW_IN_PROGRESS, 409 REVIEW_REQUIRED.';

create or replace function api.update_content(p_id uuid, p_body jsonb)
returns jsonb
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  v app.content_items;
  v_platform text;
begin
  perform app.require_role('editor');
  v := app.content_item_for_update(p_id);
  -- reviews: editing an edition a review rejected returns it to draft.
  if v.status = 'rejected' then
    perform app.review_move_content(v.id, 'draft');
    v := app.content_item_for_update(p_id);
  end if;
  perform app.require_content_status(v, array['draft', 'scheduled']);
  select platform into v_platform from app.integrations where id = v.integration_id;
  perform app.raise_field_problems(app.content_payload_problems(v_platform, p_body, ''), 'The request is not valid; see details.fields.');
  perform app.defer_content_checks();
  update app.content_items set
    caption = case when p_body ? 'caption' then p_body ->> 'caption' else caption end,
    thread = case when p_body ? 'thread' then app.content_normalize_thread(p_body -> 'thread') else thread end,
    settings = case when p_body ? 'settings' then coalesce(nullif(p_body -> 'settings', 'null'), '{}') else settings end,
    own_media = case when p_body ? 'mediaIds' then jsonb_typeof(p_body -> 'mediaIds') = 'array' else own_media end
  where id = v.id
  returning * into v;
  if p_body ? 'mediaIds' then
    perform app.replace_item_media(v, app.jsonb_uuids(p_body -> 'mediaIds'));
  end if;
  perform app.assert_publishable(array[v.id], array['']);
  perform app.undefer_content_checks();
  return (select app.content_mutation_json(v.root_id, array[v.id]));
end
$$;
comment on function api.update_content(uuid,jsonb) is 'Serves PATCH /v1/workspaces/{workspaceId}/content/{id} (updateContent_v1). Changes a draft or scheduled edition''s caption, thread, settings or own media, re-validating scheduled content; an edition a review rejected returns to draft when edited. Requires the editor role; 404 NOT_FOUND, 400 INVALID_CONTENT_STATUS (also for content in review), 400 VALIDATION_FAILED, 409 MEDIA_IN_BIN.';

select app.harden_api_functions();
