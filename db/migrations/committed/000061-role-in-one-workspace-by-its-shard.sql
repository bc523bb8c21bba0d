--! Previous: sha1:c16edcd7f5a274fa6419121e02bace99eeb12c10
--! Hash: sha1:5a7e4444ac00b1725ac2bdef86e232a2214afcef
--! Message: role in one workspace by its shard

--! split: 01-current.sql
-- A principal's role in one workspace, read on that workspace's shard (docs/citus.md, "The cost of
-- the hop").
--
-- Every request's gate asked for the principal's roles in all its workspaces
-- (app.user_workspace_roles, app.api_key_workspace_roles) and kept the one of the requested
-- workspace. On a Citus cluster app.workspace_members and app.api_key_workspaces are distributed
-- by workspace, so that lookup by user or key asked all 32 shards on every request (the citus
-- bench: the workers' statement log during one content list). Both functions now take the
-- workspace too (optional): given, their statements carry it and Citus routes them to its shard;
-- the rule (which roles, which users and keys count) stays written once, the workspace a
-- predicate added to the same statements.

drop function app.user_workspace_roles(uuid);
drop function app.api_key_workspace_roles(uuid);

CREATE OR REPLACE FUNCTION app.user_workspace_roles(p_user_id uuid, p_workspace_id uuid DEFAULT NULL::uuid)
 RETURNS TABLE(workspace_id uuid, role text)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  -- Organization owners and admins manage every workspace of their organization (reference tables).
  return query execute format($q$
    select w.id, 'manager'::text
    from app.users u
    join app.workspaces w on w.organization_id = u.organization_id
    where u.id = $1 and u.status = 'active' and u.org_role in ('owner', 'admin') %s$q$,
    case when p_workspace_id is not null then 'and w.id = $2' else '' end)
    using p_user_id, p_workspace_id;
  -- Members have the role of their membership (app.workspace_members: by workspace, its shard).
  return query execute format($q$
    select m.workspace_id, m.role
    from app.users u
    join app.workspace_members m on m.user_id = u.id and m.organization_id = u.organization_id
    where u.id = $1 and u.status = 'active' and u.org_role = 'member' %s$q$,
    case when p_workspace_id is not null then 'and m.workspace_id = $2' else '' end)
    using p_user_id, p_workspace_id;
end
$function$;
alter function app.user_workspace_roles(uuid, uuid) owner to pressroom_definer;
comment on function app.user_workspace_roles(uuid, uuid) is 'The workspaces a user may act in, with the role: every workspace of the organization as manager for an active owner or admin, the workspaces of its memberships with their role for an active member. With p_workspace_id, that workspace only, read on its shard on a Citus cluster (000061).';
revoke all on function app.user_workspace_roles(uuid, uuid) from public;
grant execute on function app.user_workspace_roles(uuid, uuid) to pressroom_api, pressroom_worker;

CREATE OR REPLACE FUNCTION app.api_key_workspace_roles(p_api_key_id uuid, p_workspace_id uuid DEFAULT NULL::uuid)
 RETURNS TABLE(workspace_id uuid, role text)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
declare
  v_key app.api_keys;
  v_granted uuid[];
begin
  select * into v_key from app.api_keys k
  where k.id = p_api_key_id and k.revoked_at is null and (k.expires_at is null or k.expires_at > now());
  if v_key.id is null then
    return;
  end if;
  -- The workspaces granted to the key (app.api_key_workspaces: by workspace, its shard when given).
  execute format($q$select array(select g.workspace_id from app.api_key_workspaces g where g.api_key_id = $1 %s)$q$,
    case when p_workspace_id is not null then 'and g.workspace_id = $2' else '' end)
    into v_granted using p_api_key_id, p_workspace_id;
  return query
  select c.workspace_id,
         case when app.role_rank(v_key.role) <= app.role_rank(c.role) then v_key.role else c.role end
  from app.user_workspace_roles(v_key.created_by, p_workspace_id) c
  where c.workspace_id = any (v_granted);
end
$function$;
alter function app.api_key_workspace_roles(uuid, uuid) owner to pressroom_definer;
comment on function app.api_key_workspace_roles(uuid, uuid) is 'The workspaces an unrevoked, unexpired API key may act in: those granted to it where its creator may still act, with the lower of the key''s role and the creator''s. With p_workspace_id, that workspace only, read on its shard on a Citus cluster (000061).';
revoke all on function app.api_key_workspace_roles(uuid, uuid) from public;
grant execute on function app.api_key_workspace_roles(uuid, uuid) to pressroom_api, pressroom_worker;

CREATE OR REPLACE FUNCTION app.gate_with_limit(p_token_hash bytea, p_workspace_id uuid, p_class text, p_limit integer, p_min_plan text DEFAULT 'basic'::text, p_bucket text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_principal jsonb;
  v_user app.users;
  v_key app.api_keys;
  v_org app.organizations;
  v_session_id uuid;
  v_role text;
  v_rate jsonb;
begin
  if p_token_hash is null then
    if p_bucket is null then
      return jsonb_build_object('error', jsonb_build_object('status', 401, 'code', 'UNAUTHENTICATED',
        'message', 'Send a bearer credential: Authorization: Bearer <API key or session token>.'));
    end if;
    -- Anonymous routes (sign-up, sign-in) are limited per client bucket.
    v_rate := app.rate_limit_hit(p_bucket, p_class, p_limit);
    if not (v_rate ->> 'allowed')::boolean then
      return jsonb_build_object('rate', v_rate, 'error', jsonb_build_object('status', 429, 'code', 'RATE_LIMITED',
        'message', 'Too many requests; retry after the time in Retry-After.'));
    end if;
    return jsonb_build_object('rate', v_rate);
  end if;

  select s.id into v_session_id
  from app.sessions s
  where s.token_hash = p_token_hash and s.revoked_at is null and s.expires_at > now();
  if v_session_id is not null then
    select u.* into v_user from app.users u join app.sessions s on s.user_id = u.id
    where s.id = v_session_id and u.status = 'active';
  end if;

  if v_user.id is not null then
    v_principal := jsonb_build_object('actorKind', 'user', 'userId', v_user.id,
      'sessionId', v_session_id, 'organizationId', v_user.organization_id, 'orgRole', v_user.org_role);
  else
    select * into v_key from app.api_keys where key_hash = p_token_hash;
    if v_key.id is null then
      return jsonb_build_object('error', jsonb_build_object('status', 401, 'code', 'UNAUTHENTICATED',
        'message', 'The bearer credential is not a valid API key or session token.'));
    end if;
    v_principal := jsonb_build_object('actorKind', 'api_key', 'apiKeyId', v_key.id,
      'apiKeyPrefix', v_key.key_prefix, 'organizationId', v_key.organization_id,
      'userId', v_key.created_by);
    if v_key.revoked_at is not null then
      return jsonb_build_object('principal', v_principal, 'error', jsonb_build_object('status', 401,
        'code', 'KEY_REVOKED', 'message', 'This API key was revoked.'));
    end if;
    if v_key.expires_at is not null and v_key.expires_at <= now() then
      return jsonb_build_object('principal', v_principal, 'error', jsonb_build_object('status', 401,
        'code', 'KEY_EXPIRED', 'message', format('This API key expired at %s.', v_key.expires_at)));
    end if;
    if v_key.last_used_at is null or v_key.last_used_at < now() - interval '5 seconds' then
      update app.api_keys set last_used_at = now() where id = v_key.id;
    end if;
  end if;

  select * into v_org from app.organizations where id = (v_principal ->> 'organizationId')::uuid;
  v_principal := v_principal || jsonb_build_object('plan', v_org.plan);
  if v_org.plan = 'trial' and v_org.trial_ends_at <= now() then
    return jsonb_build_object('principal', v_principal, 'error', jsonb_build_object('status', 401,
      'code', 'PLAN_REQUIRED',
      'message', format('The free trial of this organization ended at %s; an owner must choose a paid plan.', v_org.trial_ends_at),
      'details', jsonb_build_object('plan', v_org.plan, 'trialEndedAt', v_org.trial_ends_at)));
  end if;
  if app.plan_rank(v_org.plan) < app.plan_rank(p_min_plan) then
    return jsonb_build_object('principal', v_principal, 'error', jsonb_build_object('status', 401,
      'code', 'PLAN_REQUIRED',
      'message', format('This route needs the %s plan or higher; this organization is on %s.', p_min_plan, v_org.plan),
      'details', jsonb_build_object('plan', v_org.plan, 'requiredPlan', p_min_plan)));
  end if;

  if p_workspace_id is not null then
    if v_principal ->> 'actorKind' = 'api_key' then
      select r.role into v_role from app.api_key_workspace_roles(v_key.id, p_workspace_id) r where r.workspace_id = p_workspace_id;
    else
      select r.role into v_role from app.user_workspace_roles(v_user.id, p_workspace_id) r where r.workspace_id = p_workspace_id;
    end if;
    if v_role is null then
      return jsonb_build_object('principal', v_principal, 'error', jsonb_build_object('status', 403,
        'code', 'WORKSPACE_FORBIDDEN',
        'message', 'The credential has no access to this workspace.',
        'details', jsonb_build_object('workspaceId', p_workspace_id)));
    end if;
  end if;

  v_rate := app.rate_limit_hit(coalesce(p_workspace_id::text, 'principal:' || coalesce(v_key.id, v_user.id)::text),
                               p_class, p_limit);
  if not (v_rate ->> 'allowed')::boolean then
    return jsonb_build_object('principal', v_principal, 'workspaceId', p_workspace_id, 'workspaceRole', v_role,
      'rate', v_rate, 'error', jsonb_build_object('status', 429, 'code', 'RATE_LIMITED',
        'message', format('The %s limit of %s requests per minute for this workspace is used up; retry after %s s.',
                          p_class, p_limit, v_rate ->> 'reset'),
        'details', jsonb_build_object('class', p_class, 'limit', p_limit, 'retryAfter', (v_rate ->> 'reset')::int)));
  end if;

  return jsonb_build_object('principal', v_principal, 'workspaceId', p_workspace_id,
    'workspaceRole', v_role, 'rate', v_rate);
end
$function$;
CREATE OR REPLACE FUNCTION app.principal_role_in(p_user uuid, p_key uuid, p_ws uuid)
 RETURNS text
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
#variable_conflict use_column
begin
  return (
    select case
      when p_key is not null then (select r.role from app.api_key_workspace_roles(p_key, p_ws) r where r.workspace_id = p_ws)
      else (select r.role from app.user_workspace_roles(p_user, p_ws) r
            join app.users u on u.id = p_user and u.status = 'active'
            where r.workspace_id = p_ws)
    end
  );
end
$function$;
