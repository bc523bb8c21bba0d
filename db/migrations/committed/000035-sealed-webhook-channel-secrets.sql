--! Previous: sha1:b9f385e57fe3978b3a642f2ca489c0aa198d9a36
--! Hash: sha1:b9ca9941821e0f59a6fda511a57e8e71b92a7686
--! Message: sealed webhook channel secrets

--! split: 01-current.sql
-- A webhook channel's signing secret is stored sealed with the credential vault
-- (AES-256-GCM, the key outside the database; server/platforms/webhook-secret.ts),
-- like connected accounts' tokens and lifecycle webhooks' secrets, instead of in
-- the clear. app.integrations.webhook_secret holds `prv1:<base64 of the vault
-- ciphertext>`; the worker opens it to sign. api.create_integration still checks
-- the secret the request gave (or the server issued) and stores the sealed form
-- the route made. Secrets stored in the clear before are sealed by the server at
-- start and by `npx pressroom credentials rotate` (app.vault_ciphertexts lists them
-- as key version 0, app.vault_rekey writes them where the row still holds what
-- was read).

drop function if exists api.create_integration(text,text,text,text,jsonb,text,text);

create or replace function api.create_integration(p_connector text, p_platform text, p_name text, p_username text, p_settings jsonb, p_webhook_url text, p_webhook_secret text, p_webhook_secret_sealed text)
returns jsonb
language plpgsql
security definer
set search_path = pg_catalog, public, pg_temp
as $function$
declare
  v_id uuid;
  v_settings jsonb := coalesce(p_settings, '{}'::jsonb);
  v_bad text[];
  v_conn app.connectors;
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
  values (app.current_organization_id(), app.current_workspace_id(), p_connector, p_platform, btrim(p_name),
    nullif(btrim(p_username), ''), v_settings,
    case when p_connector = 'webhook' then p_webhook_url end,
    case when p_connector = 'webhook' then p_webhook_secret_sealed end,
    app.current_user_id())
  returning id into v_id;
  return app.integration_json(v_id, true);
end
$function$;
alter function api.create_integration(text,text,text,text,jsonb,text,text,text) owner to pressroom_api;
comment on function api.create_integration(text,text,text,text,jsonb,text,text,text) is 'Serves POST /v1/workspaces/{workspaceId}/integrations (createIntegration_v1). Connects an account through a connector of app.connectors that needs no sign-in (sandbox, or webhook whose URL the server resolved and checked before this call, with a Standard Webhooks secret whsec_<base64 of 24 to 64 bytes>, issued by the server when the request names none, checked here and stored only as p_webhook_secret_sealed, sealed by the route with the credential vault) and normalizes its settings. Requires the manager role; raises 400 UNKNOWN_CONNECTOR, CONNECT_FLOW_REQUIRED (an OAuth or password connector), PLATFORM_NOT_SUPPORTED, UNKNOWN_PLATFORM, INVALID_SETTINGS, INVALID_WEBHOOK_URL and VALIDATION_FAILED.';
grant execute on function api.create_integration(text,text,text,text,jsonb,text,text,text) to pressroom_definer;
grant execute on function api.create_integration(text,text,text,text,jsonb,text,text,text) to pressroom_request;
revoke all on function api.create_integration(text,text,text,text,jsonb,text,text,text) from public;

-- The key version of a sealed webhook secret (bytes 4-5 of the ciphertext), 0 for one stored in the clear.
create or replace function app.webhook_secret_key_version(p_stored text)
returns integer
language sql
immutable
set search_path = pg_catalog
as $$
  select case when left(p_stored, 5) = 'prv1:'
              then get_byte(decode(substr(p_stored, 6), 'base64'), 4) * 256 + get_byte(decode(substr(p_stored, 6), 'base64'), 5)
              else 0 end
$$;
comment on function app.webhook_secret_key_version(text) is 'The credential key version a webhook channel''s stored secret is sealed with (prv1:<base64>, bytes 4-5 of the ciphertext), or 0 when it is stored in the clear (written before db/migrations/committed/000035, sealed at the next start).';
revoke all on function app.webhook_secret_key_version(text) from public;
grant execute on function app.webhook_secret_key_version(text) to pressroom_definer;

create or replace function app.vault_ciphertexts(p_below_version integer)
returns jsonb
language sql
stable
security definer
set search_path = pg_catalog, app
as $$
  select jsonb_build_object(
    'credentials', coalesce((select jsonb_agg(jsonb_build_object('integrationId', c.integration_id, 'ciphertext', encode(c.ciphertext, 'base64'),
        'keyVersion', c.key_version) order by c.integration_id)
      from app.integration_credentials c where c.key_version < p_below_version), '[]'),
    'apps', coalesce((select jsonb_agg(jsonb_build_object('id', a.id, 'ciphertext', encode(a.secret_ciphertext, 'base64')) order by a.id)
      from app.platform_apps a where a.secret_ciphertext is not null
        and get_byte(a.secret_ciphertext, 4) * 256 + get_byte(a.secret_ciphertext, 5) < p_below_version), '[]'),
    'webhookSecrets', coalesce((select jsonb_agg(jsonb_build_object('id', g.id, 'stored', g.webhook_secret) order by g.id)
      from app.integrations g where g.webhook_secret is not null and app.webhook_secret_key_version(g.webhook_secret) < p_below_version), '[]'))
$$;
comment on function app.vault_ciphertexts(integer) is 'The credential ciphertexts, platform app secrets and webhook channel secrets made with a key version below p_below_version (the version is bytes 4-5 of a vault ciphertext; a webhook secret stored in the clear is version 0), for npx pressroom credentials rotate and, with 1, for the server''s start (server/platforms/rekey.ts). OAuth states and pending connections are left to expire (10 and 30 minutes).';

create or replace function app.vault_rekey(p_rows jsonb)
returns jsonb
language plpgsql
security definer
set search_path = pg_catalog, app
as $$
declare
  v jsonb;
  v_creds int := 0;
  v_apps int := 0;
  v_hooks int := 0;
  v_rows int;
begin
  -- p_rows: {credentials: [{integrationId, ciphertext, keyVersion, was}], apps: [{id, ciphertext, was}],
  -- webhookSecrets: [{id, stored, was}]}; `was` is what was read, so a row changed meanwhile is left as it is.
  for v in select * from jsonb_array_elements(coalesce(p_rows -> 'credentials', '[]')) loop
    update app.integration_credentials set ciphertext = decode(v ->> 'ciphertext', 'base64'), key_version = (v ->> 'keyVersion')::int
    where integration_id = (v ->> 'integrationId')::uuid and ciphertext = decode(v ->> 'was', 'base64');
    get diagnostics v_rows = row_count;
    v_creds := v_creds + v_rows;
  end loop;
  for v in select * from jsonb_array_elements(coalesce(p_rows -> 'apps', '[]')) loop
    update app.platform_apps set secret_ciphertext = decode(v ->> 'ciphertext', 'base64')
    where id = (v ->> 'id')::uuid and secret_ciphertext = decode(v ->> 'was', 'base64');
    get diagnostics v_rows = row_count;
    v_apps := v_apps + v_rows;
  end loop;
  for v in select * from jsonb_array_elements(coalesce(p_rows -> 'webhookSecrets', '[]')) loop
    if left(v ->> 'stored', 5) <> 'prv1:' then
      raise exception 'app.vault_rekey: a webhook secret is written sealed (prv1:...) only';
    end if;
    update app.integrations set webhook_secret = v ->> 'stored'
    where id = (v ->> 'id')::uuid and webhook_secret = v ->> 'was';
    get diagnostics v_rows = row_count;
    v_hooks := v_hooks + v_rows;
  end loop;
  return jsonb_build_object('credentials', v_creds, 'apps', v_apps, 'webhookSecrets', v_hooks);
end
$$;
comment on function app.vault_rekey(jsonb) is 'Writes re-encrypted ciphertexts and sealed webhook channel secrets (npx pressroom credentials rotate, the server''s start), each only where the row still holds what was read.';
