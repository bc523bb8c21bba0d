--! Previous: sha1:c3192cf5e627133eb2d6a746dea5d15487828f88
--! Hash: sha1:eaf3008482c25b83644e5f8e42e14226e638dbd7
--! Message: startup on citus

--! split: 04-startup-on-citus.sql
-- The functions every process runs at start work on a distributed schema (docs/citus.md,
-- "Functions"): server/db/migrate.ts declares the connectors after migrating. On Citus,
-- app.connectors is a reference table: an INSERT ... VALUES into it cannot hold a subquery,
-- ON CONFLICT DO UPDATE cannot call now(), and a DELETE of it cannot read the distributed
-- app.integrations. The same rule, with the values computed first.
CREATE OR REPLACE FUNCTION app.declare_connectors(p_connectors jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v jsonb;
  v_names text[] := '{}';
  v_bad text;
  v_changed int := 0;
  v_rows int;
  v_kept text[];
  v_oauth boolean;
  v_platforms text[];
  v_used text[];
  v_now timestamptz := now();
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
    -- The values computed first: Citus takes no subquery in an INSERT ... VALUES into a reference
    -- table, nor now() in ON CONFLICT DO UPDATE.
    v_platforms := array(select jsonb_array_elements_text(v -> 'platforms') order by 1);
    insert into app.connectors as c (name, platforms, connect, oauth)
    values (v ->> 'name', v_platforms, v ->> 'connect', v_oauth)
    on conflict (name) do update set platforms = excluded.platforms, connect = excluded.connect, oauth = excluded.oauth, declared_at = v_now
    where (c.platforms, c.connect, c.oauth) is distinct from (excluded.platforms, excluded.connect, excluded.oauth);
    get diagnostics v_rows = row_count;
    v_changed := v_changed + v_rows;
    v_names := v_names || (v ->> 'name');
  end loop;
  -- A connector no longer in the registry goes, unless integrations still name it.
  -- (The connectors in use read first: on Citus app.connectors is a reference table and
  -- app.integrations is distributed, and a DELETE of the one cannot read the other.)
  select coalesce(array_agg(distinct i.connector), '{}') into v_used from app.integrations i;
  delete from app.connectors c where c.name <> all (v_names) and c.name <> all (v_used);
  select array_agg(name order by name) into v_kept from app.connectors where name <> all (v_names);
  return jsonb_build_object('declared', to_jsonb(v_names), 'changed', v_changed, 'retiredButUsed', coalesce(to_jsonb(v_kept), '[]'));
end
$function$;
