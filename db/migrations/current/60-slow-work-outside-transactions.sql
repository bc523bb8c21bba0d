-- Slow work outside request transactions.
--
-- Three routes do slow work between their checks and their record: completing
-- an upload streams and hashes up to 512 MB, editing a published caption and
-- sending an article to the platform's drafts call a connector (a webhook with
-- a 15 s timeout). They now run as the publish worker does
-- (server/jobs/publish.ts): claim in one short transaction, do the slow work
-- outside any transaction, record in another (the pipeline's phased routes,
-- server/http/pipeline.ts). This file holds:
--
--   app.work_claims                 one live claim per piece of work: a second
--                                   request sees it and answers 409 *_IN_PROGRESS;
--                                   a claim lapses at claimed_until, so work that
--                                   died with its process can be claimed again
--   app.work_claim, app.work_claim_take
--                                   take a claim; give it up (or consume it)
--   api.claim_* / api.finish_*      the first and last transaction of each route
--   api.release_work_claim          gives a claim up after the slow step failed
--   api.sandbox_edit_caption        the sandbox platform's memory, written by a
--                                   request (replaces routes calling
--                                   app.sandbox_edit_caption_for_request)
--   app.media_expire_upload_sessions, api.abort_media_upload
--                                   replaced: they leave a session alone while its
--                                   completion is claimed (they used to wait on the
--                                   row lock the whole completion held)
--
-- Nothing here relies on current_user: the caller is the request context set
-- by the pipeline (app.current_workspace_id(), app.require_role).

------------------------------------------------------------------------------
-- Claims
------------------------------------------------------------------------------
create table if not exists app.work_claims (
  kind text not null check (kind in ('media_upload_completion', 'published_caption_edit', 'article_platform_draft')),
  subject_id uuid not null,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  token uuid not null,
  request_id text,
  claimed_until timestamptz not null,
  claimed_at timestamptz not null default clock_timestamp(),
  primary key (kind, subject_id)
);
create index if not exists work_claims_workspace_id_idx on app.work_claims (workspace_id);
create index if not exists work_claims_organization_id_idx on app.work_claims (organization_id);

-- Written only through the definer functions below; requests read their
-- workspace's claims (db/README.md, "Tenant policies").
select app.apply_tenant_policies('app.work_claims', array['select']);
grant select on app.work_claims to pressroom_api;
comment on table app.work_claims is
  'Slow work a request has claimed (db/migrations/current/60-slow-work-outside-transactions.sql): one live claim per (kind, subject); it lapses at claimed_until.';

-- Claims (kind, subject) for the caller's workspace for p_seconds; the token,
-- or null while another claim is live. The caller has checked the subject.
create or replace function app.work_claim(p_kind text, p_subject uuid, p_seconds int) returns uuid
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
declare
  v_token uuid := gen_random_uuid();
  v_got uuid;
begin
  if app.current_workspace_id() is null or app.current_organization_id() is null then
    perform app.raise(403, 'WORKSPACE_REQUIRED', 'This operation needs a workspace.');
  end if;
  insert into app.work_claims as c (kind, subject_id, organization_id, workspace_id, token, request_id, claimed_until)
  values (p_kind, p_subject, app.current_organization_id(), app.current_workspace_id(), v_token,
          nullif(current_setting('pressroom.request_id', true), ''),
          clock_timestamp() + make_interval(secs => greatest(p_seconds, 1)))
  on conflict (kind, subject_id) do update
    set organization_id = excluded.organization_id, workspace_id = excluded.workspace_id, token = excluded.token,
        request_id = excluded.request_id, claimed_until = excluded.claimed_until, claimed_at = clock_timestamp()
    where c.claimed_until <= clock_timestamp()
  returning token into v_got;
  return v_got;
end
$$;
alter function app.work_claim(text, uuid, int) owner to pressroom_definer;
comment on function app.work_claim(text, uuid, int) is
  'Claims slow work (kind, subject) for the caller''s workspace for p_seconds; returns the token, or null while another claim is live.';

-- Gives a claim up (the work was recorded, or failed): true when the token
-- was still the claim's.
create or replace function app.work_claim_take(p_kind text, p_subject uuid, p_token uuid) returns boolean
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
declare
  v_n int;
begin
  delete from app.work_claims
  where kind = p_kind and subject_id = p_subject and token = p_token and workspace_id = app.current_workspace_id();
  get diagnostics v_n = row_count;
  return v_n > 0;
end
$$;
alter function app.work_claim_take(text, uuid, uuid) owner to pressroom_definer;
comment on function app.work_claim_take(text, uuid, uuid) is
  'Removes the claim (kind, subject) when p_token is still its token (in the caller''s workspace); true when it was.';

-- Whether (kind, subject) has a live claim (for the functions that must leave it alone).
create or replace function app.work_claim_live(p_kind text, p_subject uuid) returns boolean
language sql stable security definer
set search_path = pg_catalog, app
as $$
  select exists (select 1 from app.work_claims
                 where kind = p_kind and subject_id = p_subject and claimed_until > clock_timestamp())
$$;
alter function app.work_claim_live(text, uuid) owner to pressroom_definer;
comment on function app.work_claim_live(text, uuid) is
  'Whether slow work (kind, subject) is claimed by a request right now.';

revoke execute on function app.work_claim(text, uuid, int), app.work_claim_take(text, uuid, uuid),
  app.work_claim_live(text, uuid) from public;
grant execute on function app.work_claim(text, uuid, int), app.work_claim_take(text, uuid, uuid),
  app.work_claim_live(text, uuid) to pressroom_api, pressroom_definer, pressroom_worker;

create or replace function api.release_work_claim(p_kind text, p_subject uuid, p_claim uuid) returns boolean
language plpgsql volatile
as $$
begin
  perform app.require_role('editor');
  return app.work_claim_take(p_kind, p_subject, p_claim);
end
$$;
comment on function api.release_work_claim(text, uuid, uuid) is
  'Gives up a claim taken by api.claim_* after the slow step failed, so a retry can claim again; true when the claim was still held.';

------------------------------------------------------------------------------
-- Completing an upload (POST media/uploads/{sessionId}/complete)
------------------------------------------------------------------------------
create or replace function api.claim_media_upload_completion(p_id uuid, p_claim_seconds int) returns jsonb
language plpgsql volatile
as $$
declare
  v jsonb;
  v_claim uuid;
begin
  -- The checks of api.begin_media_upload_completion, under its row lock (held
  -- only by this short transaction now).
  v := api.begin_media_upload_completion(p_id);
  if v ->> 'state' = 'completed' then
    return v;
  end if;
  v_claim := app.work_claim('media_upload_completion', p_id, p_claim_seconds);
  if v_claim is null then
    perform app.raise(409, 'UPLOAD_COMPLETION_IN_PROGRESS',
      'Another request is completing this upload; retry in a moment to get its media item.',
      jsonb_build_object('sessionId', p_id));
  end if;
  return v || jsonb_build_object('claim', v_claim);
end
$$;
comment on function api.claim_media_upload_completion(uuid, int) is
  'First step of completing an upload: the checks, then a claim for p_claim_seconds (409 UPLOAD_COMPLETION_IN_PROGRESS while another is live); returns the completed item, or what the server needs to verify the bytes plus the claim.';

create or replace function api.finish_media_upload_completion(p_id uuid, p_claim uuid, p_facts jsonb, p_patch jsonb) returns jsonb
language plpgsql volatile
as $$
begin
  perform app.require_role('editor');
  if not app.work_claim_take('media_upload_completion', p_id, p_claim) then
    perform app.raise(409, 'UPLOAD_COMPLETION_IN_PROGRESS',
      'This completion took too long and another request took it over; retry to get the media item.',
      jsonb_build_object('sessionId', p_id));
  end if;
  return api.complete_media_upload(p_id, p_facts, p_patch);
end
$$;
comment on function api.finish_media_upload_completion(uuid, uuid, jsonb, jsonb) is
  'Last step of completing an upload: consumes the claim of api.claim_media_upload_completion and makes the media item from the verified facts (api.complete_media_upload).';

-- Replaced: pending sessions whose completion is claimed are neither expired
-- nor swept (their bytes are being verified under the final key).
create or replace function app.media_expire_upload_sessions(p_limit int default 1000) returns jsonb
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
declare
  v_expired int;
  v_swept int;
  v_forgotten int;
begin
  update app.media_upload_sessions set state = 'expired'
  where id in (select s.id from app.media_upload_sessions s where s.state = 'pending' and s.expires_at <= now()
                 and not app.work_claim_live('media_upload_completion', s.id)
               order by s.expires_at limit p_limit for update skip locked);
  get diagnostics v_expired = row_count;
  with swept as (
    update app.media_upload_sessions set upload_swept_at = now()
    where id in (select s.id from app.media_upload_sessions s where s.upload_swept_at is null and s.expires_at <= now()
                   and not (s.state = 'pending' and app.work_claim_live('media_upload_completion', s.id))
                 order by s.expires_at limit p_limit for update skip locked)
    returning id, state, storage_key, workspace_id, organization_id)
  insert into app.media_storage_garbage (storage_key, workspace_id, organization_id, reason)
  select storage_key, workspace_id, organization_id, 'upload_swept' from swept
  union all
  -- Never completed: the final key a refused completion may have left.
  select format('media/%s/%s', workspace_id, id), workspace_id, organization_id, 'upload_expired' from swept
  where state <> 'completed'
  on conflict (storage_key) do nothing;
  get diagnostics v_swept = row_count;
  delete from app.media_upload_sessions where expires_at <= now() - interval '7 days' and upload_swept_at is not null;
  get diagnostics v_forgotten = row_count;
  return jsonb_build_object('expired', v_expired, 'keysQueued', v_swept, 'forgotten', v_forgotten);
end
$$;
comment on function app.media_expire_upload_sessions(int) is
  'Expires pending upload sessions past their expiry and queues their keys for deletion, leaving alone sessions whose completion is claimed.';

-- Replaced: a session whose completion is claimed cannot be aborted (its
-- bytes are being verified); the caller retries once it is done.
create or replace function api.abort_media_upload(p_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_upload_sessions;
begin
  perform app.require_role('editor');
  select * into v from app.media_upload_sessions where id = p_id and workspace_id = app.current_workspace_id() for update;
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
    on conflict (storage_key) do nothing;
  end if;
  return app.media_upload_json(v);
end
$$;
comment on function api.abort_media_upload(uuid) is
  'Aborts a pending upload session (409 UPLOAD_COMPLETION_IN_PROGRESS while a completion is claimed) and queues its keys for deletion.';

------------------------------------------------------------------------------
-- Editing a published caption (PATCH content/{id}/published-caption)
------------------------------------------------------------------------------
create or replace function api.claim_published_caption_edit(p_id uuid, p_claim_seconds int) returns jsonb
language plpgsql volatile
as $$
declare
  v jsonb;
  v_claim uuid;
begin
  v := api.published_caption_target(p_id);
  v_claim := app.work_claim('published_caption_edit', p_id, p_claim_seconds);
  if v_claim is null then
    perform app.raise(409, 'CAPTION_EDIT_IN_PROGRESS',
      'Another request is editing this published caption; retry once it is done.', jsonb_build_object('contentId', p_id));
  end if;
  -- The connector needs the webhook secret, which requests cannot read: the
  -- definer function checks the caller again.
  return v || jsonb_build_object('claim', v_claim,
    'webhookSecret', case when v ->> 'connector' = 'webhook' then app.published_caption_secret(p_id) end);
end
$$;
comment on function api.claim_published_caption_edit(uuid, int) is
  'First step of editing a published caption: the checks of api.published_caption_target, a claim for p_claim_seconds (409 CAPTION_EDIT_IN_PROGRESS while another is live), and what the connector needs (the webhook secret included).';

create or replace function api.finish_published_caption_edit(p_id uuid, p_claim uuid, p_caption text) returns jsonb
language plpgsql volatile
as $$
begin
  perform app.require_role('editor');
  if not app.work_claim_take('published_caption_edit', p_id, p_claim) then
    perform app.raise(409, 'CAPTION_EDIT_IN_PROGRESS',
      'This caption edit took too long and another request took it over.', jsonb_build_object('contentId', p_id));
  end if;
  return api.record_published_caption(p_id, p_caption);
end
$$;
comment on function api.finish_published_caption_edit(uuid, uuid, text) is
  'Last step of editing a published caption: consumes the claim of api.claim_published_caption_edit and records the caption the platform took.';

create or replace function api.sandbox_edit_caption(p_integration_id uuid, p_platform_post_id text, p_caption text) returns boolean
language sql volatile
as $$
  select app.sandbox_edit_caption_for_request(p_integration_id, p_platform_post_id, p_caption)
$$;
comment on function api.sandbox_edit_caption(uuid, text, text) is
  'The sandbox platform takes a caption edit from a request (an editor of the integration''s workspace); false when it has no such post.';

------------------------------------------------------------------------------
-- Sending an article to the platform's drafts (POST articles/{id}/platform-draft)
------------------------------------------------------------------------------
create or replace function api.claim_article_platform_draft(p_id uuid, p_claim_seconds int) returns jsonb
language plpgsql volatile
as $$
declare
  v jsonb;
  v_claim uuid;
begin
  v := api.begin_article_platform_draft(p_id);
  if jsonb_typeof(v -> 'existing') = 'object' then
    return v;
  end if;
  if coalesce((v -> 'integration' ->> 'deleted')::boolean, false) or v -> 'integration' ->> 'status' is distinct from 'active' then
    perform app.raise(409, 'INTEGRATION_UNAVAILABLE',
      'The article''s channel is disconnected or deleted; reconnect it first.',
      jsonb_build_object('integrationId', v -> 'integration' -> 'id'));
  end if;
  v_claim := app.work_claim('article_platform_draft', p_id, p_claim_seconds);
  if v_claim is null then
    perform app.raise(409, 'PLATFORM_DRAFT_IN_PROGRESS',
      'Another request is sending this article to the platform''s drafts; retry once it is done.', jsonb_build_object('contentId', p_id));
  end if;
  return v || jsonb_build_object('claim', v_claim);
end
$$;
comment on function api.claim_article_platform_draft(uuid, int) is
  'First step of a platform draft: the checks of api.begin_article_platform_draft, the draft already made for unchanged content, or a claim for p_claim_seconds (409 PLATFORM_DRAFT_IN_PROGRESS while another is live).';

create or replace function api.finish_article_platform_draft(p_id uuid, p_claim uuid, p_article_id text, p_draft_url text,
  p_fingerprint text) returns jsonb
language plpgsql volatile
as $$
begin
  perform app.require_role('editor');
  if not app.work_claim_take('article_platform_draft', p_id, p_claim) then
    perform app.raise(409, 'PLATFORM_DRAFT_IN_PROGRESS',
      'This platform draft took too long and another request took it over.', jsonb_build_object('contentId', p_id));
  end if;
  return api.record_article_platform_draft(p_id, p_article_id, p_draft_url, p_fingerprint);
end
$$;
comment on function api.finish_article_platform_draft(uuid, uuid, text, text, text) is
  'Last step of a platform draft: consumes the claim of api.claim_article_platform_draft and records the draft the platform made.';

-- The api functions of this file run as pressroom_api and are executable by
-- pressroom_request once 90-harden-api-functions.sql has run.
