-- Integrations (connected accounts), taxonomy (tags, pillars, formats,
-- hashtag groups) and campaigns with phases: rules, triggers and the api.*
-- functions their routes call. Runs after 10-planning-skeleton.sql (tables,
-- base policies, grants) and 15-platforms.sql (platform rules).
--
-- Idempotent: functions are created or replaced, triggers, policies and
-- constraints are dropped first or guarded, so the file can run again.

------------------------------------------------------------------------------
-- Tenant scope, hardened. The base policies of 10 compare workspace_id with
-- the context's workspace only; these restrictive policies also require the
-- row's organization to be the principal's and the workspace to be one the
-- principal can really access (as the foundation's workspace policy does),
-- so a forged context reaches nothing.
------------------------------------------------------------------------------
do $$
declare
  t text;
begin
  foreach t in array array['integrations', 'tags', 'pillars', 'formats', 'hashtag_groups', 'campaigns', 'campaign_phases']
  loop
    execute format('drop policy if exists %I on app.%I', t || '_request_scope', t);
    execute format($p$create policy %I on app.%I as restrictive for all to pressroom_request
      using (organization_id = (select app.current_organization_id())
             and workspace_id = (select app.current_workspace_id())
             and (select app.current_workspace_accessible()))
      with check (organization_id = (select app.current_organization_id())
                  and workspace_id = (select app.current_workspace_id())
                  and (select app.current_workspace_accessible()))$p$, t || '_request_scope', t);
  end loop;
end
$$;

------------------------------------------------------------------------------
-- Small shared helpers
------------------------------------------------------------------------------
-- Refuses a date range whose end is before its start (400 VALIDATION_FAILED
-- naming the field, as the HTTP layer's validation does).
create or replace function app.check_date_range(p_starts date, p_ends date, p_field_prefix text default 'body')
returns void
language plpgsql
as $$
begin
  if p_starts is not null and p_ends is not null and p_ends < p_starts then
    perform app.raise(400, 'VALIDATION_FAILED', 'endsOn must be on or after startsOn.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object(
        'field', p_field_prefix || '.endsOn', 'code', 'before_start', 'message', 'must be on or after startsOn'))));
  end if;
end
$$;

-- Escapes LIKE wildcards so a search string matches literally.
create or replace function app.like_escape(p_text text) returns text
language sql immutable parallel safe
as $$ select replace(replace(replace(p_text, '\', '\\'), '%', '\%'), '_', '\_') $$;

------------------------------------------------------------------------------
-- Integrations
------------------------------------------------------------------------------
-- A webhook URL is http(s) with no credentials in it, whoever writes it. (The
-- server also refuses hosts that resolve to private networks; see
-- server/platforms/webhook.ts.)
do $$
begin
  if not exists (select 1 from pg_constraint where conname = 'integrations_webhook_url_http'
                 and conrelid = 'app.integrations'::regclass) then
    alter table app.integrations add constraint integrations_webhook_url_http
      check (webhook_url is null or (length(webhook_url) <= 2048 and webhook_url ~* '^https?://[^/?#@[:space:]]+([/?#][^[:space:]]*)?$'));
  end if;
  if not exists (select 1 from pg_constraint where conname = 'integrations_webhook_secret_length'
                 and conrelid = 'app.integrations'::regclass) then
    alter table app.integrations add constraint integrations_webhook_secret_length
      check (webhook_secret is null or length(webhook_secret) between 16 and 512);
  end if;
  if not exists (select 1 from pg_constraint where conname = 'integrations_settings_object'
                 and conrelid = 'app.integrations'::regclass) then
    alter table app.integrations add constraint integrations_settings_object
      check (jsonb_typeof(settings) = 'object');
  end if;
end
$$;

-- The publishing rules of a platform, in the API's shape.
create or replace function app.platform_rules_json(p_code text) returns jsonb
language sql stable
as $$
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
$$;

create or replace function app.platform_capabilities_json(p_code text) returns jsonb
language sql stable
as $$
  select jsonb_build_object(
    'canPublishArticles', coalesce((p.capabilities ->> 'canPublishArticles')::boolean, false),
    'boards', coalesce((p.capabilities ->> 'boards')::boolean, false),
    'videoCategories', coalesce((p.capabilities ->> 'videoCategories')::boolean, false),
    'threads', coalesce((p.capabilities ->> 'threads')::boolean, false),
    'editPublishedCaption', coalesce((p.capabilities ->> 'editPublishedCaption')::boolean, false))
  from app.platforms p where p.code = p_code
$$;

-- An integration as the API shows it. Explicit columns: the request role may
-- not read webhook_secret, so no whole-row reference.
create or replace function app.integration_json(p_id uuid, p_detail boolean default false) returns jsonb
language sql stable
as $$
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
$$;

create or replace function api.list_integrations() returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  return (
    select coalesce(jsonb_agg(app.integration_json(i.id) order by i.created_at, i.id), '[]')
    from app.integrations i
    where i.workspace_id = app.current_workspace_id() and i.deleted_at is null);
end
$$;

create or replace function api.get_integration(p_id uuid) returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  if not exists (select 1 from app.integrations i
                 where i.id = p_id and i.workspace_id = app.current_workspace_id() and i.deleted_at is null) then
    perform app.raise(404, 'NOT_FOUND', 'No integration with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  return app.integration_json(p_id, true);
end
$$;

-- What a connector needs to list boards or video categories of an
-- integration (never the secret); 404 NOT_SUPPORTED when the platform has
-- no such list.
create or replace function api.integration_for_listing(p_id uuid, p_capability text) returns jsonb
language plpgsql stable
as $$
declare
  v record;
  v_with text[];
  v_what text := case p_capability when 'boards' then 'boards' when 'videoCategories' then 'video categories' end;
begin
  perform app.require_role('viewer');
  if v_what is null then
    perform app.raise(400, 'VALIDATION_FAILED', format('Unknown list %s.', p_capability));
  end if;
  select i.id, i.connector, i.platform, i.name, i.username, i.settings, i.webhook_url, p.name as platform_name,
         coalesce((p.capabilities ->> p_capability)::boolean, false) as supported
  into v
  from app.integrations i join app.platforms p on p.code = i.platform
  where i.id = p_id and i.workspace_id = app.current_workspace_id() and i.deleted_at is null;
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
$$;

-- Connects an account through a connector that needs no OAuth. The webhook
-- URL's host was resolved and checked by the server before this call.
create or replace function api.create_integration(
  p_connector text, p_platform text, p_name text, p_username text, p_settings jsonb,
  p_webhook_url text, p_webhook_secret text)
returns jsonb
language plpgsql volatile
as $$
declare
  v_id uuid;
  v_settings jsonb := coalesce(p_settings, '{}'::jsonb);
  v_bad text[];
begin
  perform app.require_role('manager');
  if p_connector is null or p_connector not in ('sandbox', 'webhook') then
    perform app.raise(400, 'UNKNOWN_CONNECTOR', format('Unknown connector %s; use sandbox or webhook.', coalesce(p_connector, 'null')),
      jsonb_build_object('field', 'connector', 'connectors', jsonb_build_array('sandbox', 'webhook')));
  end if;
  if not exists (select 1 from app.platforms where code = p_platform) then
    perform app.raise(400, 'UNKNOWN_PLATFORM', format('Unknown platform %s.', coalesce(p_platform, 'null')),
      jsonb_build_object('field', 'platform', 'platforms', (select jsonb_agg(code order by code) from app.platforms)));
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
    if length(p_webhook_secret) not between 16 and 512 then
      perform app.raise(400, 'VALIDATION_FAILED', 'secret must have 16 to 512 characters.',
        jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.secret', 'code', 'length', 'message', 'must have 16 to 512 characters'))));
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
  values (app.current_organization_id(), app.current_workspace_id(), p_connector, p_platform, btrim(p_name),
    nullif(btrim(p_username), ''), v_settings,
    case when p_connector = 'webhook' then p_webhook_url end,
    case when p_connector = 'webhook' then p_webhook_secret end,
    app.current_user_id())
  returning id into v_id;
  return app.integration_json(v_id, true);
end
$$;

-- Soft delete. Refused while editions are scheduled on the integration
-- (unschedule or delete them first); afterwards every route answers 404.
create or replace function api.delete_integration(p_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v_id uuid;
  v_ids uuid[];
  v_count int;
begin
  perform app.require_role('manager');
  -- FOR UPDATE waits for transactions that are adding editions on it.
  select i.id into v_id from app.integrations i
  where i.id = p_id and i.workspace_id = app.current_workspace_id() and i.deleted_at is null
  for update;
  if v_id is null then
    perform app.raise(404, 'NOT_FOUND', 'No integration with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  select count(*)::int, (array_agg(c.id order by c.scheduled_at, c.id))[1:100] into v_count, v_ids
  from app.content_items c
  where c.integration_id = p_id and c.workspace_id = app.current_workspace_id()
    and c.status = 'scheduled' and c.deleted_at is null;
  if v_count > 0 then
    perform app.raise(409, 'INTEGRATION_HAS_SCHEDULED_CONTENT',
      format('%s scheduled edition(s) would publish through this integration; unschedule or delete them first.', v_count),
      jsonb_build_object('id', p_id, 'count', v_count, 'contentIds', to_jsonb(v_ids)));
  end if;
  update app.integrations set deleted_at = now(), status = 'disconnected' where id = p_id;
  return jsonb_build_object('id', p_id, 'deleted', true);
end
$$;

-- An edition may only be added to, moved to or (re)scheduled on a live
-- integration of its own workspace, whoever writes it.
create or replace function app.tg_content_items_check_integration() returns trigger
language plpgsql
security definer
set search_path = pg_catalog, app
as $$
declare
  v record;
begin
  if tg_op = 'UPDATE' and new.integration_id = old.integration_id
     and not (new.status = 'scheduled' and old.status is distinct from 'scheduled') then
    return new;
  end if;
  -- KEY SHARE: a concurrent delete_integration (FOR UPDATE) waits for us,
  -- and we see its committed deleted_at.
  select i.workspace_id, i.deleted_at into v from app.integrations i where i.id = new.integration_id for key share;
  if not found or v.workspace_id <> new.workspace_id then
    perform app.raise(404, 'INTEGRATION_NOT_FOUND', 'No integration with this id in this workspace.',
      jsonb_build_object('integrationId', new.integration_id));
  end if;
  if v.deleted_at is not null then
    perform app.raise(409, 'INTEGRATION_DELETED', 'This integration was deleted; choose another channel.',
      jsonb_build_object('integrationId', new.integration_id, 'deletedAt', v.deleted_at));
  end if;
  return new;
end
$$;
alter function app.tg_content_items_check_integration() owner to pressroom_definer;
drop trigger if exists content_items_05_check_integration on app.content_items;
create trigger content_items_05_check_integration before insert or update of integration_id, status on app.content_items
  for each row execute function app.tg_content_items_check_integration();

------------------------------------------------------------------------------
-- Taxonomy: tags, pillars, formats ({name, color}) and hashtag groups
------------------------------------------------------------------------------
-- Names are trimmed (so "Summer " and "summer" collide on the unique index)
-- and colors kept lower case.
create or replace function app.tg_taxonomy_normalize() returns trigger
language plpgsql
as $$
begin
  new.name := btrim(new.name);
  new.color := lower(new.color);
  return new;
end
$$;
drop trigger if exists tags_20_normalize on app.tags;
create trigger tags_20_normalize before insert or update of name, color on app.tags
  for each row execute function app.tg_taxonomy_normalize();
drop trigger if exists pillars_20_normalize on app.pillars;
create trigger pillars_20_normalize before insert or update of name, color on app.pillars
  for each row execute function app.tg_taxonomy_normalize();
drop trigger if exists formats_20_normalize on app.formats;
create trigger formats_20_normalize before insert or update of name, color on app.formats
  for each row execute function app.tg_taxonomy_normalize();

-- Hashtags are stored without '#', deduplicated case-insensitively (the
-- first spelling wins), in the order given. A hashtag is letters, digits,
-- marks and underscores: ASCII punctuation, spaces and control characters
-- are refused here; the API also refuses non-ASCII punctuation.
create or replace function app.normalize_hashtags(p_hashtags text[]) returns text[]
language plpgsql immutable
as $$
declare
  v_out text[] := '{}';
  v_seen text[] := '{}';
  v_bad text[] := '{}';
  h text;
  v text;
begin
  foreach h in array coalesce(p_hashtags, '{}') loop
    v := regexp_replace(btrim(coalesce(h, '')), '^#', '');
    if v = '' or length(v) > 100 or v ~ '[\x01-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]' then
      v_bad := v_bad || coalesce(h, 'null');
    elsif not (lower(v) = any (v_seen)) then
      v_seen := v_seen || lower(v);
      v_out := v_out || v;
    end if;
  end loop;
  if cardinality(v_bad) > 0 then
    perform app.raise(400, 'INVALID_HASHTAG',
      'A hashtag is 1 to 100 letters, digits or underscores, optionally after one leading #.',
      jsonb_build_object('field', 'hashtags', 'hashtags', to_jsonb(v_bad)));
  end if;
  return v_out;
end
$$;

create or replace function app.tg_hashtag_groups_normalize() returns trigger
language plpgsql
as $$
begin
  new.name := btrim(new.name);
  new.hashtags := app.normalize_hashtags(new.hashtags);
  return new;
end
$$;
drop trigger if exists hashtag_groups_20_normalize on app.hashtag_groups;
create trigger hashtag_groups_20_normalize before insert or update of name, hashtags on app.hashtag_groups
  for each row execute function app.tg_hashtag_groups_normalize();

-- The tables behind the taxonomy kinds of the API.
create or replace function app.taxonomy_table(p_kind text) returns text
language plpgsql immutable
as $$
begin
  if p_kind in ('tags', 'pillars', 'formats') then
    return p_kind;
  end if;
  perform app.raise(400, 'VALIDATION_FAILED', format('Unknown taxonomy kind %s.', coalesce(p_kind, 'null')));
end
$$;

create or replace function app.taxonomy_noun(p_kind text) returns text
language sql immutable
as $$ select case p_kind when 'tags' then 'tag' when 'pillars' then 'pillar' when 'formats' then 'format' else 'term' end $$;

create or replace function api.list_taxonomy_terms(p_kind text) returns jsonb
language plpgsql stable
as $$
declare
  v jsonb;
begin
  perform app.require_role('viewer');
  execute format($q$
    select coalesce(jsonb_agg(jsonb_build_object('id', t.id, 'name', t.name, 'color', t.color,
             'createdAt', t.created_at, 'updatedAt', t.updated_at) order by lower(t.name), t.id), '[]')
    from app.%I t where t.workspace_id = $1$q$, app.taxonomy_table(p_kind))
  into v using app.current_workspace_id();
  return v;
end
$$;

create or replace function api.create_taxonomy_term(p_kind text, p_name text, p_color text) returns jsonb
language plpgsql volatile
as $$
declare
  v jsonb;
begin
  perform app.require_role('editor');
  begin
    execute format($q$
      insert into app.%I (organization_id, workspace_id, name, color) values ($1, $2, $3, $4)
      returning jsonb_build_object('id', id, 'name', name, 'color', color, 'createdAt', created_at, 'updatedAt', updated_at)$q$,
      app.taxonomy_table(p_kind))
    into v using app.current_organization_id(), app.current_workspace_id(), p_name, p_color;
  exception when unique_violation then
    perform app.raise(409, 'NAME_TAKEN',
      format('A %s named %s already exists in this workspace (names are compared case-insensitively).', app.taxonomy_noun(p_kind), btrim(p_name)),
      jsonb_build_object('field', 'name', 'name', btrim(p_name)));
  end;
  return v;
end
$$;

-- p_patch: the provided fields only (name, color; color may be null).
create or replace function api.update_taxonomy_term(p_kind text, p_id uuid, p_patch jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v jsonb;
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
    into v using p_id, app.current_workspace_id(), coalesce(p_patch, '{}'::jsonb);
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
$$;

create or replace function api.delete_taxonomy_term(p_kind text, p_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v uuid;
begin
  perform app.require_role('editor');
  execute format('delete from app.%I where id = $1 and workspace_id = $2 returning id', app.taxonomy_table(p_kind))
  into v using p_id, app.current_workspace_id();
  if v is null then
    perform app.raise(404, 'NOT_FOUND', format('No %s with this id in this workspace.', app.taxonomy_noun(p_kind)), jsonb_build_object('id', p_id));
  end if;
  return jsonb_build_object('id', v, 'deleted', true);
end
$$;

create or replace function app.hashtag_group_json(g app.hashtag_groups) returns jsonb
language sql stable
as $$ select jsonb_build_object('id', g.id, 'name', g.name, 'hashtags', to_jsonb(g.hashtags),
  'createdAt', g.created_at, 'updatedAt', g.updated_at) $$;

create or replace function api.list_hashtag_groups() returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  return (select coalesce(jsonb_agg(app.hashtag_group_json(g) order by lower(g.name), g.id), '[]')
          from app.hashtag_groups g where g.workspace_id = app.current_workspace_id());
end
$$;

create or replace function api.create_hashtag_group(p_name text, p_hashtags text[]) returns jsonb
language plpgsql volatile
as $$
declare
  v app.hashtag_groups;
begin
  perform app.require_role('editor');
  begin
    insert into app.hashtag_groups (organization_id, workspace_id, name, hashtags)
    values (app.current_organization_id(), app.current_workspace_id(), p_name, coalesce(p_hashtags, '{}'))
    returning * into v;
  exception when unique_violation then
    perform app.raise(409, 'NAME_TAKEN',
      format('A hashtag group named %s already exists in this workspace (names are compared case-insensitively).', btrim(p_name)),
      jsonb_build_object('field', 'name', 'name', btrim(p_name)));
  end;
  return app.hashtag_group_json(v);
end
$$;

create or replace function api.update_hashtag_group(p_id uuid, p_patch jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v app.hashtag_groups;
  v_patch jsonb := coalesce(p_patch, '{}'::jsonb);
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
    where g.id = p_id and g.workspace_id = app.current_workspace_id()
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
$$;

create or replace function api.delete_hashtag_group(p_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v uuid;
begin
  perform app.require_role('editor');
  delete from app.hashtag_groups where id = p_id and workspace_id = app.current_workspace_id() returning id into v;
  if v is null then
    perform app.raise(404, 'NOT_FOUND', 'No hashtag group with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  return jsonb_build_object('id', v, 'deleted', true);
end
$$;

------------------------------------------------------------------------------
-- Campaigns and phases
------------------------------------------------------------------------------
-- A phase lives in its campaign's workspace and never moves to another
-- campaign; at most 50 phases per campaign.
create or replace function app.tg_campaign_phases_check_campaign() returns trigger
language plpgsql
security definer
set search_path = pg_catalog, app
as $$
declare
  v record;
begin
  if tg_op = 'UPDATE' and new.campaign_id is distinct from old.campaign_id then
    perform app.raise(400, 'IMMUTABLE_FIELD', 'A phase cannot move to another campaign.',
      jsonb_build_object('id', old.id, 'campaignId', old.campaign_id));
  end if;
  select c.workspace_id, c.organization_id into v from app.campaigns c where c.id = new.campaign_id;
  if not found or v.workspace_id <> new.workspace_id or v.organization_id <> new.organization_id then
    perform app.raise(404, 'CAMPAIGN_NOT_FOUND', 'No campaign with this id in this workspace.',
      jsonb_build_object('campaignId', new.campaign_id));
  end if;
  if tg_op = 'INSERT' and (select count(*) from app.campaign_phases p where p.campaign_id = new.campaign_id) >= 50 then
    perform app.raise(409, 'PHASE_LIMIT_REACHED', 'A campaign has at most 50 phases.',
      jsonb_build_object('campaignId', new.campaign_id, 'limit', 50));
  end if;
  return new;
end
$$;
alter function app.tg_campaign_phases_check_campaign() owner to pressroom_definer;
drop trigger if exists campaign_phases_05_check_campaign on app.campaign_phases;
create trigger campaign_phases_05_check_campaign before insert or update of campaign_id, workspace_id, organization_id
  on app.campaign_phases for each row execute function app.tg_campaign_phases_check_campaign();

-- A content root's campaign is of its workspace, and its phase belongs to
-- that campaign. When the campaign is unassigned (or deleted: the foreign
-- key sets it null) the phase goes with it.
create or replace function app.tg_content_roots_check_campaign() returns trigger
language plpgsql
security definer
set search_path = pg_catalog, app
as $$
declare
  v_ws uuid;
  v_phase_campaign uuid;
begin
  if new.campaign_id is null then
    if new.phase_id is not null then
      if tg_op = 'UPDATE' and old.campaign_id is not null then
        new.phase_id := null;
      else
        perform app.raise(400, 'PHASE_NOT_IN_CAMPAIGN', 'A phase needs its campaign: set campaignId too.',
          jsonb_build_object('phaseId', new.phase_id));
      end if;
    end if;
    return new;
  end if;
  if tg_op = 'UPDATE' and new.campaign_id is not distinct from old.campaign_id
     and new.phase_id is not distinct from old.phase_id and new.workspace_id = old.workspace_id then
    return new;
  end if;
  select c.workspace_id into v_ws from app.campaigns c where c.id = new.campaign_id;
  if v_ws is null or v_ws <> new.workspace_id then
    perform app.raise(404, 'CAMPAIGN_NOT_FOUND', 'No campaign with this id in this workspace.',
      jsonb_build_object('campaignId', new.campaign_id));
  end if;
  if new.phase_id is not null then
    select p.campaign_id into v_phase_campaign from app.campaign_phases p where p.id = new.phase_id;
    if v_phase_campaign is distinct from new.campaign_id then
      perform app.raise(400, 'PHASE_NOT_IN_CAMPAIGN', 'This phase is not a phase of the campaign.',
        jsonb_build_object('phaseId', new.phase_id, 'campaignId', new.campaign_id));
    end if;
  end if;
  return new;
end
$$;
alter function app.tg_content_roots_check_campaign() owner to pressroom_definer;
drop trigger if exists content_roots_05_check_campaign on app.content_roots;
create trigger content_roots_05_check_campaign before insert or update of campaign_id, phase_id, workspace_id
  on app.content_roots for each row execute function app.tg_content_roots_check_campaign();

create or replace function app.campaign_phase_json(p app.campaign_phases) returns jsonb
language sql stable
as $$ select jsonb_build_object('id', p.id, 'campaignId', p.campaign_id, 'name', p.name, 'color', p.color,
  'startsOn', p.starts_on, 'endsOn', p.ends_on, 'position', p.position,
  'createdAt', p.created_at, 'updatedAt', p.updated_at) $$;

create or replace function app.campaign_phases_json(p_campaign_id uuid) returns jsonb
language sql stable
as $$
  select coalesce(jsonb_agg(app.campaign_phase_json(p) order by p.position, p.created_at, p.id), '[]')
  from app.campaign_phases p where p.campaign_id = p_campaign_id
$$;

create or replace function app.campaign_json(c app.campaigns, p_with_phases boolean) returns jsonb
language sql stable
as $$
  select jsonb_build_object('id', c.id, 'name', c.name, 'description', c.description, 'color', c.color,
    'startsOn', c.starts_on, 'endsOn', c.ends_on, 'createdAt', c.created_at, 'updatedAt', c.updated_at)
    || case when p_with_phases then jsonb_build_object('phases', app.campaign_phases_json(c.id)) else '{}'::jsonb end
$$;

-- The campaign of the current workspace, locked for a change to it or its
-- phases (one writer per campaign at a time), or 404.
create or replace function app.campaign_for_update(p_id uuid) returns app.campaigns
language plpgsql volatile
as $$
declare
  v app.campaigns;
begin
  select * into v from app.campaigns c where c.id = p_id and c.workspace_id = app.current_workspace_id() for update;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No campaign with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  return v;
end
$$;

create or replace function app.campaign_visible(p_id uuid) returns app.campaigns
language plpgsql stable
as $$
declare
  v app.campaigns;
begin
  select * into v from app.campaigns c where c.id = p_id and c.workspace_id = app.current_workspace_id();
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No campaign with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  return v;
end
$$;

-- Keeps positions dense (0..n-1) and puts p_phase_id (if given) at
-- p_position (clamped), the others keeping their order.
create or replace function app.place_campaign_phase(p_campaign_id uuid, p_phase_id uuid, p_position int)
returns void
language plpgsql volatile
as $$
declare
  v_ids uuid[];
  v_pos int;
begin
  v_ids := array(select p.id from app.campaign_phases p
                 where p.campaign_id = p_campaign_id and p.id is distinct from p_phase_id
                 order by p.position, p.created_at, p.id);
  if p_phase_id is not null then
    v_pos := least(greatest(coalesce(p_position, cardinality(v_ids)), 0), cardinality(v_ids));
    v_ids := v_ids[1:v_pos] || p_phase_id || v_ids[v_pos + 1:];
  end if;
  update app.campaign_phases p set position = x.ord - 1
  from unnest(v_ids) with ordinality x (id, ord)
  where p.id = x.id and p.position <> x.ord - 1;
end
$$;

create or replace function api.list_campaigns(p_search text, p_include_phases boolean) returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  return (
    select coalesce(jsonb_agg(app.campaign_json(c, coalesce(p_include_phases, false))
                              order by c.starts_on nulls last, lower(c.name), c.id), '[]')
    from app.campaigns c
    where c.workspace_id = app.current_workspace_id()
      and (nullif(p_search, '') is null or c.name ilike '%' || app.like_escape(p_search) || '%'));
end
$$;

create or replace function api.get_campaign(p_id uuid) returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  return app.campaign_json(app.campaign_visible(p_id), true);
end
$$;

-- Writes the phases of a campaign as listed (bulk save): items with an id
-- are updated, items without one created, phases not listed deleted;
-- positions follow the list. Ids must be phases of this campaign.
create or replace function app.save_campaign_phases(p_campaign_id uuid, p_phases jsonb) returns void
language plpgsql volatile
as $$
declare
  v_item jsonb;
  v_ord int;
  v_ids uuid[];
  v_foreign uuid[];
  v_phase app.campaign_phases;
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
      values (app.current_organization_id(), app.current_workspace_id(), p_campaign_id, btrim(v_item ->> 'name'),
        lower(v_item ->> 'color'), (v_item ->> 'startsOn')::date, (v_item ->> 'endsOn')::date, v_ord - 1);
    end if;
  end loop;
end
$$;

create or replace function api.create_campaign(p_name text, p_description text, p_color text,
  p_starts_on date, p_ends_on date, p_phases jsonb)
returns jsonb
language plpgsql volatile
as $$
declare
  v app.campaigns;
begin
  perform app.require_role('editor');
  perform app.check_date_range(p_starts_on, p_ends_on);
  insert into app.campaigns (organization_id, workspace_id, name, description, color, starts_on, ends_on, created_by)
  values (app.current_organization_id(), app.current_workspace_id(), btrim(p_name), p_description, lower(p_color),
    p_starts_on, p_ends_on, app.current_user_id())
  returning * into v;
  if p_phases is not null then
    perform app.save_campaign_phases(v.id, p_phases);
  end if;
  return app.campaign_json(v, true);
end
$$;

-- p_patch: the provided fields only; description, color and dates may be null.
create or replace function api.update_campaign(p_id uuid, p_patch jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v app.campaigns;
  v_patch jsonb := coalesce(p_patch, '{}'::jsonb);
begin
  perform app.require_role('editor');
  v := app.campaign_for_update(p_id);
  if v_patch ? 'name' then v.name := btrim(v_patch ->> 'name'); end if;
  if v_patch ? 'description' then v.description := v_patch ->> 'description'; end if;
  if v_patch ? 'color' then v.color := lower(v_patch ->> 'color'); end if;
  if v_patch ? 'startsOn' then v.starts_on := (v_patch ->> 'startsOn')::date; end if;
  if v_patch ? 'endsOn' then v.ends_on := (v_patch ->> 'endsOn')::date; end if;
  perform app.check_date_range(v.starts_on, v.ends_on);
  update app.campaigns c set name = v.name, description = v.description, color = v.color,
    starts_on = v.starts_on, ends_on = v.ends_on
  where c.id = p_id
  returning * into v;
  return app.campaign_json(v, true);
end
$$;

-- Deletes the campaign and its phases; its content stays, unassigned.
-- contentUnassigned counts the editions (what the campaign content page
-- listed), rootsUnassigned the content roots, ideas without editions included.
create or replace function api.delete_campaign(p_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v app.campaigns;
  v_editions int;
  v_roots int;
begin
  perform app.require_role('editor');
  v := app.campaign_for_update(p_id);
  select count(*)::int into v_editions
  from app.content_items i join app.content_roots r on r.id = i.root_id
  where r.campaign_id = p_id and r.workspace_id = app.current_workspace_id()
    and r.deleted_at is null and i.deleted_at is null;
  select count(*)::int into v_roots from app.content_roots r
  where r.campaign_id = p_id and r.workspace_id = app.current_workspace_id() and r.deleted_at is null;
  update app.content_roots r set campaign_id = null, phase_id = null
  where r.campaign_id = p_id and r.workspace_id = app.current_workspace_id();
  delete from app.campaigns c where c.id = p_id;
  return jsonb_build_object('id', p_id, 'deleted', true, 'contentUnassigned', v_editions, 'rootsUnassigned', v_roots);
end
$$;

create or replace function api.list_campaign_phases(p_campaign_id uuid) returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  return app.campaign_phases_json((app.campaign_visible(p_campaign_id)).id);
end
$$;

create or replace function api.create_campaign_phase(p_campaign_id uuid, p_name text, p_color text,
  p_starts_on date, p_ends_on date, p_position int)
returns jsonb
language plpgsql volatile
as $$
declare
  v_campaign app.campaigns;
  v app.campaign_phases;
begin
  perform app.require_role('editor');
  v_campaign := app.campaign_for_update(p_campaign_id);
  perform app.check_date_range(p_starts_on, p_ends_on);
  insert into app.campaign_phases (organization_id, workspace_id, campaign_id, name, color, starts_on, ends_on, position)
  values (app.current_organization_id(), app.current_workspace_id(), v_campaign.id, btrim(p_name), lower(p_color),
    p_starts_on, p_ends_on, 2147483647)
  returning * into v;
  perform app.place_campaign_phase(v_campaign.id, v.id, p_position);
  select * into v from app.campaign_phases p where p.id = v.id;
  return app.campaign_phase_json(v);
end
$$;

create or replace function app.campaign_phase_for_update(p_campaign_id uuid, p_phase_id uuid) returns app.campaign_phases
language plpgsql volatile
as $$
declare
  v app.campaign_phases;
begin
  perform app.campaign_for_update(p_campaign_id);
  select * into v from app.campaign_phases p where p.id = p_phase_id and p.campaign_id = p_campaign_id for update;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No phase with this id in this campaign.',
      jsonb_build_object('campaignId', p_campaign_id, 'phaseId', p_phase_id));
  end if;
  return v;
end
$$;

create or replace function api.update_campaign_phase(p_campaign_id uuid, p_phase_id uuid, p_patch jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v app.campaign_phases;
  v_patch jsonb := coalesce(p_patch, '{}'::jsonb);
begin
  perform app.require_role('editor');
  v := app.campaign_phase_for_update(p_campaign_id, p_phase_id);
  if v_patch ? 'name' then v.name := btrim(v_patch ->> 'name'); end if;
  if v_patch ? 'color' then v.color := lower(v_patch ->> 'color'); end if;
  if v_patch ? 'startsOn' then v.starts_on := (v_patch ->> 'startsOn')::date; end if;
  if v_patch ? 'endsOn' then v.ends_on := (v_patch ->> 'endsOn')::date; end if;
  perform app.check_date_range(v.starts_on, v.ends_on);
  update app.campaign_phases p set name = v.name, color = v.color, starts_on = v.starts_on, ends_on = v.ends_on
  where p.id = v.id;
  if v_patch ? 'position' and v_patch ->> 'position' is not null then
    perform app.place_campaign_phase(p_campaign_id, v.id, (v_patch ->> 'position')::int);
  end if;
  select * into v from app.campaign_phases p where p.id = p_phase_id;
  return app.campaign_phase_json(v);
end
$$;

create or replace function api.delete_campaign_phase(p_campaign_id uuid, p_phase_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v app.campaign_phases;
  v_unassigned int;
begin
  perform app.require_role('editor');
  v := app.campaign_phase_for_update(p_campaign_id, p_phase_id);
  update app.content_roots r set phase_id = null
  where r.phase_id = v.id and r.workspace_id = app.current_workspace_id();
  get diagnostics v_unassigned = row_count;
  delete from app.campaign_phases p where p.id = v.id;
  perform app.place_campaign_phase(p_campaign_id, null, null);
  return jsonb_build_object('id', v.id, 'deleted', true, 'rootsUnassigned', v_unassigned);
end
$$;

create or replace function api.save_campaign_phases(p_campaign_id uuid, p_phases jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v app.campaigns;
begin
  perform app.require_role('editor');
  v := app.campaign_for_update(p_campaign_id);
  perform app.save_campaign_phases(v.id, p_phases);
  return app.campaign_json(v, true);
end
$$;

-- The campaign content page: the campaign's live editions, filtered,
-- ordered by their date (scheduled, else intended publish time, else
-- creation), then id. Returns { data, meta: { limit, offset, total, hasMore } }.
create or replace function api.list_campaign_content(p_campaign_id uuid, p_limit int, p_offset bigint,
  p_phase text, p_status text, p_platform text, p_sort_direction text)
returns jsonb
language plpgsql stable
as $$
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
    join app.content_roots r on r.id = i.root_id
    join app.integrations g on g.id = i.integration_id
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
    join app.content_roots r on r.id = i.root_id
    join app.integrations g on g.id = i.integration_id
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
$$;

------------------------------------------------------------------------------
-- Execute grants for the functions of this file (new functions are
-- executable by PUBLIC until revoked).
------------------------------------------------------------------------------
do $$
declare
  f regprocedure;
begin
  for f in
    select p.oid::regprocedure from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where (n.nspname = 'api' and p.proname = any (array[
             'list_integrations', 'get_integration', 'integration_for_listing', 'create_integration', 'delete_integration',
             'list_taxonomy_terms', 'create_taxonomy_term', 'update_taxonomy_term', 'delete_taxonomy_term',
             'list_hashtag_groups', 'create_hashtag_group', 'update_hashtag_group', 'delete_hashtag_group',
             'list_campaigns', 'get_campaign', 'create_campaign', 'update_campaign', 'delete_campaign',
             'list_campaign_phases', 'create_campaign_phase', 'update_campaign_phase', 'delete_campaign_phase',
             'save_campaign_phases', 'list_campaign_content']))
       or (n.nspname = 'app' and p.proname = any (array[
             'check_date_range', 'like_escape', 'platform_rules_json', 'platform_capabilities_json', 'integration_json',
             'tg_content_items_check_integration', 'tg_taxonomy_normalize', 'normalize_hashtags', 'tg_hashtag_groups_normalize',
             'taxonomy_table', 'taxonomy_noun', 'hashtag_group_json', 'tg_campaign_phases_check_campaign',
             'tg_content_roots_check_campaign', 'campaign_phase_json', 'campaign_phases_json', 'campaign_json',
             'campaign_for_update', 'campaign_visible', 'place_campaign_phase', 'save_campaign_phases',
             'campaign_phase_for_update']))
  loop
    execute format('revoke all on function %s from public', f);
    execute format('grant execute on function %s to pressroom_request, pressroom_definer', f);
  end loop;
end
$$;
