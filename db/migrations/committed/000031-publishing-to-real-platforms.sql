--! Previous: sha1:87a2beed31ba046a4e3855e623fb2664951753f1
--! Hash: sha1:13125e11169d139433938a675e2a8046eb895f6d
--! Message: publishing to real platforms

--! split: 20-publish-real-platforms.sql
-- Publishing to real platforms: a platform's rate limit puts the edition back until its reset.
--
-- A connector answers a 429 with the platform's reset (PublishResult failed, retryAt:
-- server/platforms/types.ts). Recorded as a plain transient failure it came back after the
-- exponential backoff (publish_retry_base_ms * 2^(n-1)), usually before the reset, and spent
-- one of the run's publish_max_attempts each time: a few 429s failed the edition. The worker
-- (server/jobs/publish.ts) now records such an outcome here: the attempt ends transient with
-- the platform's answer, the edition's job goes back to start at the reset (at the latest a
-- day ahead, at the earliest now) the way an edition over a publish limit does
-- (app.publish_defer_job: a new job attempt number, no retry spent), and the run's attempt
-- count is given back, so a rate limit never fails an edition by itself. When the job comes
-- back its claim goes through the integration's and connector's publish limits as any other
-- (app.publish_claim_batch). The integration's own rate window (where its limits have one: X,
-- LinkedIn) is marked full until the reset, so its other editions due before then are put back
-- by the claim, paced, without an attempt, instead of each meeting the platform's 429.
create or replace function app.publish_record_rate_limited(p_attempt_id uuid, p_error text, p_retry_at timestamptz)
returns jsonb
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
declare
  a app.publish_attempts;
  v app.content_items;
  v_until timestamptz;
  l record;
begin
  -- Locked as app.publish_record locks them: the attempt, then its edition.
  select * into a from app.publish_attempts where id = p_attempt_id for update;
  if a.id is null then
    return jsonb_build_object('action', 'ignored', 'reason', 'no attempt');
  end if;
  select * into v from app.content_items where id = a.content_item_id for update;
  if a.finished_at is not null then
    return jsonb_build_object('action', 'ignored', 'reason', 'attempt already finished');
  end if;
  update app.publish_attempts set finished_at = clock_timestamp(), outcome = 'transient', error = p_error,
    platform_post_id = null, permalink = null
  where id = a.id;
  if v.id is null or v.deleted_at is not null or v.status <> 'scheduled' then
    return jsonb_build_object('action', 'ignored', 'reason', 'edition no longer scheduled');
  end if;
  v_until := greatest(clock_timestamp(), least(coalesce(p_retry_at, clock_timestamp()), clock_timestamp() + interval '1 day'));
  -- The run's attempt is given back: the next claim of this job counts from the same number.
  update app.publishing_states set state = 'retrying', last_error = p_error, next_attempt_at = v_until,
    run_attempts = greatest(a.run_attempt - 1, 0), updated_at = now()
  where content_item_id = v.id;
  perform app.publish_defer_job(v.publish_job_id, v_until);
  -- The account's window is spent until the reset: app.publish_window_take grants nothing before
  -- window_start + window_seconds = v_until (never moved earlier than a fuller window already is).
  select * into l from app.publish_limits_of(v.integration_id);
  if l.max_per_window is not null then
    insert into app.publish_windows as w (scope, key, window_start, used)
    values ('integration', v.integration_id::text, v_until - l.window_seconds * interval '1 second', l.max_per_window)
    on conflict (scope, key) do update set window_start = excluded.window_start, used = excluded.used
    where not (w.used >= excluded.used and w.window_start + l.window_seconds * interval '1 second' >= v_until);
  end if;
  return jsonb_build_object('action', 'retry', 'reason', 'rate_limited', 'nextAttemptAt', v_until);
end
$$;
alter function app.publish_record_rate_limited(uuid, text, timestamptz) owner to pressroom_definer;
comment on function app.publish_record_rate_limited(uuid, text, timestamptz) is 'Records an attempt the platform refused for its rate limit (429 with a reset): the attempt ends transient, the edition''s job starts again at the reset (now at the earliest, a day ahead at the latest; app.publish_defer_job, no retry spent) and the run''s attempt is given back; the integration''s rate window, where it has one, is full until the reset. Worker only (server/jobs/publish.ts).';
revoke all on function app.publish_record_rate_limited(uuid, text, timestamptz) from public;
grant execute on function app.publish_record_rate_limited(uuid, text, timestamptz) to pressroom_worker;

--! split: 21-account-tokens-and-limits.sql
-- An account's own limits in the content checks (docs/connectors.md, "The account's own
-- limits"): what a connected account's platform says it allows (a Mastodon instance's
-- characters, media count and file sizes from /api/v2/instance; an X account's caption length
-- by its subscription), read by the server when the account is connected or reconnected
-- (app.connection_save, from the account's `limits`) and after every refresh of its
-- credentials (app.integration_limits_store, the worker), used by app.content_item_problems
-- (so POST {ws}/content/check and every scheduling check of app.assert_publishable) over the
-- platform's defaults in app.platforms.

create table if not exists app.integration_limits (
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  integration_id uuid not null references app.integrations (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  limits jsonb not null,
  read_at timestamptz not null default now(),
  constraint integration_limits_pkey primary key (workspace_id, integration_id),
  constraint integration_limits_integration_key unique (integration_id),
  constraint integration_limits_limits_check check (jsonb_typeof(limits) = 'object' and limits <> '{}')
);
comment on table app.integration_limits is 'A connected account''s own limits, as its platform states them (PlatformModule.readLimits): {captionMaxLength, maxMedia, imageMaxBytes, videoMaxBytes}, each a positive integer when present (app.account_limits_clean). Written only by pressroom_definer functions (app.connection_save at connect and reconnect, app.integration_limits_store after a refresh); read by app.integration_platform_rules, which app.content_item_problems applies over app.platforms. No row: the platform''s defaults.';
create index if not exists integration_limits_organization_id_idx on app.integration_limits (organization_id);
select app.apply_tenant_policies('app.integration_limits', '{}');
revoke all on app.integration_limits from pressroom_worker;
grant select on app.integration_limits to pressroom_worker;

-- The known limits of a jsonb as the platform module gave them: positive integers only, at most
-- 2^31-1 (bytes: 2^53); anything else is dropped. Null when nothing is left.
create or replace function app.account_limits_clean(p jsonb) returns jsonb
language sql immutable set search_path = pg_catalog as $$
  select nullif(coalesce((
    select jsonb_object_agg(k, (p ->> k)::numeric::bigint)
    from unnest(array['captionMaxLength', 'maxMedia', 'imageMaxBytes', 'videoMaxBytes']) k
    where jsonb_typeof(p) = 'object' and jsonb_typeof(p -> k) = 'number'
      and (p ->> k)::numeric >= 1 and (p ->> k)::numeric = trunc((p ->> k)::numeric)
      and (p ->> k)::numeric <= case when k in ('captionMaxLength', 'maxMedia') then 2147483647 else 9007199254740991 end), '{}'), '{}')
$$;
alter function app.account_limits_clean(jsonb) owner to pressroom_definer;
revoke all on function app.account_limits_clean(jsonb) from public;
comment on function app.account_limits_clean(jsonb) is 'The known account limits of p (captionMaxLength, maxMedia, imageMaxBytes, videoMaxBytes) that are positive integers; null when none is.';

-- Stores (or, with null, removes) an integration's limits.
create or replace function app.integration_limits_put(p_integration uuid, p_limits jsonb) returns void
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v jsonb := app.account_limits_clean(p_limits);
begin
  if v is null then
    delete from app.integration_limits where integration_id = p_integration;
    return;
  end if;
  insert into app.integration_limits (workspace_id, integration_id, organization_id, limits, read_at)
  select g.workspace_id, g.id, g.organization_id, v, now() from app.integrations g where g.id = p_integration
  on conflict (integration_id) do update set limits = excluded.limits, read_at = excluded.read_at;
end
$$;
alter function app.integration_limits_put(uuid, jsonb) owner to pressroom_definer;
revoke all on function app.integration_limits_put(uuid, jsonb) from public;
comment on function app.integration_limits_put(uuid, jsonb) is 'Stores an integration''s own limits (cleaned by app.account_limits_clean); null or nothing usable removes them, so the platform''s defaults apply. Called by app.connection_save and app.integration_limits_store.';

-- The worker, after a refresh: the limits the platform states now.
create or replace function app.integration_limits_store(p_integration uuid, p_limits jsonb) returns void
language plpgsql security definer set search_path = pg_catalog, app as $$
begin
  if not exists (select 1 from app.integrations where id = p_integration and deleted_at is null) then
    return;
  end if;
  perform app.integration_limits_put(p_integration, p_limits);
end
$$;
alter function app.integration_limits_store(uuid, jsonb) owner to pressroom_definer;
revoke all on function app.integration_limits_store(uuid, jsonb) from public;
grant execute on function app.integration_limits_store(uuid, jsonb) to pressroom_worker;
comment on function app.integration_limits_store(uuid, jsonb) is 'The worker''s write of an integration''s own limits, read again after a refresh of its credentials (server/platforms/credentials.ts); null removes them (the platform states none). A deleted integration is left alone. Executable by pressroom_worker.';

-- The platform's rules for one integration: app.platforms with the account's own limits over
-- the defaults (caption length, media count, image and video bytes).
create or replace function app.integration_platform_rules(p_platform text, p_integration uuid) returns app.platforms
language plpgsql stable security definer set search_path = pg_catalog, app as $$
declare
  v app.platforms;
  l jsonb;
  r jsonb;
begin
  select * into v from app.platforms where code = p_platform;
  select limits into l from app.integration_limits where integration_id = p_integration;
  if v.code is null or l is null then
    return v;
  end if;
  if l ? 'captionMaxLength' then
    v.caption_max_length := (l ->> 'captionMaxLength')::int;
  end if;
  r := v.media_rules;
  if l ? 'maxMedia' then
    r := r || jsonb_build_object('maxItems', (l ->> 'maxMedia')::int);
    -- Per-kind counts stay the platform's, never above the account's total.
    if r ? 'maxImages' then r := r || jsonb_build_object('maxImages', least((r ->> 'maxImages')::int, (l ->> 'maxMedia')::int)); end if;
    if r ? 'maxVideos' then r := r || jsonb_build_object('maxVideos', least((r ->> 'maxVideos')::int, (l ->> 'maxMedia')::int)); end if;
    if r ? 'maxGifs' then r := r || jsonb_build_object('maxGifs', least((r ->> 'maxGifs')::int, (l ->> 'maxMedia')::int)); end if;
  end if;
  -- A platform that takes no images (imageMaxBytes 0: YouTube) keeps taking none.
  if l ? 'imageMaxBytes' and coalesce((r ->> 'imageMaxBytes')::bigint, 1) <> 0 then
    r := r || jsonb_build_object('imageMaxBytes', (l ->> 'imageMaxBytes')::bigint);
  end if;
  if l ? 'videoMaxBytes' and coalesce((r ->> 'videoMaxBytes')::bigint, 1) <> 0 then
    r := r || jsonb_build_object('videoMaxBytes', (l ->> 'videoMaxBytes')::bigint);
  end if;
  v.media_rules := r;
  return v;
end
$$;
alter function app.integration_platform_rules(text, uuid) owner to pressroom_definer;
revoke all on function app.integration_platform_rules(text, uuid) from public;
grant execute on function app.integration_platform_rules(text, uuid) to pressroom_api, pressroom_worker;
comment on function app.integration_platform_rules(text, uuid) is 'The rules app.content_item_problems checks an edition of this integration against: the platform''s row of app.platforms, with the account''s own limits (app.integration_limits) over its caption_max_length and media_rules (maxItems, and maxImages/maxVideos/maxGifs never above it; imageMaxBytes, videoMaxBytes). Without limits, the platform''s row as it is.';

-- The content checks: the same as db/migrations/committed/000021-workbench-bulk-scheduling-set-based.sql,
-- with the integration's rules (app.integration_platform_rules) instead of the platform's row.
create or replace function app.content_item_problems(p_item_id uuid, p_prefix text DEFAULT ''::text)
 returns jsonb
 language plpgsql
 stable
 security definer
 set search_path to 'pg_catalog', 'app'
as $function$
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
  join app.content_roots r on r.id = i.root_id
  join app.integrations g on g.id = i.integration_id
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
alter function app.content_item_problems(uuid,text) owner to pressroom_definer;
revoke all on function app.content_item_problems(uuid,text) from public;
grant execute on function app.content_item_problems(uuid,text) to pressroom_api, pressroom_worker;
comment on function app.content_item_problems(uuid,text) is 'The platform-rule problems of one edition (caption length, empty, media rules, threads, channel available, required settings) as field problems under p_prefix, against its integration''s rules (app.integration_platform_rules: the account''s own limits over the platform''s defaults). Security definer (pressroom_definer): it reads the one edition its caller (a trigger, app.assert_publishable) already holds, without evaluating the tenant policies in each of its statements.';
comment on function app.assert_publishable(uuid[],text[]) is 'Raises 400 VALIDATION_FAILED with the platform-rule problems (app.content_item_problems, field names under each edition''s prefix; an integration''s own limits over its platform''s) of those of the editions that are scheduled, and details.contentIds. Security definer (pressroom_definer), like app.content_item_problems: its callers hold the editions.';

-- The one place a connected account becomes an integration (as in
-- db/migrations/committed/000030-connected-accounts.sql), now also storing the limits the
-- server read for the account (p_account.limits; a key absent leaves the stored ones).
create or replace function app.connection_save(p_org uuid, p_ws uuid, p_created_by uuid, p_connector text, p_platform text,
  p_instance_url text, p_target uuid, p_account jsonb) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_integ app.integrations;
  v_id uuid;
  v_account text := p_account ->> 'accountId';
  v_name text := left(coalesce(nullif(btrim(p_account ->> 'name'), ''), nullif(btrim(p_account ->> 'username'), ''), v_account), 200);
  v_username text := left(nullif(btrim(p_account ->> 'username'), ''), 200);
begin
  if v_account is null or length(v_account) not between 1 and 512 then
    perform app.raise(400, 'VALIDATION_FAILED', 'The platform named no account id.');
  end if;
  if p_target is not null then
    select * into v_integ from app.integrations where id = p_target and workspace_id = p_ws and deleted_at is null for update;
    if v_integ.id is null then
      perform app.raise_not_found('integration', p_target);
    end if;
    if (v_integ.account_id is not null and v_integ.account_id <> v_account)
       or coalesce(v_integ.instance_url, '') <> coalesce(p_instance_url, '') then
      perform app.raise(409, 'RECONNECT_ACCOUNT_MISMATCH',
        format('The platform account signed in (%s) is not the account of this integration; sign in as %s, or connect the other account as a new integration.',
               coalesce(v_username, v_account), coalesce(v_integ.username, v_integ.account_id)),
        jsonb_build_object('integrationId', v_integ.id, 'expectedAccountId', v_integ.account_id, 'accountId', v_account));
    end if;
    update app.integrations set account_id = v_account, username = coalesce(v_username, username),
      connection_state = 'ok', connection_reason = null,
      connection_changed_at = case when connection_state <> 'ok' then now() else connection_changed_at end
    where id = v_integ.id;
    perform app.credentials_put(v_integ.id, p_account -> 'credential');
    if p_account ? 'limits' then
      perform app.integration_limits_put(v_integ.id, p_account -> 'limits');
    end if;
    return jsonb_build_object('integrationId', v_integ.id, 'reconnected', true);
  end if;
  select id into v_id from app.integrations
  where workspace_id = p_ws and connector = p_connector and coalesce(instance_url, '') = coalesce(p_instance_url, '')
    and account_id = v_account and deleted_at is null;
  if v_id is not null then
    perform app.raise(409, 'ACCOUNT_ALREADY_CONNECTED',
      format('The account %s is connected in this workspace already; reconnect that integration instead (POST .../integrations/%s/reconnect).',
             coalesce(v_username, v_account), v_id),
      jsonb_build_object('integrationId', v_id, 'accountId', v_account));
  end if;
  insert into app.integrations (id, organization_id, workspace_id, connector, platform, name, username, settings, created_by,
    account_id, instance_url, connection_state, connection_changed_at)
  values (coalesce((p_account ->> 'integrationId')::uuid, gen_random_uuid()), p_org, p_ws, p_connector, p_platform, v_name, v_username,
    '{}', p_created_by, v_account, p_instance_url, 'ok', now())
  returning id into v_id;
  perform app.credentials_put(v_id, p_account -> 'credential');
  if p_account ? 'limits' then
    perform app.integration_limits_put(v_id, p_account -> 'limits');
  end if;
  return jsonb_build_object('integrationId', v_id, 'reconnected', false);
end
$$;
alter function app.connection_save(uuid, uuid, uuid, text, text, text, uuid, jsonb) owner to pressroom_definer;
comment on function app.connection_save(uuid, uuid, uuid, text, text, text, uuid, jsonb) is 'The one place a connected account becomes an integration: a reconnect (p_target) updates the same account only (409 RECONNECT_ACCOUNT_MISMATCH), sets connection_state ok and stores the new credential; a new connection refuses an account already connected in the workspace (409 ACCOUNT_ALREADY_CONNECTED) and creates the integration with the id its credential is bound to; either way the account''s own limits (p_account.limits, when given) are stored (app.integration_limits_put). Called by api.oauth_complete, api.choose_pending_connection and api.connect_with_password.';
revoke all on function app.connection_save(uuid, uuid, uuid, text, text, text, uuid, jsonb) from public;

-- One token store: a connected account's replies use its connected credentials
-- (server/jobs/inbox.ts), so a platform token set by hand would never be used on it; it is
-- refused (400 PLATFORM_TOKEN_UNSUPPORTED) instead of being kept silently. Otherwise as in
-- db/migrations/committed/000013-inbox.sql.
create or replace function api.set_inbox_platform_token(p_integration uuid, p_token_length int, p_token_ciphertext bytea) returns jsonb
language plpgsql as $$
declare
  v_integ record;
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
    values (p_integration, v_integ.organization_id, v_integ.workspace_id, p_token_ciphertext, app.current_user_id());
  end if;
  return jsonb_build_object('integrationId', p_integration, 'platform', v_integ.platform, 'updatedAt', now());
end
$$;
comment on function api.set_inbox_platform_token(uuid, int, bytea) is 'Serves PUT /v1/workspaces/{workspaceId}/integrations/{id}/inbox-platform-token (setInboxPlatformToken_v1). Stores the ciphertext of the access token the server made (it passes the token''s length to check it); from then on the integration''s inbox replies and moderation go to the platform''s API. Only for sandbox and webhook integrations: a connected account (a connector with connect <> none) answers with its own credentials. Requires the manager role; 404 INTEGRATION_NOT_FOUND, 400 PLATFORM_TOKEN_UNSUPPORTED (not facebook, instagram or x, or a connected account) and VALIDATION_FAILED.';
select app.harden_api_functions();

--! split: 22-atproto-oauth.sql
-- Bluesky through AT Protocol OAuth (server/platforms/bluesky-oauth.ts, docs/connectors-bluesky.md).
--
-- 1. A connector may connect accounts through OAuth besides its main flow: app.connectors.oauth,
--    declared from the registry (server/platforms/index.ts, connectorDeclarations: true for a
--    module whose `connect` is oauth, or that has an AT Protocol OAuth flow, as Bluesky's, whose
--    `connect` stays password). api.connect_begin starts a connection for such a connector too.
-- 2. The OAuth client's state store (@atproto/oauth-client-node StateStore): the library keeps,
--    per authorization it starts, the DPoP private key, the PKCE verifier, the issuer and the
--    client authentication method under a key of its own (the `state` the PDS hands back). They
--    live here, keyed by the SHA-256 of that key, as one vault ciphertext bound to
--    atproto-oauth-state:<hash hex> (the database never sees a key), for 10 minutes; the row is
--    deleted when the callback uses it, and expired rows an hour after expiry by the next put.
--    The sessions (DPoP-bound tokens and key) are the integrations' credentials
--    (app.integration_credentials), so refreshes run under app.credentials_lock like every other.
--    Engine-only: reached through pressroom_definer functions the server's login alone executes.

alter table app.connectors add column if not exists oauth boolean not null default false;
comment on column app.connectors.oauth is 'Whether accounts of this connector can be connected through an OAuth flow (POST {ws}/integrations/connect): every connector whose connect is oauth, and a password connector that also has one (Bluesky: AT Protocol OAuth). Declared from the registry by app.declare_connectors.';
update app.connectors set oauth = true where connect = 'oauth' and not oauth;

create or replace function app.declare_connectors(p_connectors jsonb) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v jsonb;
  v_names text[] := '{}';
  v_bad text;
  v_changed int := 0;
  v_rows int;
  v_kept text[];
  v_oauth boolean;
begin
  -- p_connectors: [{"name", "platforms": [...], "connect": "oauth" | "password" | "none", "oauth"?: boolean}, ...]
  if jsonb_typeof(p_connectors) is distinct from 'array' then
    raise exception 'declare_connectors: an array of {name, platforms, connect, oauth?}';
  end if;
  for v in select * from jsonb_array_elements(p_connectors) loop
    select p into v_bad from jsonb_array_elements_text(v -> 'platforms') p
    where not exists (select 1 from app.platforms where code = p) limit 1;
    if v_bad is not null then
      raise exception 'declare_connectors: connector % names unknown platform %', v ->> 'name', v_bad;
    end if;
    v_oauth := (v ->> 'connect') = 'oauth' or coalesce((v ->> 'oauth')::boolean, false);
    if v_oauth and (v ->> 'connect') = 'none' then
      raise exception 'declare_connectors: connector % connects no account, so it has no OAuth flow', v ->> 'name';
    end if;
    insert into app.connectors as c (name, platforms, connect, oauth)
    values (v ->> 'name', array(select jsonb_array_elements_text(v -> 'platforms') order by 1), v ->> 'connect', v_oauth)
    on conflict (name) do update set platforms = excluded.platforms, connect = excluded.connect, oauth = excluded.oauth, declared_at = now()
    where (c.platforms, c.connect, c.oauth) is distinct from (excluded.platforms, excluded.connect, excluded.oauth);
    get diagnostics v_rows = row_count;
    v_changed := v_changed + v_rows;
    v_names := v_names || (v ->> 'name');
  end loop;
  -- A connector no longer in the registry goes, unless integrations still name it.
  delete from app.connectors c where c.name <> all (v_names)
    and not exists (select 1 from app.integrations i where i.connector = c.name);
  select array_agg(name order by name) into v_kept from app.connectors where name <> all (v_names);
  return jsonb_build_object('declared', to_jsonb(v_names), 'changed', v_changed, 'retiredButUsed', coalesce(to_jsonb(v_kept), '[]'));
end
$$;
alter function app.declare_connectors(jsonb) owner to pressroom_definer;
comment on function app.declare_connectors(jsonb) is 'Writes app.connectors from the registry (server/platforms/index.ts, connectorDeclarations): upserts each {name, platforms, connect, oauth?} (oauth: the connector also connects through OAuth; always true for connect oauth), drops a connector no longer listed unless an integration still names it. Called by server/db/migrate.ts after migrating, as the owner.';
revoke all on function app.declare_connectors(jsonb) from public;

create or replace function api.connect_begin(p_platform text, p_connector text, p_integration_id uuid, p_instance_url text,
  p_state_hash bytea, p_verifier_ciphertext bytea, p_redirect_uri text, p_return_to text, p_app jsonb) returns jsonb
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  v jsonb := api.connect_prepare(p_platform, p_connector, p_integration_id, p_instance_url);
  v_connector text := v ->> 'connector';
  v_instance text := v ->> 'instanceUrl';
  v_app_id uuid;
  v_expires timestamptz := now() + interval '10 minutes';
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
    delete from app.platform_apps where connector = v_connector and instance = coalesce(v_instance, '') and source = 'registered';
    insert into app.platform_apps (id, connector, instance, client_id, secret_ciphertext, source, redirect_uri, scopes)
    values (v_app_id, v_connector, coalesce(v_instance, ''), p_app ->> 'clientId', decode(p_app ->> 'secretCiphertext', 'base64'),
      'registered', p_app ->> 'redirectUri', array(select jsonb_array_elements_text(coalesce(p_app -> 'scopes', '[]'))));
  elsif p_app is not null then
    v_app_id := (p_app ->> 'id')::uuid;
    if v_app_id is distinct from (v -> 'app' ->> 'id')::uuid then
      perform app.raise(409, 'PLATFORM_APP_CHANGED', 'The platform app changed while the connection started; start again.');
    end if;
  end if;
  insert into app.oauth_states (workspace_id, state_hash, organization_id, user_id, api_key_id, connector, platform, instance_url,
    platform_app_id, redirect_uri, return_to, integration_id, verifier_ciphertext, expires_at)
  values (app.current_workspace_id(), p_state_hash, app.current_organization_id(), app.current_user_id(), app.current_api_key_id(),
    v_connector, v ->> 'platform', v_instance, v_app_id, p_redirect_uri, p_return_to, p_integration_id, p_verifier_ciphertext, v_expires);
  return jsonb_build_object('connector', v_connector, 'platform', v ->> 'platform', 'integrationId', p_integration_id,
    'instanceUrl', v_instance, 'expiresAt', v_expires);
end
$$;
alter function api.connect_begin(text, text, uuid, text, bytea, bytea, text, text, jsonb) owner to pressroom_definer;
comment on function api.connect_begin(text, text, uuid, text, bytea, bytea, text, text, jsonb) is 'Serves the last phase of POST /v1/workspaces/{workspaceId}/integrations/connect and .../integrations/{id}/reconnect: the checks of api.connect_prepare again, then stores the state (its SHA-256, the PKCE verifier''s ciphertext, redirect URI, return URL, who started it) for 10 minutes, and the app the server registered on the instance when p_app brings one ({id, clientId, secretCiphertext, redirectUri, scopes}); p_app {id} names the stored operator app used (409 PLATFORM_APP_CHANGED when it changed), null the app from the environment. 400 CONNECT_FLOW_NOT_APPLICABLE for a connector with no OAuth flow (app.connectors.oauth false: a password connector without one).';
grant execute on function api.connect_begin(text, text, uuid, text, bytea, bytea, text, text, jsonb) to pressroom_request, pressroom_api;
revoke all on function api.connect_begin(text, text, uuid, text, bytea, bytea, text, text, jsonb) from public;

-- 2. The AT Protocol OAuth client's state store -----------------------------------
create table if not exists app.atproto_oauth_states (
  key_hash bytea primary key,
  ciphertext bytea not null,
  key_version int not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  constraint atproto_oauth_states_hash_check check (length(key_hash) = 32),
  constraint atproto_oauth_states_ciphertext_check check (length(ciphertext) between 34 and 8192),
  constraint atproto_oauth_states_key_version_check check (key_version between 1 and 65535)
);
comment on table app.atproto_oauth_states is 'The state store of the AT Protocol OAuth client (@atproto/oauth-client-node, server/platforms/bluesky-oauth.ts): per authorization started, the SHA-256 of the library''s state key and one vault ciphertext (bound to atproto-oauth-state:<hash hex>) of the issuer, DPoP private key, PKCE verifier, client authentication method and the app state (the app.oauth_states state of the connection). 10 minutes; deleted when the callback uses it; expired rows are purged an hour after expiry by the next put. Server-wide, engine-only: pressroom_definer functions the server''s login alone executes.';
create index if not exists atproto_oauth_states_expires_idx on app.atproto_oauth_states (expires_at);
alter table app.atproto_oauth_states enable row level security;
alter table app.atproto_oauth_states force row level security;
drop policy if exists atproto_oauth_states_definer on app.atproto_oauth_states;
create policy atproto_oauth_states_definer on app.atproto_oauth_states for all to pressroom_definer using (true) with check (true);
grant select, insert, update, delete on app.atproto_oauth_states to pressroom_definer;

create or replace function api.atproto_oauth_state_put(p_key_hash bytea, p_ciphertext bytea, p_key_version int) returns void
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  -- Written in the last phase of POST {ws}/integrations/connect, beside api.connect_begin: a manager's only.
  perform app.connect_require_manager();
  if p_key_hash is null or length(p_key_hash) <> 32 then
    perform app.raise(400, 'VALIDATION_FAILED', 'The state key hash is the SHA-256 of the key (32 bytes).');
  end if;
  delete from app.atproto_oauth_states where expires_at <= now() - interval '1 hour';
  insert into app.atproto_oauth_states (key_hash, ciphertext, key_version, expires_at)
  values (p_key_hash, p_ciphertext, p_key_version, now() + interval '10 minutes')
  on conflict (key_hash) do update set ciphertext = excluded.ciphertext, key_version = excluded.key_version,
    created_at = now(), expires_at = excluded.expires_at;
end
$$;
alter function api.atproto_oauth_state_put(bytea, bytea, int) owner to pressroom_definer;
comment on function api.atproto_oauth_state_put(bytea, bytea, int) is 'StateStore.set of the AT Protocol OAuth client (server/platforms/bluesky-oauth.ts), in the last phase of POST /v1/workspaces/{workspaceId}/integrations/connect and .../reconnect beside api.connect_begin: manager role; keeps the ciphertext under the SHA-256 of the library''s state key for 10 minutes, and purges rows expired an hour ago.';
revoke all on function api.atproto_oauth_state_put(bytea, bytea, int) from public;
grant execute on function api.atproto_oauth_state_put(bytea, bytea, int) to pressroom_request, pressroom_api;

create or replace function api.atproto_oauth_state_get(p_key_hash bytea) returns jsonb
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select jsonb_build_object('ciphertext', encode(s.ciphertext, 'base64'), 'keyVersion', s.key_version)
  from app.atproto_oauth_states s where s.key_hash = p_key_hash and s.expires_at > now();
$$;
alter function api.atproto_oauth_state_get(bytea) owner to pressroom_definer;
comment on function api.atproto_oauth_state_get(bytea) is 'StateStore.get of the AT Protocol OAuth client: the ciphertext kept under the SHA-256 of the library''s state key, null when there is none or it expired. Owned by pressroom_definer, executable by pressroom_app only.';
revoke all on function api.atproto_oauth_state_get(bytea) from public;
grant execute on function api.atproto_oauth_state_get(bytea) to pressroom_app;

create or replace function api.atproto_oauth_state_del(p_key_hash bytea) returns boolean
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  v_rows int;
begin
  delete from app.atproto_oauth_states where key_hash = p_key_hash;
  get diagnostics v_rows = row_count;
  return v_rows > 0;
end
$$;
alter function api.atproto_oauth_state_del(bytea) owner to pressroom_definer;
comment on function api.atproto_oauth_state_del(bytea) is 'StateStore.del of the AT Protocol OAuth client: deletes the state (the callback used it); true when there was one. Owned by pressroom_definer, executable by pressroom_app only.';
revoke all on function api.atproto_oauth_state_del(bytea) from public;
grant execute on function api.atproto_oauth_state_del(bytea) to pressroom_app;
