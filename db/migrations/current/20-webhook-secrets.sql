-- Webhook secrets follow the Standard Webhooks convention.
--
-- A new webhook integration's secret is `whsec_` followed by the base64 of 24
-- to 64 bytes of key material (https://www.standardwebhooks.com: the HMAC key
-- is the decoded bytes), so receivers pass it as is to a Standard Webhooks
-- library (`new Webhook(secret)` of the `standardwebhooks` npm package). The
-- server issues one (32 random bytes, server/platforms/webhook.ts
-- issueWebhookSecret) when the request names none, and shows it once
-- (server/routes/integrations.ts); a secret given by the caller must have the
-- same form. Integrations created earlier may hold a secret without the
-- prefix, documented then as raw: they are left as they are (the table's
-- check integrations_webhook_secret_length still admits them) and are still
-- signed with the secret's UTF-8 bytes as the key (webhookSecretKey in
-- server/platforms/webhook.ts). Proved in tests/db/09-members.test.sql
-- (section "webhook secrets") and tests/api/integrations.test.ts.

-- Length of the key material of a Standard Webhooks secret `whsec_<base64>`;
-- null when the text is not one, or its key is not 24 to 64 bytes.
create or replace function app.webhook_secret_key_length(p_secret text) returns int
language plpgsql immutable as $$
declare
  v_len int;
begin
  if p_secret is null or p_secret !~ '^whsec_[A-Za-z0-9+/]+={0,2}$' or length(p_secret) > 6 + 88 then
    return null;
  end if;
  begin
    v_len := length(decode(substr(p_secret, 7), 'base64'));
  exception when others then
    return null;
  end;
  return case when v_len between 24 and 64 then v_len end;
end
$$;
revoke all on function app.webhook_secret_key_length(text) from public;
grant execute on function app.webhook_secret_key_length(text) to pressroom_api, pressroom_definer, pressroom_worker;
comment on function app.webhook_secret_key_length(text) is
  'Bytes of key material of a Standard Webhooks secret whsec_<base64> (24 to 64), or null when the text is not such a secret; api.create_integration refuses new secrets for which it is null.';

create or replace function api.create_integration(p_connector text, p_platform text, p_name text, p_username text, p_settings jsonb, p_webhook_url text, p_webhook_secret text)
returns jsonb
language plpgsql as $function$
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
    if app.webhook_secret_key_length(p_webhook_secret) is null then
      perform app.raise(400, 'VALIDATION_FAILED',
        'secret must be a Standard Webhooks secret: whsec_ followed by the base64 of 24 to 64 random bytes (omit it and one is issued).',
        jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.secret', 'code', 'format',
          'message', 'must be whsec_ followed by the base64 of 24 to 64 bytes'))));
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
$function$;

comment on function api.create_integration(text,text,text,text,jsonb,text,text) is
  'Serves POST /v1/workspaces/{workspaceId}/integrations (createIntegration_v1). Connects an account through a connector that needs no OAuth '
  '(sandbox, or webhook whose URL the server resolved and checked before this call, with a Standard Webhooks secret whsec_<base64 of 24 to 64 bytes>, '
  'issued by the server when the request names none) and normalizes its settings. Requires the manager role; raises 400 UNKNOWN_CONNECTOR, '
  'UNKNOWN_PLATFORM, INVALID_SETTINGS, INVALID_WEBHOOK_URL and VALIDATION_FAILED.';

select app.harden_api_functions();
