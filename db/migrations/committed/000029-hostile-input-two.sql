--! Previous: sha1:ba164383c9c836a4ee635aaecdb29277ccf5a809
--! Hash: sha1:e26469709913aae50b1e360dac80af2bb5b86422
--! Message: hostile input two

--! split: 02-hook-throttle.sql
-- The inbound platform webhooks (server/routes/hooks.ts, no bearer: the
-- signature or verify token is the credential) are guarded like failed
-- credentials (api.gate_guarded, db/migrations/committed/000004-hostile-input.sql and
-- 000007-auth-failure-settings.sql): a refused hook call (unknown source or
-- integration, missing, wrong or stale signature, verify token mismatch, a
-- malformed check) counts against the client address in app.auth_failures,
-- the same window the pipeline's failed credentials count in; past
-- auth_failure_limit the address is answered 429 AUTH_THROTTLED before
-- anything of the call is looked at; only the first auth_failure_audit
-- refusals of the minute are audited one by one, the rest in the summary row
-- of app.flush_auth_failures. Accepted deliveries and answered checks are
-- never counted (a refused platform stops delivering).

create or replace function api.inbox_hook_guard(p_client text)
returns jsonb
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
declare
  v_window timestamptz := date_trunc('minute', now());
  v_reset int := greatest(1, ceil(extract(epoch from (date_trunc('minute', now()) + interval '1 minute' - clock_timestamp())))::int);
  v_failures int;
begin
  if p_client is null or p_client = '' then
    raise exception 'api.inbox_hook_guard: the client address is required';
  end if;
  select failures into v_failures from app.auth_failures where client = p_client and window_start = v_window;
  if coalesce(v_failures, 0) >= app.setting_int('auth_failure_limit') then
    -- Over the limit: refused before the hook is looked up or its signature
    -- checked (a right one would answer like a wrong one), counted in the
    -- window's summary row.
    update app.auth_failures set failures = failures + 1 where client = p_client and window_start = v_window;
    return jsonb_build_object('audit', false, 'retryAfter', v_reset,
      'error', jsonb_build_object('status', 429, 'code', 'AUTH_THROTTLED',
        'message', 'Too many failed credentials from this address; retry after the time in Retry-After.',
        'details', jsonb_build_object('retryAfter', v_reset)));
  end if;
  return jsonb_build_object('audit', true);
end
$$;
alter function api.inbox_hook_guard(text) owner to pressroom_definer;
revoke all on function api.inbox_hook_guard(text) from public;
grant execute on function api.inbox_hook_guard(text) to pressroom_app;
comment on function api.inbox_hook_guard(text) is
  'Runs first for every call of the inbound hooks (server/routes/hooks.ts), as pressroom_app: the failed-credential '
  'guard of api.gate_guarded for the client address (p_client, honouring TRUST_PROXY). With auth_failure_limit failed '
  'credentials in the current minute (refused hook calls and the pipeline''s alike, table app.auth_failures) the '
  'address is answered 429 AUTH_THROTTLED (audit false, retryAfter) before the hook is looked up; else {audit: true}.';

create or replace function api.inbox_hook_refused(p_client text)
returns jsonb
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
declare
  v_window timestamptz := date_trunc('minute', now());
  v_audit_first int := app.setting_int('auth_failure_audit');
  v_failures int;
begin
  if p_client is null or p_client = '' then
    raise exception 'api.inbox_hook_refused: the client address is required';
  end if;
  perform app.flush_auth_failures(p_client);
  insert into app.auth_failures as f (client, window_start, failures, audited)
  values (p_client, v_window, 1, case when v_audit_first >= 1 then 1 else 0 end)
  on conflict (client, window_start) do update
    set failures = f.failures + 1,
        audited = f.audited + case when f.failures < v_audit_first then 1 else 0 end
  returning failures into v_failures;
  return jsonb_build_object('audit', v_failures <= v_audit_first);
end
$$;
alter function api.inbox_hook_refused(text) owner to pressroom_definer;
revoke all on function api.inbox_hook_refused(text) from public;
grant execute on function api.inbox_hook_refused(text) to pressroom_app;
comment on function api.inbox_hook_refused(text) is
  'Called by the inbound hooks (server/routes/hooks.ts), as pressroom_app, for a refused call (unknown source or '
  'integration, missing, wrong or stale signature, verify token mismatch, a malformed check): counts a failed '
  'credential of the client address in app.auth_failures (closed windows of the address flushed first) and answers '
  '{audit}: true for the first auth_failure_audit of the minute, which the caller audits one by one; the rest are '
  'counted in the summary row of app.flush_auth_failures.';

comment on table app.auth_failures is
  'Failed credentials per client address and minute: no, malformed or unknown bearer (api.gate_guarded, '
  'api.gate_review_link) and refused inbound hook calls (api.inbox_hook_refused), so that the limit holds across API '
  'processes: over the limit the address is answered 429 AUTH_THROTTLED before any credential is looked at '
  '(api.gate_guarded, api.inbox_hook_guard); only the first refusals are audited one by one (audited), the rest '
  'become one summary row (app.flush_auth_failures). Not tenant data: unlogged, reached by pressroom_definer only.';
comment on function app.flush_auth_failures(text) is
  'For each closed minute of app.auth_failures (of one client address, or all): one audit row (error_code '
  'AUTH_FAILURE_BURST, route null, calls = the refusals not audited one by one), then the window is forgotten. Run by '
  'api.gate_guarded, api.gate_review_link and api.inbox_hook_refused for the caller''s address and by '
  'app.purge_expired for all.';

select app.harden_api_functions();

--! split: 03-credential-family.sql
-- A valid credential of the other family is not a failed credential.
--
-- Two families of bearer credentials reach /v1: API keys and session tokens
-- (member routes, gated by api.gate_guarded) and client review link tokens
-- (the /v1/review-link routes, gated by api.gate_review_link). Each gate
-- looked its bearer up in its own family only, so a valid API key or session
-- sent to /v1/review-link, or a live link token sent to a member route, was
-- an "unknown bearer": counted in app.auth_failures, and after
-- AUTH_FAILURE_LIMIT such calls in a minute every call from the address,
-- valid keys included, answered 429 AUTH_THROTTLED. The guard counts what
-- db/README.md says it counts (no, malformed or unknown bearer); a credential
-- of the other family is refused with 401 WRONG_CREDENTIAL_KIND instead,
-- attributed to it in the audit and counted against its own per-minute rate
-- limit, never against the address.
--
-- "Of the other family" means a credential its own routes would not count as
-- failed either: a live review link (a revoked or expired one is refused as
-- unknown on its own routes too); an API key in any state (its own routes
-- answer KEY_REVOKED, KEY_EXPIRED); a live session of an active user.

create or replace function app.wrong_credential_kind(p_token_hash bytea, p_route_takes text, p_class text) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_link app.review_links;
  v_key app.api_keys;
  v_user app.users;
  v_session_id uuid;
  v_kind text;
  v_principal jsonb;
  v_bucket text;
  v_limit int;
  v_rate jsonb;
begin
  if p_token_hash is null then
    return null;
  end if;
  if p_route_takes = 'member' then
    select * into v_link from app.review_links
    where token_hash = p_token_hash and revoked_at is null and (expires_at is null or expires_at > now());
    if v_link.id is null then
      return null;
    end if;
    v_kind := 'review_link';
    v_principal := jsonb_build_object('actorKind', 'review_link', 'reviewLinkId', v_link.id,
      'organizationId', v_link.organization_id);
    v_bucket := 'review_link:' || v_link.id;
  elsif p_route_takes = 'review_link' then
    select s.id into v_session_id
    from app.sessions s join app.users u on u.id = s.user_id
    where s.token_hash = p_token_hash and s.revoked_at is null and s.expires_at > now() and u.status = 'active';
    if v_session_id is not null then
      select u.* into v_user from app.users u join app.sessions s on s.user_id = u.id where s.id = v_session_id;
      v_kind := 'session';
      v_principal := jsonb_build_object('actorKind', 'user', 'userId', v_user.id, 'sessionId', v_session_id,
        'organizationId', v_user.organization_id, 'orgRole', v_user.org_role);
      v_bucket := 'principal:' || v_user.id;
    else
      select * into v_key from app.api_keys where key_hash = p_token_hash;
      if v_key.id is null then
        return null;
      end if;
      v_kind := 'api_key';
      v_principal := jsonb_build_object('actorKind', 'api_key', 'apiKeyId', v_key.id, 'apiKeyPrefix', v_key.key_prefix,
        'organizationId', v_key.organization_id, 'userId', v_key.created_by);
      v_bucket := 'principal:' || v_key.id;
    end if;
  else
    raise exception 'app.wrong_credential_kind: unknown route family %', p_route_takes;
  end if;
  v_principal := v_principal || jsonb_build_object('plan',
    (select o.plan from app.organizations o where o.id = (v_principal ->> 'organizationId')::uuid));
  -- The credential's own per-minute limit (the link's, or the principal's as
  -- on routes without a workspace), so refused calls stay bounded.
  v_limit := app.setting_int('rate_limit_' || p_class);
  v_rate := app.rate_limit_hit(v_bucket, p_class, v_limit);
  if not (v_rate ->> 'allowed')::boolean then
    return jsonb_build_object('principal', v_principal, 'rate', v_rate,
      'error', jsonb_build_object('status', 429, 'code', 'RATE_LIMITED',
        'message', format('The %s limit of %s requests per minute for this credential is used up; retry after %s s.', p_class, v_limit, v_rate ->> 'reset'),
        'details', jsonb_build_object('class', p_class, 'limit', v_limit, 'retryAfter', (v_rate ->> 'reset')::int)));
  end if;
  return jsonb_build_object('principal', v_principal, 'rate', v_rate,
    'error', jsonb_build_object('status', 401, 'code', 'WRONG_CREDENTIAL_KIND',
      'message', case v_kind
        when 'review_link' then 'This is a client review link token: it opens only the /v1/review-link routes. Send an API key or session token here: Authorization: Bearer <API key or session token>.'
        when 'session' then 'This is a session token: the /v1/review-link routes take only a client review link token (Authorization: Bearer prr_...).'
        else 'This is an API key: the /v1/review-link routes take only a client review link token (Authorization: Bearer prr_...).' end,
      'details', jsonb_build_object('credential', v_kind,
        'accepted', case when p_route_takes = 'member' then jsonb_build_array('api_key', 'session') else jsonb_build_array('review_link') end)));
end
$$;
alter function app.wrong_credential_kind(bytea, text, text) owner to pressroom_definer;
revoke all on function app.wrong_credential_kind(bytea, text, text) from public;
comment on function app.wrong_credential_kind(bytea, text, text) is 'For a bearer its gate did not find (p_route_takes: member for api.gate_guarded, review_link for api.gate_review_link): when it is a credential of the other family that its own routes would not count as failed (a live review link; an API key in any state; a live session of an active user), the 401 WRONG_CREDENTIAL_KIND answer with its principal (audited as it), counted against the credential''s own rate limit (429 RATE_LIMITED beyond) and not in app.auth_failures; null otherwise.';

create or replace function app.gate_guarded_with_limits(p_token_hash bytea, p_workspace_id uuid, p_class text, p_min_plan text,
  p_bucket text, p_client text, p_failure_limit integer, p_audit_first integer) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_window timestamptz := date_trunc('minute', now());
  v_reset int := greatest(1, ceil(extract(epoch from (date_trunc('minute', now()) + interval '1 minute' - clock_timestamp())))::int);
  v_failures int;
  v_audited int;
  v_result jsonb;
  v_other jsonb;
begin
  select failures into v_failures from app.auth_failures where client = p_client and window_start = v_window;
  if coalesce(v_failures, 0) >= p_failure_limit then
    -- Over the limit: refused before the credential is looked at (a right
    -- guess would answer like a wrong one), counted in the window's summary.
    update app.auth_failures set failures = failures + 1 where client = p_client and window_start = v_window;
    return jsonb_build_object('audit', false, 'retryAfter', v_reset,
      'error', jsonb_build_object('status', 429, 'code', 'AUTH_THROTTLED',
        'message', 'Too many failed credentials from this address; retry after the time in Retry-After.',
        'details', jsonb_build_object('retryAfter', v_reset)));
  end if;
  if p_token_hash is null and p_bucket is null then
    v_result := jsonb_build_object('error', jsonb_build_object('status', 401, 'code', 'UNAUTHENTICATED',
      'message', 'Send a bearer credential: Authorization: Bearer <API key or session token>.'));
  else
    v_result := api.gate(p_token_hash, p_workspace_id, p_class, p_min_plan, p_bucket);
  end if;
  if v_result -> 'error' ->> 'code' = 'UNAUTHENTICATED' then
    -- A live review link token is a credential, of the other family: refused, not counted.
    v_other := app.wrong_credential_kind(p_token_hash, 'member', p_class);
    if v_other is not null then
      return v_other;
    end if;
    perform app.flush_auth_failures(p_client);
    insert into app.auth_failures as f (client, window_start, failures, audited)
    values (p_client, v_window, 1, case when p_audit_first >= 1 then 1 else 0 end)
    on conflict (client, window_start) do update
      set failures = f.failures + 1,
          audited = f.audited + case when f.failures < p_audit_first then 1 else 0 end
    returning failures, audited into v_failures, v_audited;
    v_result := v_result || jsonb_build_object('audit', v_failures <= p_audit_first);
  end if;
  return v_result;
end
$$;
comment on function app.gate_guarded_with_limits(bytea, uuid, text, text, text, text, int, int) is
  'The failed-credential guard around api.gate with the limits given; called by api.gate_guarded with the settings in force. Counts only no, malformed or unknown bearers: a live review link token is answered by app.wrong_credential_kind (401 WRONG_CREDENTIAL_KIND) and not counted.';

create or replace function api.gate_review_link(p_token_hash bytea, p_class text, p_client text) returns jsonb
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
  v_other jsonb;
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
    -- An API key or a live session is a credential, of the other family: refused, not counted.
    if v_link.id is null then
      v_other := app.wrong_credential_kind(p_token_hash, 'review_link', p_class);
      if v_other is not null then
        return v_other;
      end if;
    end if;
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
comment on function api.gate_review_link(bytea, text, text) is 'The gate of the client-review routes (server/http/pipeline.ts, operations with x-auth: reviewLink), as pressroom_app: the review link of the bearer token (SHA-256), live (not revoked, not expired), of an organization on the standard plan or higher (401 PLAN_REQUIRED), the rate limit per link, and the failed-credential guard of api.gate_guarded. An API key or a live session is refused with 401 WRONG_CREDENTIAL_KIND (app.wrong_credential_kind) and not counted as a failed credential. Returns the principal (actorKind review_link) and the link''s workspace.';

--! split: 05-reaction-emoji.sql
-- A reaction is one emoji.
--
-- app.review_reactions.emoji took any 1-32 characters without spaces, so a
-- reaction could be '<script>' or any word, stored and shown to every
-- reviewer (members and clients) beside the entry. The rule is now one emoji
-- grapheme (app.is_reaction_emoji), checked by app.review_react for both the
-- member routes (addReviewReaction_v1, removeReviewReaction_v1) and the
-- client-link routes (addReviewLinkReaction_v1, removeReviewLinkReaction_v1),
-- 400 VALIDATION_FAILED (details.fields: emoji, not_an_emoji), and held by
-- the table's check constraint review_reactions_emoji_is_emoji for any other
-- writer.
--
-- One emoji is, after UTS #51 (Unicode emoji), any one of:
-- * a pictograph: a code point that is Extended_Pictographic or
--   Emoji_Presentation (regional indicators aside), optionally followed by
--   the emoji presentation selector U+FE0F or one skin-tone modifier
--   (U+1F3FB-U+1F3FF); several of them joined by ZERO WIDTH JOINER U+200D
--   (ZWJ sequences: families, professions, 'heart on fire');
-- * a flag: two regional indicators (U+1F1E6-U+1F1FF);
-- * a subdivision flag: U+1F3F4 and tag characters (U+E0020-U+E007E)
--   ended by CANCEL TAG U+E007F;
-- * a keycap: 0-9, # or *, optionally U+FE0F, then U+20E3;
-- and at most 32 code points long (the longest RGI sequences have 10).
-- The code points are Unicode 17.0's (Node 24's \p{Extended_Pictographic}
-- and \p{Emoji_Presentation}); Extended_Pictographic includes the blocks
-- reserved for future pictographs, so emoji of later versions pass too.
--
-- Existing rows: a stored reaction that is not one emoji (it could only have
-- come from the looser rule) is deleted before the constraint is added. A
-- reaction is a lightweight marker with no other record depending on it;
-- the call that added it stays in audit.api_calls.

create or replace function app.emoji_pattern() returns text
language sql immutable parallel safe as $fn$
  select '^(?:'
    -- a flag
    || '[\U0001F1E6-\U0001F1FF]{2}'
    -- a keycap
    || '|[0-9#*]\uFE0F?\u20E3'
    -- a subdivision flag
    || '|\U0001F3F4[\U000E0020-\U000E007E]+\U000E007F'
    -- pictographs (with presentation selector or skin tone), ZWJ-joined
    || '|' || e || '(?:\u200D' || e || ')*'
    || ')$'
  from (select '[' ||
    '\u00A9\u00AE\u203C\u2049\u2122\u2139\u2194-\u2199\u21A9\u21AA\u231A\u231B\u2328\u23CF\u23E9-\u23F3' ||
    '\u23F8-\u23FA\u24C2\u25AA\u25AB\u25B6\u25C0\u25FB-\u25FE\u2600-\u2604\u260E\u2611\u2614\u2615\u2618' ||
    '\u261D\u2620\u2622\u2623\u2626\u262A\u262E\u262F\u2638-\u263A\u2640\u2642\u2648-\u2653\u265F\u2660' ||
    '\u2663\u2665\u2666\u2668\u267B\u267E\u267F\u2692-\u2697\u2699\u269B\u269C\u26A0\u26A1\u26A7' ||
    '\u26AA\u26AB\u26B0\u26B1\u26BD\u26BE\u26C4\u26C5\u26C8\u26CE\u26CF\u26D1\u26D3\u26D4\u26E9\u26EA' ||
    '\u26F0-\u26F5\u26F7-\u26FA\u26FD\u2702\u2705\u2708-\u270D\u270F\u2712\u2714\u2716\u271D\u2721\u2728' ||
    '\u2733\u2734\u2744\u2747\u274C\u274E\u2753-\u2755\u2757\u2763\u2764\u2795-\u2797\u27A1\u27B0\u27BF' ||
    '\u2934\u2935\u2B05-\u2B07\u2B1B\u2B1C\u2B50\u2B55\u3030\u303D\u3297\u3299\U0001F004' ||
    '\U0001F02C-\U0001F02F\U0001F094-\U0001F09F\U0001F0AF\U0001F0B0\U0001F0C0\U0001F0CF\U0001F0D0' ||
    '\U0001F0F6-\U0001F0FF\U0001F170\U0001F171\U0001F17E\U0001F17F\U0001F18E\U0001F191-\U0001F19A' ||
    '\U0001F1AE-\U0001F1E5\U0001F201-\U0001F20F\U0001F21A\U0001F22F\U0001F232-\U0001F23A' ||
    '\U0001F23C-\U0001F23F\U0001F249-\U0001F25F\U0001F266-\U0001F321\U0001F324-\U0001F393' ||
    '\U0001F396\U0001F397\U0001F399-\U0001F39B\U0001F39E-\U0001F3F0\U0001F3F3-\U0001F3F5' ||
    '\U0001F3F7-\U0001F4FD\U0001F4FF-\U0001F53D\U0001F549-\U0001F54E\U0001F550-\U0001F567' ||
    '\U0001F56F\U0001F570\U0001F573-\U0001F57A\U0001F587\U0001F58A-\U0001F58D\U0001F590' ||
    '\U0001F595\U0001F596\U0001F5A4\U0001F5A5\U0001F5A8\U0001F5B1\U0001F5B2\U0001F5BC' ||
    '\U0001F5C2-\U0001F5C4\U0001F5D1-\U0001F5D3\U0001F5DC-\U0001F5DE\U0001F5E1\U0001F5E3\U0001F5E8' ||
    '\U0001F5EF\U0001F5F3\U0001F5FA-\U0001F64F\U0001F680-\U0001F6C5\U0001F6CB-\U0001F6D2' ||
    '\U0001F6D5-\U0001F6E5\U0001F6E9\U0001F6EB-\U0001F6F0\U0001F6F3-\U0001F6FF\U0001F7DA-\U0001F7FF' ||
    '\U0001F80C-\U0001F80F\U0001F848-\U0001F84F\U0001F85A-\U0001F85F\U0001F888-\U0001F88F' ||
    '\U0001F8AE\U0001F8AF\U0001F8BC-\U0001F8BF\U0001F8C2-\U0001F8CF\U0001F8D9-\U0001F8FF' ||
    '\U0001F90C-\U0001F93A\U0001F93C-\U0001F945\U0001F947-\U0001F9FF\U0001FA58-\U0001FA5F' ||
    '\U0001FA6E-\U0001FAFF\U0001FC00-\U0001FFFD'
    || '](?:\uFE0F|[\U0001F3FB-\U0001F3FF])?' as e) x
$fn$;
revoke all on function app.emoji_pattern() from public;
grant execute on function app.emoji_pattern() to pressroom_api, pressroom_definer, pressroom_worker;
comment on function app.emoji_pattern() is 'The regular expression of one emoji (app.is_reaction_emoji; db/migrations/committed/000029-hostile-input-two.sql, split 05-reaction-emoji.sql says what it takes).';

create or replace function app.is_reaction_emoji(p_text text) returns boolean
language sql immutable parallel safe as $fn$
  select p_text is not null and length(p_text) between 1 and 32 and p_text ~ app.emoji_pattern()
$fn$;
revoke all on function app.is_reaction_emoji(text) from public;
grant execute on function app.is_reaction_emoji(text) to pressroom_api, pressroom_definer, pressroom_worker;
comment on function app.is_reaction_emoji(text) is 'Whether a text is one emoji, as a reaction must be: a pictograph (Extended_Pictographic or Emoji_Presentation, with U+FE0F or a skin tone), a ZWJ sequence of them, a flag, a subdivision flag or a keycap; at most 32 code points (db/migrations/committed/000029-hostile-input-two.sql, split 05-reaction-emoji.sql).';

-- Rows of the looser rule that are not one emoji go (see above), then the rule holds for every writer.
delete from app.review_reactions where not app.is_reaction_emoji(emoji);
alter table app.review_reactions drop constraint if exists review_reactions_emoji_is_emoji;
alter table app.review_reactions add constraint review_reactions_emoji_is_emoji check (app.is_reaction_emoji(emoji));
comment on constraint review_reactions_emoji_is_emoji on app.review_reactions is 'A reaction is one emoji (app.is_reaction_emoji).';
comment on table app.review_reactions is 'One emoji per person (member "user:<id>" or client "client:<email>") per activity entry; adding another replaces it. The emoji is one emoji grapheme (check review_reactions_emoji_is_emoji, app.is_reaction_emoji). Tenant policies of app.apply_tenant_policies (writes need editor).';

create or replace function app.review_react(r app.reviews, it app.review_items, p_activity uuid, p_emoji text, p_add boolean) returns jsonb
language plpgsql as $$
declare
  v_key text := app.current_approver_key();
begin
  if not app.is_reaction_emoji(p_emoji) then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('emoji', 'not_an_emoji',
      'one emoji: a pictograph (with U+FE0F or a skin tone), a ZWJ sequence of them, a flag or a keycap, at most 32 code points')),
      'A reaction is one emoji; see details.fields.');
  end if;
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
comment on function app.review_react(app.reviews, app.review_items, uuid, text, boolean) is 'Adds (replacing the caller''s previous one) or removes the caller''s emoji on an activity entry of the item; 400 VALIDATION_FAILED (field emoji, not_an_emoji) when it is not one emoji (app.is_reaction_emoji), 404 when there is nothing to remove.';
