--! Previous: sha1:815f25d1883cf43ed291d805ed51054cd198a4b7
--! Hash: sha1:7e0f828ac1f9894ea10ed65f4b0f5d9f21ee5ed2
--! Message: connection state as its caller

--! split: 01-current.sql
-- One role per workspace shard in a transaction (docs/citus.md, "Where the schema stands").
--
-- Citus opens its connections to the workers as the current role, and refuses to touch a shard
-- modified earlier in the transaction by another role ("cannot perform query on placements that
-- were modified in this transaction by a different user"; Citus's own regression test
-- set_role_in_transaction). A SECURITY DEFINER helper that reads a workspace table after the
-- calling function wrote it as another owner therefore fails on the cluster: creating a channel
-- (api.create_integration, owned by pressroom_api, inserts it) then answering it
-- (app.integration_json -> app.integration_connection_json, owned by pressroom_definer) did.
--
-- The rule from here: a helper that only builds an answer runs as its caller (SECURITY INVOKER),
-- and the caller's role holds what it reads. A helper stays a definer only where it is a
-- privilege boundary (it reads a secret, or across tenants), and then the function that calls it
-- runs as the same owner.
--
-- app.integration_connection_json reads a channel's credential state (expiry, refresh failures),
-- not its secret. pressroom_api now reads those columns of app.integration_credentials in the
-- request's workspace (the tenant select policy of app.apply_tenant_policies); the ciphertext and
-- its key version stay unreadable to it, and requests and BI still hold nothing on the table.

select app.apply_tenant_policies('app.integration_credentials', '{select}');
-- apply_tenant_policies gives the worker every command; it reads credentials only (as in 000030).
revoke all on app.integration_credentials from pressroom_worker;
grant select on app.integration_credentials to pressroom_worker;
grant select (workspace_id, organization_id, integration_id, expires_at, refresh_expires_at, refreshable,
              has_refresh_token, refresh_failures, last_refresh_error)
  on app.integration_credentials to pressroom_api;

comment on table app.integration_credentials is 'A connected account''s tokens (access, refresh, expiry, scopes, and what the connector keeps with them), as one vault ciphertext bound to integration:<id> (server/platforms/vault.ts, AES-256-GCM, key_version for rotation), with the expiry times in clear for the refresh job and has_refresh_token so that no write replaces a refresh token with none (409 REFRESH_TOKEN_DROPPED). The ciphertext and key_version are never granted to requests, pressroom_api or BI, never in an answer, a log, an audit row or an idempotency replay: written by pressroom_definer functions (connect, reconnect, the worker''s credentials_store), read by the worker (app.credentials_for, app.credentials_lock). pressroom_api reads the state columns (expiry, refresh failures and error) in the request''s workspace, for the channel''s connection state (app.integration_connection_json, 000055).';

alter function app.integration_connection_json(uuid, uuid) security invoker;
comment on function app.integration_connection_json(uuid, uuid) is 'An integration''s connection for its JSON: accountId, instanceUrl, connectionState (ok; expiring: the hard expiry, the refresh token''s or a token that cannot be refreshed, is within 7 days; refresh_failing: the last refreshes failed and are retried; reconnect_required), connectionReason and credentialsExpireAt. No secret. Runs as its caller (000055: on a Citus cluster a definer here, after the caller wrote the channel as another role, is refused), so the caller reads the credential state columns: pressroom_api in the request''s workspace, the worker and pressroom_definer everywhere.';

-- app.integration_json built its answer in one query over the channel, calling the platform's
-- rules and capabilities per row; on the cluster that query runs on the channel's shard, where
-- the helpers' read of app.platforms is refused ("cannot execute a distributed query from a
-- query on a shard"). It reads the channel and its platform into values first, then calls the
-- helpers, then builds the JSON (the pattern of 000052).
CREATE OR REPLACE FUNCTION app.integration_json(p_id uuid, p_detail boolean DEFAULT false)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
declare
  v_i record;
  v_platform_name text;
  v_can_articles boolean;
  v_connection jsonb;
begin
  select i.id, i.workspace_id, i.connector, i.platform, i.name, i.username, i.status, i.created_at, i.updated_at,
         i.settings, i.webhook_url
    into v_i
    from app.integrations i where i.id = p_id;
  if not found then
    return null;
  end if;
  select p.name, coalesce((p.capabilities ->> 'canPublishArticles')::boolean, false)
    into v_platform_name, v_can_articles
    from app.platforms p where p.code = v_i.platform;
  v_connection := app.integration_connection_json(p_id, v_i.workspace_id);
  return jsonb_build_object(
      'id', v_i.id,
      'connector', v_i.connector,
      'platform', v_i.platform,
      'name', v_i.name,
      'username', v_i.username,
      'status', v_i.status,
      'content', jsonb_build_object('canPublishArticles', v_can_articles),
      'createdAt', v_i.created_at,
      'updatedAt', v_i.updated_at)
    || v_connection
    || case when p_detail then jsonb_build_object(
      'platformName', v_platform_name,
      'rules', app.platform_rules_json(v_i.platform),
      'capabilities', app.platform_capabilities_json(v_i.platform),
      'settings', v_i.settings,
      'webhookUrl', v_i.webhook_url)
    else '{}'::jsonb end;
end
$function$;

-- Triggers of app.content_items, first step. A trigger runs where the row is: on the cluster, on
-- the workspace's shard. There Citus runs a query of the trigger that stays on this node's shards
-- (a workspace's rows of every table are on one node: the tables are colocated) and refuses one
-- that would reach another node (Citus's executor allows local tasks in triggers:
-- multi_executor.c, IsTaskExecutionAllowed). So a trigger reads another workspace table by the
-- row's workspace_id: the channel is locked by (workspace_id, id), which also finds no channel of
-- another workspace, as the lookup by id and the comparison did.
CREATE OR REPLACE FUNCTION app.tg_content_items_check_integration()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v record;
begin
  if tg_op = 'UPDATE' and new.integration_id = old.integration_id
     and not (new.status = 'scheduled' and old.status is distinct from 'scheduled') then
    return new;
  end if;
  -- KEY SHARE: a concurrent delete_integration (FOR UPDATE) waits for us,
  -- and we see its committed deleted_at.
  select i.deleted_at into v from app.integrations i
  where i.workspace_id = new.workspace_id and i.id = new.integration_id for key share;
  if not found then
    perform app.raise(404, 'INTEGRATION_NOT_FOUND', 'No integration with this id in this workspace.',
      jsonb_build_object('integrationId', new.integration_id));
  end if;
  if v.deleted_at is not null then
    perform app.raise(409, 'INTEGRATION_DELETED', 'This integration was deleted; choose another channel.',
      jsonb_build_object('integrationId', new.integration_id, 'deletedAt', v.deleted_at));
  end if;
  return new;
end
$function$;
