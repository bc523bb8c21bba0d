--! Previous: sha1:4e453d790ddfa4412c9cf80078d731afddf23ac8
--! Hash: sha1:c3192cf5e627133eb2d6a746dea5d15487828f88
--! Message: keys carry the workspace

--! split: 01-keys-carry-the-workspace.sql
-- Keys carry the workspace (docs/citus.md, "Where the schema stands").
--
-- Citus distributes a table by workspace_id only when every primary and unique
-- key of it holds workspace_id, and it keeps a foreign key between two such
-- tables only when the key pairs workspace_id with workspace_id. This migration
-- makes that true of every table in app that has a workspace_id column (the
-- workspace tables), by one rule applied from the catalog, so that the result
-- does not depend on a list written by hand:
--
--   1. A table that points at a workspace table carries workspace_id itself:
--      app.publish_pacing (per integration) gets it, and organization_id, filled
--      from the integration, and the tenant policies (engine-only).
--   2. Every foreign key that references a workspace table is dropped and
--      recorded (its columns, target, actions, deferrability), those that
--      already pair workspace_id first.
--   3. Every primary key, unique constraint and unique index of a workspace
--      table that lacks workspace_id is rebuilt, under the same name, with
--      workspace_id appended: PRIMARY KEY (id) becomes PRIMARY KEY (id,
--      workspace_id). Appended, not prepended, so every query that used the
--      old key's leading columns (a lookup by id alone) still uses its index.
--      A unique key that the rebuilt one makes redundant (the (id,
--      workspace_id) keys earlier migrations added for composite foreign keys)
--      is dropped.
--   4. Every recorded foreign key is made again with workspace_id on both
--      sides, under its old name. A single-column key that an existing
--      composite key already covers is not made again.
--   5. Citus refuses ON DELETE SET NULL (even PostgreSQL 15's SET NULL (col))
--      and ON UPDATE CASCADE on a key that holds the distribution column
--      (docs/citus.md has its messages). A key that emptied its column when
--      the parent went is made without the action, deferred to commit, and the
--      parent gets a trigger, <parent>_95_detach_<table>_<column> (AFTER
--      DELETE, app.tg_detach_references), that empties the column in the
--      parent's workspace at the end of the statement. After, not before: a
--      statement that deletes a row and the rows that name it (a delivery and
--      its redelivery, cascaded from their subscription) must not update a row
--      it is about to delete. The one ON UPDATE CASCADE,
--      workbench_rows_section_page_fkey, is made without it:
--      api.move_workbench_section moves a section's rows in the statement that
--      moves the section (03-workbench-section-moves-its-rows.sql).
--
-- Functions whose ON CONFLICT named the old keys follow in
-- 02-on-conflict-targets.sql. Idempotent: a second run finds nothing to do.

-- 1. app.publish_pacing carries its integration's organization and workspace, and so becomes a
-- tenant table with the tenant policies (engine-only: no command for requests).
alter table app.publish_pacing add column if not exists organization_id uuid;
alter table app.publish_pacing add column if not exists workspace_id uuid;
update app.publish_pacing p
   set organization_id = i.organization_id, workspace_id = i.workspace_id
  from app.integrations i
 where i.id = p.integration_id
   and (p.organization_id, p.workspace_id) is distinct from (i.organization_id, i.workspace_id);
alter table app.publish_pacing alter column organization_id set not null;
alter table app.publish_pacing alter column workspace_id set not null;
do $$
begin
  if not exists (select 1 from pg_constraint
                  where conrelid = 'app.publish_pacing'::regclass and conname = 'publish_pacing_organization_id_fkey') then
    alter table app.publish_pacing
      add constraint publish_pacing_organization_id_fkey foreign key (organization_id)
      references app.organizations(id) on delete cascade;
  end if;
  if not exists (select 1 from pg_constraint
                  where conrelid = 'app.publish_pacing'::regclass and conname = 'publish_pacing_workspace_id_fkey') then
    alter table app.publish_pacing
      add constraint publish_pacing_workspace_id_fkey foreign key (workspace_id)
      references app.workspaces(id) on delete cascade;
  end if;
end $$;
create index if not exists publish_pacing_workspace_id_idx on app.publish_pacing (workspace_id);
select app.apply_tenant_policies('app.publish_pacing', '{}');
comment on column app.publish_pacing.organization_id is 'The integration''s organization.';
comment on column app.publish_pacing.workspace_id is
  'The integration''s workspace: a table that points at a workspace table carries workspace_id, so its rows live on the workspace''s shard (db/migrations/committed/000043-keys-carry-the-workspace.sql).';

create or replace function app.is_workspace_table(p_table regclass)
returns boolean
language sql
stable
set search_path = pg_catalog
as $fn$
  -- Whether p_table is a workspace table: an ordinary table of app with a
  -- workspace_id column (the tables distributed by workspace_id on Citus).
  select exists (
    select 1
      from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      join pg_attribute a on a.attrelid = c.oid
     where c.oid = p_table and n.nspname = 'app' and c.relkind in ('r', 'p')
       and a.attname = 'workspace_id' and not a.attisdropped)
$fn$;
comment on function app.is_workspace_table(regclass) is
  'Whether a table is a workspace table (app, with a workspace_id column): the tables whose keys hold workspace_id and whose rows Citus distributes by it (db/migrations/committed/000043-keys-carry-the-workspace.sql, tests/db/10-distributable.test.sql).';
revoke all on function app.is_workspace_table(regclass) from public;

create or replace function app.colocated_relation(p_table regclass, p_workspace_id uuid, p_trigger_relid oid)
returns regclass
language plpgsql
stable
set search_path = pg_catalog
as $fn$
begin
  -- Without Citus (a statement of its own: one naming pg_dist_partition fails to plan there),
  -- or in a trigger that fires on a table Citus does not shard: the table itself.
  if to_regclass('pg_catalog.pg_dist_partition') is null then
    return p_table;
  end if;
  if exists (select 1 from pg_dist_partition where logicalrelid = p_trigger_relid)
     or not exists (select 1 from pg_dist_partition where logicalrelid = p_table and partmethod = 'h') then
    return p_table;
  end if;
  -- A trigger on a shard: the shard of p_table that holds p_workspace_id, on this node (the
  -- tables are colocated), because a query on a shard cannot run a distributed query.
  return shard_name(p_table, get_shard_id_for_distribution_column(p_table, p_workspace_id))::regclass;
end
$fn$;
revoke all on function app.colocated_relation(regclass, uuid, oid) from public;
grant execute on function app.colocated_relation(regclass, uuid, oid) to pressroom_api, pressroom_definer, pressroom_worker;
comment on function app.colocated_relation(regclass, uuid, oid) is
  'The relation a trigger reads or writes for a workspace table: the table itself on one node, and, when the trigger (p_trigger_relid: TG_RELID) fires on a Citus shard, the colocated shard of p_table that holds p_workspace_id, on the same node. A query on a shard cannot run a distributed query ("cannot execute a distributed query from a query on a shard"), so a trigger that touches another workspace table goes through this (docs/citus.md, "Triggers").';

create or replace function app.tg_detach_references()
returns trigger
language plpgsql
security definer
set search_path = pg_catalog
as $fn$
begin
  -- TG_ARGV[0]: the referencing table; TG_ARGV[1]: its column that names this row.
  execute format('update %s set %I = null where workspace_id = $1 and %I = $2',
                 app.colocated_relation(tg_argv[0]::regclass, old.workspace_id, tg_relid), tg_argv[1], tg_argv[1])
    using old.workspace_id, old.id;
  return old;
end
$fn$;
alter function app.tg_detach_references() owner to pressroom_definer;
revoke all on function app.tg_detach_references() from public;
comment on function app.tg_detach_references() is
  'Trigger (AFTER DELETE, <parent>_95_detach_<table>_<column>): empties the column TG_ARGV[1] of TG_ARGV[0] where it names the row being deleted, in the row''s workspace (on Citus, in the colocated shard: app.colocated_relation). It stands for ON DELETE SET NULL, which Citus refuses on a foreign key that holds the distribution column; the key itself is checked at commit, after the trigger has run (db/migrations/committed/000043-keys-carry-the-workspace.sql). Security definer: the referencing rows are emptied whoever deletes, as the foreign key action did.';

do $$
declare
  r record;
  v_ws constant text := 'workspace_id';
  v_fks jsonb := '[]'::jsonb;
  v_fk jsonb;
  v_cols text[];
  v_refcols text[];
  v_def text;
  v_action text;
  v_setcol text;
  v_trigger text;
begin
  -- 2. Record and drop every foreign key that references a workspace table.
  for r in
    select con.oid, con.conname, con.conrelid, con.confrelid,
           con.confupdtype, con.confdeltype, con.condeferrable, con.condeferred,
           array(select a.attname from unnest(con.conkey) with ordinality k(n, o)
                   join pg_attribute a on a.attrelid = con.conrelid and a.attnum = k.n order by k.o)::text[] as cols,
           array(select a.attname from unnest(con.confkey) with ordinality k(n, o)
                   join pg_attribute a on a.attrelid = con.confrelid and a.attnum = k.n order by k.o)::text[] as refcols,
           array(select a.attname from unnest(con.confdelsetcols) with ordinality k(n, o)
                   join pg_attribute a on a.attrelid = con.conrelid and a.attnum = k.n order by k.o)::text[] as setcols
      from pg_constraint con
     where con.contype = 'f' and app.is_workspace_table(con.confrelid)
     order by exists (select 1 from unnest(con.conkey) k(n)
                        join pg_attribute a on a.attrelid = con.conrelid and a.attnum = k.n
                       where a.attname = 'workspace_id') desc,
              con.conrelid::regclass::text, con.conname
  loop
    v_fks := v_fks || jsonb_build_array(jsonb_build_object(
      'name', r.conname, 'table', r.conrelid::regclass::text, 'ref', r.confrelid::regclass::text,
      'cols', to_jsonb(r.cols), 'refcols', to_jsonb(r.refcols), 'setcols', to_jsonb(r.setcols),
      'upd', r.confupdtype, 'del', r.confdeltype, 'deferrable', r.condeferrable, 'deferred', r.condeferred));
    execute format('alter table %s drop constraint %I', r.conrelid::regclass, r.conname);
  end loop;

  -- 3a. Primary keys and unique constraints of workspace tables without workspace_id.
  for r in
    select con.conname, con.conrelid, pg_get_constraintdef(con.oid) as def
      from pg_constraint con
     where con.contype in ('p', 'u') and app.is_workspace_table(con.conrelid)
       and not exists (select 1 from unnest(con.conkey) k(n)
                         join pg_attribute a on a.attrelid = con.conrelid and a.attnum = k.n
                        where a.attname = v_ws)
     order by con.conrelid::regclass::text, con.contype, con.conname
  loop
    v_def := regexp_replace(r.def, '^((PRIMARY KEY|UNIQUE)( NULLS NOT DISTINCT)? \()([^)]*)\)', '\1\4, workspace_id)');
    if v_def = r.def then
      raise exception 'keys-carry-the-workspace: cannot rewrite % on %: %', r.conname, r.conrelid::regclass, r.def;
    end if;
    execute format('alter table %s drop constraint %I', r.conrelid::regclass, r.conname);
    execute format('alter table %s add constraint %I %s', r.conrelid::regclass, r.conname, v_def);
  end loop;

  -- 3b. Unique indexes (not constraints) of workspace tables without workspace_id.
  for r in
    select i.relname as idx, x.indrelid, pg_get_indexdef(x.indexrelid) as def
      from pg_index x
      join pg_class i on i.oid = x.indexrelid
     where x.indisunique and app.is_workspace_table(x.indrelid)
       and not exists (select 1 from pg_constraint k where k.conindid = x.indexrelid)
       and not exists (select 1 from unnest(x.indkey) k(n)
                         join pg_attribute a on a.attrelid = x.indrelid and a.attnum = k.n
                        where a.attname = v_ws)
  loop
    v_def := regexp_replace(r.def, '( USING [a-z]+ \()([^)]*)\)', '\1\2, workspace_id)');
    if v_def = r.def then
      raise exception 'keys-carry-the-workspace: cannot rewrite index %: %', r.idx, r.def;
    end if;
    execute format('drop index app.%I', r.idx);
    execute v_def;
  end loop;

  -- 3c. Unique keys the primary key now repeats (the same set of columns).
  for r in
    select con.conname, con.conrelid, con.contype, x.indexrelid, i.relname as idx
      from pg_index x
      join pg_class i on i.oid = x.indexrelid
      left join pg_constraint con on con.conindid = x.indexrelid and con.conrelid = x.indrelid
      join pg_constraint pk on pk.conrelid = x.indrelid and pk.contype = 'p'
     where x.indisunique and not x.indisprimary and x.indpred is null
       and app.is_workspace_table(x.indrelid)
       and (select array_agg(n order by n) from unnest(x.indkey::int2[]) n)
         = (select array_agg(n order by n) from unnest(pk.conkey) n)
  loop
    if r.conname is not null then
      execute format('alter table %s drop constraint %I', r.conrelid::regclass, r.conname);
    else
      execute format('drop index app.%I', r.idx);
    end if;
  end loop;

  -- 4. The foreign keys again, workspace_id paired on both sides.
  for v_fk in select value from jsonb_array_elements(v_fks)
  loop
    v_cols := array(select jsonb_array_elements_text(v_fk->'cols'));
    v_refcols := array(select jsonb_array_elements_text(v_fk->'refcols'));
    if not (v_ws = any(v_cols)) then
      v_cols := v_cols || v_ws;
      v_refcols := v_refcols || v_ws;
    end if;
    -- A composite key over the same columns and target already stands.
    if exists (
      select 1 from pg_constraint c
       where c.contype = 'f' and c.conrelid = (v_fk->>'table')::regclass
         and c.confrelid = (v_fk->>'ref')::regclass
         and (select array_agg(a.attname::text order by a.attname) from unnest(c.conkey) k(n)
                join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.n)
           = (select array_agg(x order by x) from unnest(v_cols) x)) then
      continue;
    end if;
    if v_fk->>'upd' not in ('a', 'r') and v_fk->>'name' <> 'workbench_rows_section_page_fkey' then
      raise exception 'keys-carry-the-workspace: % has an ON UPDATE action, which Citus refuses', v_fk->>'name';
    end if;
    if v_fk->>'del' = 'd' then
      raise exception 'keys-carry-the-workspace: % is ON DELETE SET DEFAULT, which Citus refuses', v_fk->>'name';
    end if;
    if v_fk->>'del' = 'n' then
      -- 5. The parent empties the column when it has gone; the key waits for commit.
      if v_refcols <> array['id', v_ws] then
        raise exception 'keys-carry-the-workspace: % is ON DELETE SET NULL on %, not on (id, workspace_id)', v_fk->>'name', v_refcols;
      end if;
      for v_setcol in
        select x from jsonb_array_elements_text(case when jsonb_array_length(v_fk->'setcols') > 0
                                                     then v_fk->'setcols' else v_fk->'cols' end) x
         where x <> v_ws
      loop
        v_trigger := format('%s_95_detach_%s_%s',
                            (select relname from pg_class where oid = (v_fk->>'ref')::regclass),
                            (select relname from pg_class where oid = (v_fk->>'table')::regclass), v_setcol);
        if length(v_trigger) > 63 then
          raise exception 'keys-carry-the-workspace: trigger name too long: %', v_trigger;
        end if;
        execute format('drop trigger if exists %I on %s', v_trigger, v_fk->>'ref');
        execute format('create trigger %I after delete on %s for each row execute function app.tg_detach_references(%L, %L)',
                       v_trigger, v_fk->>'ref', v_fk->>'table', v_setcol);
      end loop;
    end if;
    v_action := case when v_fk->>'upd' = 'r' then ' on update restrict' else '' end
             || case v_fk->>'del' when 'c' then ' on delete cascade' when 'r' then ' on delete restrict' else '' end
             || case when (v_fk->>'deferrable')::boolean or v_fk->>'del' = 'n' then ' deferrable' else '' end
             || case when (v_fk->>'deferred')::boolean or v_fk->>'del' = 'n' then ' initially deferred' else '' end;
    execute format('alter table %s add constraint %I foreign key (%s) references %s (%s)%s',
                   v_fk->>'table', v_fk->>'name',
                   (select string_agg(quote_ident(x), ', ') from unnest(v_cols) x),
                   v_fk->>'ref',
                   (select string_agg(quote_ident(x), ', ') from unnest(v_refcols) x),
                   v_action);
  end loop;
end $$;

--! split: 02-on-conflict-targets.sql
-- ON CONFLICT names the keys of 01-keys-carry-the-workspace.sql: every target that was a workspace
-- table's key without workspace_id (published_captions, publishing_states, analytics_post_sync,
-- post_metrics_latest, post_metric_snapshots, post_metrics_daily, integration_sync_state,
-- integration_sync_daily, integration_limits, integration_metrics_daily, integration_publish_limits,
-- publish_pacing, inbox_events, inbox_threads, inbox_messages, inbox_reads, sandbox_posts,
-- work_claims, review_reactions, review_reminders, media_storage_garbage) now ends in workspace_id.
-- Each function below is its effective definition with only that changed, and
-- app.publish_claim_batch also fills app.publish_pacing's new organization_id and workspace_id.

CREATE OR REPLACE FUNCTION api.abort_media_upload(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
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
    on conflict (storage_key, workspace_id) do nothing;
  end if;
  return app.media_upload_json(v);
end
$function$;

CREATE OR REPLACE FUNCTION api.inbox_receive(p_source text, p_integration uuid, p_body bytea, p_headers jsonb, p_events jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_integ app.integrations;
  v_delivery uuid := gen_random_uuid();
  v_count int := coalesce(jsonb_array_length(p_events), 0);
  v_new int;
begin
  select * into v_integ from app.integrations where id = p_integration and deleted_at is null;
  if v_integ.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No such integration.', jsonb_build_object('id', p_integration));
  end if;
  if jsonb_typeof(p_events) <> 'array' then
    perform app.raise(400, 'INVALID_DELIVERY', 'The events are not a list.');
  end if;
  insert into app.inbox_deliveries (id, organization_id, workspace_id, integration_id, source, body, headers, event_count, new_event_count)
  values (v_delivery, v_integ.organization_id, v_integ.workspace_id, p_integration, p_source, p_body, coalesce(p_headers, '{}'), v_count, 0);
  with ins as (
    insert into app.inbox_events (organization_id, workspace_id, integration_id, delivery_id, event_id, type, thread_kind,
      thread_key, message_key, parent_key, author, body, attachments, reaction, reactor_id, occurred_at)
    select v_integ.organization_id, v_integ.workspace_id, p_integration, v_delivery, e ->> 'eventId', e ->> 'type', e ->> 'threadKind',
           e ->> 'threadKey', e ->> 'messageKey', e ->> 'parentKey', nullif(e -> 'author', 'null'::jsonb), e ->> 'text',
           coalesce(nullif(e -> 'attachments', 'null'::jsonb), '[]'), e ->> 'reaction', e ->> 'reactorId', (e ->> 'occurredAt')::timestamptz
    from jsonb_array_elements(p_events) e
    on conflict (integration_id, event_id, workspace_id) do nothing
    returning 1)
  select count(*) into v_new from ins;
  if v_new = 0 and v_count > 0 then
    -- A redelivery: every event is known already, so nothing is kept.
    delete from app.inbox_deliveries where id = v_delivery;
    v_delivery := null;
  else
    update app.inbox_deliveries set new_event_count = v_new where id = v_delivery;
  end if;
  if v_new > 0 then
    perform app.inbox_enqueue('inbox.fold', jsonb_build_object('integrationId', p_integration), p_integration::text);
  end if;
  return jsonb_build_object('deliveryId', v_delivery, 'events', v_count, 'newEvents', v_new,
    'organizationId', v_integ.organization_id, 'workspaceId', v_integ.workspace_id);
end
$function$;

CREATE OR REPLACE FUNCTION api.ingest_metrics(p_integration_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_ws uuid := app.current_workspace_id();
  v_integration record;
  v_problems jsonb := '[]'::jsonb;
  v_post jsonb;
  v_n int := 0;
  v_item app.content_items;
  v_at timestamptz;
  v_items uuid[] := '{}';
  v_ats timestamptz[] := '{}';
  v_recorded int := 0;
  v_rows int;
  v_account jsonb := p_body -> 'account';
begin
  perform app.require_role('editor');
  select g.id, g.connector into v_integration from app.integrations g
  where g.id = p_integration_id and g.workspace_id = v_ws and g.deleted_at is null;
  if v_integration.id is null then
    perform app.raise(404, 'INTEGRATION_NOT_FOUND', 'No integration with this id in this workspace.', jsonb_build_object('id', p_integration_id));
  end if;
  if v_integration.connector <> 'webhook' then
    perform app.raise(409, 'METRICS_INGESTION_NOT_SUPPORTED',
      format('Metrics of a %s integration come from its connector; only webhook integrations push them.', v_integration.connector),
      jsonb_build_object('connector', v_integration.connector));
  end if;
  for v_post in select * from jsonb_array_elements(coalesce(p_body -> 'posts', '[]'::jsonb)) loop
    v_item := null;
    if v_post ? 'contentId' then
      select * into v_item from app.content_items i
      where i.id = (v_post ->> 'contentId')::uuid and i.integration_id = v_integration.id;
    elsif v_post ? 'platformPostId' then
      select * into v_item from app.content_items i
      where i.integration_id = v_integration.id and i.platform_post_id = v_post ->> 'platformPostId'
      order by i.sent_at desc nulls last limit 1;
    end if;
    v_at := (v_post ->> 'capturedAt')::timestamptz;
    if v_item.id is null then
      v_problems := v_problems || jsonb_build_object('field', format('body.posts[%s]', v_n), 'code', 'post_not_found',
        'message', 'no edition of this integration with this contentId or platformPostId');
    elsif v_item.status <> 'sent' then
      v_problems := v_problems || jsonb_build_object('field', format('body.posts[%s]', v_n), 'code', 'not_published',
        'message', 'the edition is not published');
    elsif v_at < v_item.sent_at - interval '1 minute' then
      v_problems := v_problems || jsonb_build_object('field', format('body.posts[%s].capturedAt', v_n), 'code', 'before_publication',
        'message', 'is before the edition was published');
    end if;
    if v_at > now() + interval '5 minutes' then
      v_problems := v_problems || jsonb_build_object('field', format('body.posts[%s].capturedAt', v_n), 'code', 'in_future',
        'message', 'is in the future');
    end if;
    if v_item.id is not null and (v_item.id, v_at) in (select * from unnest(v_items, v_ats)) then
      v_problems := v_problems || jsonb_build_object('field', format('body.posts[%s]', v_n), 'code', 'duplicate',
        'message', 'the same post and capturedAt appear twice');
    end if;
    v_problems := v_problems || app.analytics_metric_problems(v_post, format('body.posts[%s]', v_n));
    v_items := v_items || v_item.id;
    v_ats := v_ats || v_at;
    v_n := v_n + 1;
  end loop;
  if jsonb_typeof(v_account) = 'object' then
    if (v_account ->> 'capturedAt')::timestamptz > now() + interval '5 minutes' then
      v_problems := v_problems || jsonb_build_object('field', 'body.account.capturedAt', 'code', 'in_future', 'message', 'is in the future');
    end if;
    if app.analytics_count(v_account -> 'followers') = -1 or app.analytics_count(v_account -> 'profileViews') = -1 then
      v_problems := v_problems || jsonb_build_object('field', 'body.account', 'code', 'type',
        'message', 'followers and profileViews must be whole numbers from 0');
    end if;
  end if;
  perform app.raise_field_problems(case when jsonb_array_length(v_problems) > 0 then v_problems end,
    'The metrics break a rule; see details.fields. Nothing was recorded.');
  for v_post in select * from jsonb_array_elements(coalesce(p_body -> 'posts', '[]'::jsonb)) loop
    if v_post ? 'contentId' then
      select * into v_item from app.content_items i where i.id = (v_post ->> 'contentId')::uuid;
    else
      select * into v_item from app.content_items i
      where i.integration_id = v_integration.id and i.platform_post_id = v_post ->> 'platformPostId'
      order by i.sent_at desc nulls last limit 1;
    end if;
    insert into app.post_metric_snapshots (organization_id, workspace_id, content_item_id, integration_id, captured_at, source,
      impressions, reach, likes, comments, shares, saves, clicks, video_views)
    values (v_item.organization_id, v_item.workspace_id, v_item.id, v_item.integration_id, (v_post ->> 'capturedAt')::timestamptz, 'ingest',
      coalesce(app.analytics_count(v_post -> 'impressions'), 0), coalesce(app.analytics_count(v_post -> 'reach'), 0),
      coalesce(app.analytics_count(v_post -> 'likes'), 0), coalesce(app.analytics_count(v_post -> 'comments'), 0),
      coalesce(app.analytics_count(v_post -> 'shares'), 0), coalesce(app.analytics_count(v_post -> 'saves'), 0),
      coalesce(app.analytics_count(v_post -> 'clicks'), 0), coalesce(app.analytics_count(v_post -> 'videoViews'), 0))
    on conflict (content_item_id, captured_at, workspace_id) do nothing;
    get diagnostics v_rows = row_count;
    v_recorded := v_recorded + v_rows;
  end loop;
  if jsonb_typeof(v_account) = 'object' then
    perform app.analytics_record_account(v_integration.id, (v_account ->> 'capturedAt')::timestamptz, 'ingest', v_account);
  end if;
  perform app.analytics_note_sync(v_integration.id, 'ok', null, 1);
  return jsonb_build_object('integrationId', v_integration.id, 'postsReceived', v_n, 'postsRecorded', v_recorded,
    'postsAlreadyRecorded', v_n - v_recorded, 'accountRecorded', jsonb_typeof(v_account) = 'object');
end
$function$;

CREATE OR REPLACE FUNCTION api.mark_inbox_thread(p_id uuid, p_read boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.inbox_threads;
  v_at timestamptz;
begin
  perform app.require_role('viewer');
  v := app.inbox_thread(p_id);
  if app.current_principal_id() is null then
    perform app.raise(403, 'ROLE_REQUIRED', 'Read state belongs to a member or API key.');
  end if;
  if p_read then
    v_at := greatest(now(), (select max(created_at) from app.inbox_messages where thread_id = p_id));
  else
    -- Unread from the newest inbound message on (none: nothing is unread).
    v_at := (select max(created_at) from app.inbox_messages
             where thread_id = p_id and direction = 'inbound' and has_original) - interval '1 microsecond';
    v_at := coalesce(v_at, now());
  end if;
  insert into app.inbox_reads (thread_id, principal_id, organization_id, workspace_id, read_at)
  values (p_id, app.current_principal_id(), app.current_organization_id(), v.workspace_id, v_at)
  on conflict (thread_id, principal_id, workspace_id) do update set read_at = excluded.read_at, updated_at = now();
  return app.inbox_thread_json(v);
end
$function$;

CREATE OR REPLACE FUNCTION api.remind_review(p_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  r app.reviews;
  v_waiting text[];
  v_recent text[];
  v_interval int := app.setting_int('review_remind_interval_seconds');
  v_count int;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id, true);
  perform app.require_review_status(r, array['active']);
  v_waiting := array(select distinct k from app.review_items it, unnest(it.waiting_on) k
                     where it.review_id = r.id and it.state = 'pending' and it.open order by k);
  if cardinality(v_waiting) = 0 then
    perform app.raise(409, 'NOTHING_TO_REMIND', 'No approver is pending on this review.', jsonb_build_object('reviewId', r.id));
  end if;
  v_recent := array(select m.approver_key from app.review_reminders m
                    where m.review_id = r.id and m.approver_key = any (v_waiting)
                      and m.reminded_at > now() - make_interval(secs => v_interval) order by 1);
  if cardinality(v_recent) > 0 then
    perform app.raise(409, 'REMIND_TOO_SOON',
      format('An approver of this review was reminded less than %s seconds ago.', v_interval),
      jsonb_build_object('reviewId', r.id, 'approvers', to_jsonb(v_recent), 'intervalSeconds', v_interval,
        'retryAfter', (select ceil(extract(epoch from (max(m.reminded_at) + make_interval(secs => v_interval) - now())))::int
                       from app.review_reminders m where m.review_id = r.id and m.approver_key = any (v_recent))));
  end if;
  insert into app.review_reminders (review_id, approver_key, organization_id, workspace_id)
  select r.id, k, r.organization_id, r.workspace_id from unnest(v_waiting) k
  on conflict (review_id, approver_key, workspace_id) do update set reminded_at = now();
  v_count := app.review_notify_waiting(r, 'review_reminder', jsonb_build_object('message', p_body ->> 'message'));
  perform app.review_activity_add(r, null, 'system', 'reminded', p_body ->> 'message', jsonb_build_object('approvers', to_jsonb(v_waiting)));
  return jsonb_build_object('reviewId', r.id, 'reminded', cardinality(v_waiting), 'notifications', v_count);
end
$function$;

CREATE OR REPLACE FUNCTION app.analytics_note_sync(p_integration_id uuid, p_outcome text, p_error text, p_count integer DEFAULT 1)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_integration record;
begin
  select g.id, g.organization_id, g.workspace_id into v_integration from app.integrations g where g.id = p_integration_id;
  if v_integration.id is null or p_count <= 0 then
    return;
  end if;
  insert into app.integration_sync_state as s (integration_id, organization_id, workspace_id, last_attempt_at,
    last_success_at, last_error, last_error_at)
  values (p_integration_id, v_integration.organization_id, v_integration.workspace_id, now(),
    case when p_outcome = 'ok' then now() end,
    case when p_outcome <> 'ok' then left(p_error, 1000) end, case when p_outcome <> 'ok' then now() end)
  on conflict (integration_id, workspace_id) do update set
    last_attempt_at = now(),
    last_success_at = case when p_outcome = 'ok' then now() else s.last_success_at end,
    last_error = case when p_outcome <> 'ok' then left(p_error, 1000) else s.last_error end,
    last_error_at = case when p_outcome <> 'ok' then now() else s.last_error_at end;
  insert into app.integration_sync_daily as d (integration_id, organization_id, workspace_id, day,
    successes, failures, rate_limit_hits)
  values (p_integration_id, v_integration.organization_id, v_integration.workspace_id, (now() at time zone 'UTC')::date,
    case when p_outcome = 'ok' then p_count else 0 end, case when p_outcome = 'failed' then p_count else 0 end,
    case when p_outcome = 'rate_limited' then p_count else 0 end)
  on conflict (integration_id, day, workspace_id) do update set
    successes = d.successes + excluded.successes, failures = d.failures + excluded.failures,
    rate_limit_hits = d.rate_limit_hits + excluded.rate_limit_hits;
end
$function$;

CREATE OR REPLACE FUNCTION app.analytics_record_account(p_integration_id uuid, p_captured_at timestamp with time zone, p_source text, p_account jsonb)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  v_integration record;
begin
  select g.id, g.organization_id, g.workspace_id into v_integration from app.integrations g where g.id = p_integration_id;
  insert into app.integration_metrics_daily as m (organization_id, workspace_id, integration_id, day, captured_at, source,
    followers, profile_views, demographics)
  values (v_integration.organization_id, v_integration.workspace_id, p_integration_id,
    app.analytics_local_day(v_integration.workspace_id, p_captured_at), p_captured_at, p_source,
    app.analytics_count(p_account -> 'followers'), app.analytics_count(p_account -> 'profileViews'),
    nullif(p_account -> 'demographics', 'null'::jsonb))
  on conflict (integration_id, day, workspace_id) do update set
    captured_at = excluded.captured_at, source = excluded.source,
    followers = coalesce(excluded.followers, m.followers), profile_views = coalesce(excluded.profile_views, m.profile_views),
    demographics = coalesce(excluded.demographics, m.demographics)
  where m.captured_at <= excluded.captured_at;
end
$function$;

CREATE OR REPLACE FUNCTION app.analytics_record_sync(p_results jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  v jsonb;
  v_item app.content_items;
  v_m jsonb;
  v_at timestamptz;
  v_snapshots int := 0;
  v_accounts int := 0;
begin
  for v in select * from jsonb_array_elements(coalesce(p_results -> 'posts', '[]'::jsonb)) loop
    select * into v_item from app.content_items where id = (v ->> 'contentId')::uuid;
    continue when v_item.id is null;
    insert into app.analytics_post_sync as s (content_item_id, organization_id, workspace_id, last_attempt_at, last_success_at, last_error)
    values (v_item.id, v_item.organization_id, v_item.workspace_id, now(),
      case when v ->> 'outcome' = 'ok' then now() end, case when v ->> 'outcome' <> 'ok' then left(v ->> 'error', 1000) end)
    on conflict (content_item_id, workspace_id) do update set last_attempt_at = now(),
      last_success_at = case when v ->> 'outcome' = 'ok' then now() else s.last_success_at end,
      last_error = case when v ->> 'outcome' = 'ok' then null else left(v ->> 'error', 1000) end;
    if v ->> 'outcome' = 'ok' and v ? 'metrics' then
      v_m := v -> 'metrics';
      v_at := coalesce((v ->> 'capturedAt')::timestamptz, now());
      insert into app.post_metric_snapshots (organization_id, workspace_id, content_item_id, integration_id, captured_at, source,
        impressions, reach, likes, comments, shares, saves, clicks, video_views)
      values (v_item.organization_id, v_item.workspace_id, v_item.id, v_item.integration_id, v_at, 'sync',
        coalesce(app.analytics_count(v_m -> 'impressions'), 0), coalesce(app.analytics_count(v_m -> 'reach'), 0),
        coalesce(app.analytics_count(v_m -> 'likes'), 0), coalesce(app.analytics_count(v_m -> 'comments'), 0),
        coalesce(app.analytics_count(v_m -> 'shares'), 0), coalesce(app.analytics_count(v_m -> 'saves'), 0),
        coalesce(app.analytics_count(v_m -> 'clicks'), 0), coalesce(app.analytics_count(v_m -> 'videoViews'), 0))
      on conflict (content_item_id, captured_at, workspace_id) do nothing;
      v_snapshots := v_snapshots + 1;
    end if;
    if v ->> 'outcome' in ('ok', 'failed', 'rate_limited') then
      perform app.analytics_note_sync(v_item.integration_id, v ->> 'outcome', v ->> 'error');
    end if;
  end loop;
  for v in select * from jsonb_array_elements(coalesce(p_results -> 'accounts', '[]'::jsonb)) loop
    continue when not exists (select 1 from app.integrations where id = (v ->> 'integrationId')::uuid);
    update app.integration_sync_state set account_attempt_at = now() where integration_id = (v ->> 'integrationId')::uuid;
    if not found then
      insert into app.integration_sync_state (integration_id, organization_id, workspace_id, account_attempt_at)
      select g.id, g.organization_id, g.workspace_id, now() from app.integrations g where g.id = (v ->> 'integrationId')::uuid;
    end if;
    if v ->> 'outcome' = 'ok' and jsonb_typeof(v -> 'account') = 'object' then
      perform app.analytics_record_account((v ->> 'integrationId')::uuid, coalesce((v ->> 'capturedAt')::timestamptz, now()),
        'sync', v -> 'account');
      v_accounts := v_accounts + 1;
    end if;
    if v ->> 'outcome' in ('ok', 'failed', 'rate_limited') then
      perform app.analytics_note_sync((v ->> 'integrationId')::uuid, v ->> 'outcome', v ->> 'error');
    end if;
  end loop;
  return jsonb_build_object('snapshots', v_snapshots, 'accounts', v_accounts);
end
$function$;

CREATE OR REPLACE FUNCTION app.analytics_refresh_post_day(p_item uuid, p_day date)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_last app.post_metric_snapshots;
  v_before app.post_metric_snapshots;
  v_old app.post_metrics_daily;
  v_new bigint[];
  v_was bigint[];
  v_diff bigint[];
begin
  select * into v_last from app.post_metric_snapshots s
  where s.content_item_id = p_item and s.day = p_day order by s.captured_at desc, s.id desc limit 1;
  select * into v_before from app.post_metric_snapshots s
  where s.content_item_id = p_item and s.day < p_day order by s.captured_at desc, s.id desc limit 1;
  select * into v_old from app.post_metrics_daily d where d.content_item_id = p_item and d.day = p_day;
  v_was := array[coalesce(v_old.impressions, 0), coalesce(v_old.reach, 0), coalesce(v_old.likes, 0),
                 coalesce(v_old.comments, 0), coalesce(v_old.shares, 0), coalesce(v_old.saves, 0),
                 coalesce(v_old.clicks, 0), coalesce(v_old.video_views, 0)];
  if v_last.id is null then
    v_new := array[0, 0, 0, 0, 0, 0, 0, 0];
    delete from app.post_metrics_daily d where d.content_item_id = p_item and d.day = p_day;
  else
    v_new := array[v_last.impressions - coalesce(v_before.impressions, 0), v_last.reach - coalesce(v_before.reach, 0),
                   v_last.likes - coalesce(v_before.likes, 0), v_last.comments - coalesce(v_before.comments, 0),
                   v_last.shares - coalesce(v_before.shares, 0), v_last.saves - coalesce(v_before.saves, 0),
                   v_last.clicks - coalesce(v_before.clicks, 0), v_last.video_views - coalesce(v_before.video_views, 0)];
    insert into app.post_metrics_daily as d (organization_id, workspace_id, content_item_id, integration_id, day,
      impressions, reach, likes, comments, shares, saves, clicks, video_views)
    values (v_last.organization_id, v_last.workspace_id, p_item, v_last.integration_id, p_day,
      v_new[1], v_new[2], v_new[3], v_new[4], v_new[5], v_new[6], v_new[7], v_new[8])
    on conflict (content_item_id, day, workspace_id) do update set
      impressions = excluded.impressions, reach = excluded.reach, likes = excluded.likes, comments = excluded.comments,
      shares = excluded.shares, saves = excluded.saves, clicks = excluded.clicks, video_views = excluded.video_views;
  end if;
  v_diff := array(select n - o from unnest(v_new, v_was) u (n, o));
  perform app.analytics_add_dimensions(p_item, p_day, v_diff);
end
$function$;

CREATE OR REPLACE FUNCTION app.inbox_fold(p_integration uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog'
AS $function$
declare
  v_integ app.integrations;
  v_ids bigint[];
  v_keys text[];
  v_threads uuid[];
  v_batch int := coalesce(app.setting('inbox_fold_batch')::int, 1000);
begin
  -- One fold of an integration at a time; a second waits and then finds the rest.
  perform pg_advisory_xact_lock(hashtextextended('pressroom:inbox.fold:' || p_integration::text, 0));
  select * into v_integ from app.integrations where id = p_integration;
  if v_integ.id is null then
    return jsonb_build_object('folded', 0, 'more', false);
  end if;
  select array_agg(id) into v_ids
  from (select id from app.inbox_events where integration_id = p_integration and folded_at is null order by id limit v_batch) e;
  if v_ids is null then
    return jsonb_build_object('folded', 0, 'more', false);
  end if;

  insert into app.inbox_threads (organization_id, workspace_id, integration_id, platform, kind, thread_key)
  select distinct v_integ.organization_id, v_integ.workspace_id, p_integration, v_integ.platform, e.thread_kind, e.thread_key
  from app.inbox_events e where e.id = any (v_ids) and e.thread_key is not null
  on conflict (integration_id, kind, thread_key, workspace_id) do nothing;

  select array_agg(distinct e.message_key) into v_keys from app.inbox_events e where e.id = any (v_ids);

  -- Every touched message from ALL of its events: what is shown depends on
  -- the set of events, never on the order they arrived in.
  with ev as (
    select e.* from app.inbox_events e
    where e.integration_id = p_integration and e.message_key = any (v_keys)
  ), keyed as (
    select message_key, min(thread_kind) filter (where thread_key is not null) as thread_kind, min(thread_key) as thread_key,
           bool_or(type in ('message.created', 'message.edited')) as has_original,
           bool_or(type = 'message.deleted') as deleted,
           max(occurred_at) filter (where type = 'message.edited') as edited_at,
           min(occurred_at) as first_at
    from ev group by message_key
  ), origin as (
    select distinct on (message_key) message_key, author, parent_key, occurred_at
    from ev where type in ('message.created', 'message.edited')
    order by message_key, (type = 'message.created') desc, occurred_at, event_id
  ), latest as (
    select distinct on (message_key) message_key, body, attachments
    from ev where type in ('message.created', 'message.edited')
    order by message_key, occurred_at desc, (type = 'message.edited') desc, event_id desc
  ), hiding as (
    select distinct on (message_key) message_key, type = 'message.hidden' as hidden
    from ev where type in ('message.hidden', 'message.unhidden')
    order by message_key, occurred_at desc, event_id desc
  ), reacting as (
    select message_key, jsonb_object_agg(reaction, n) as reactions
    from (select message_key, reaction, count(*) as n
          from (select distinct on (message_key, reactor_id, reaction) message_key, reactor_id, reaction, type
                from ev where type in ('reaction.added', 'reaction.removed')
                order by message_key, reactor_id, reaction, occurred_at desc, (type = 'reaction.removed') desc, event_id desc) x
          where type = 'reaction.added'
          group by message_key, reaction) y
    group by message_key
  )
  insert into app.inbox_messages as m (organization_id, workspace_id, integration_id, thread_id, direction, message_key,
    parent_key, author, body, attachments, reactions, has_original, moderation, occurred_at, edited_at)
  select v_integ.organization_id, v_integ.workspace_id, p_integration, t.id, 'inbound', k.message_key,
         o.parent_key, coalesce(o.author, '{}'), l.body, coalesce(l.attachments, '[]'), coalesce(r.reactions, '{}'),
         k.has_original,
         case when k.deleted then 'deleted' when h.hidden then 'hidden' else 'visible' end,
         coalesce(o.occurred_at, k.first_at), k.edited_at
  from keyed k
  join app.inbox_threads t on t.integration_id = p_integration and t.kind = k.thread_kind and t.thread_key = k.thread_key
  left join origin o using (message_key)
  left join latest l using (message_key)
  left join hiding h using (message_key)
  left join reacting r using (message_key)
  on conflict (integration_id, message_key, workspace_id) do update set
    parent_key = excluded.parent_key,
    author = case when m.direction = 'inbound' then excluded.author else m.author end,
    body = case when m.direction = 'inbound' then excluded.body else m.body end,
    attachments = case when m.direction = 'inbound' then excluded.attachments else m.attachments end,
    reactions = excluded.reactions,
    has_original = m.direction <> 'inbound' or excluded.has_original,
    -- Platform deletions and hide/unhide events decide; without any, what
    -- our own moderation (job inbox.action) recorded stays.
    moderation = case when excluded.moderation = 'deleted' then 'deleted'
                      when (select true from app.inbox_events e where e.integration_id = p_integration
                              and e.message_key = m.message_key and e.type in ('message.hidden', 'message.unhidden') limit 1)
                        then excluded.moderation
                      else m.moderation end,
    occurred_at = case when m.direction = 'inbound' then excluded.occurred_at else m.occurred_at end,
    edited_at = excluded.edited_at,
    updated_at = now();

  select array_agg(distinct m.thread_id) into v_threads
  from app.inbox_messages m where m.integration_id = p_integration and m.message_key = any (v_keys);
  perform app.inbox_refresh_threads(v_threads);

  update app.inbox_events set folded_at = now() where id = any (v_ids);
  return jsonb_build_object('folded', cardinality(v_ids), 'more', cardinality(v_ids) >= v_batch);
end
$function$;

CREATE OR REPLACE FUNCTION app.integration_limits_put(p_integration uuid, p_limits jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v jsonb := app.account_limits_clean(p_limits);
begin
  if v is null then
    delete from app.integration_limits where integration_id = p_integration;
    return;
  end if;
  insert into app.integration_limits (workspace_id, integration_id, organization_id, limits, read_at)
  select g.workspace_id, g.id, g.organization_id, v, now() from app.integrations g where g.id = p_integration
  on conflict (integration_id, workspace_id) do update set limits = excluded.limits, read_at = excluded.read_at;
end
$function$;

CREATE OR REPLACE FUNCTION app.media_destroy(m app.media_items, p_reason text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
begin
  delete from app.media_items where id = m.id;
  insert into app.media_storage_garbage (storage_key, workspace_id, organization_id, reason)
  values (m.storage_key, m.workspace_id, m.organization_id, p_reason)
  on conflict (storage_key, workspace_id) do nothing;
end
$function$;

CREATE OR REPLACE FUNCTION app.media_expire_upload_sessions(p_limit integer DEFAULT 1000)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_now timestamptz := now();
  v_clock timestamptz := clock_timestamp();
  v_ws uuid;
  v_n bigint;
  v_rows int;
  v_keys int;
  v_done int := 0;
  v_expired int := 0;
  v_swept int := 0;
  v_forgotten int := 0;
begin
  -- Pending sessions past their expiry whose completion nobody claims: expired.
  for v_ws, v_n in
    select c.workspace_id, count(*) from (
      select s.workspace_id, s.expires_at from app.media_upload_sessions s
      where s.state = 'pending' and s.expires_at <= v_now
        and not exists (select 1 from app.work_claims w
                        where w.workspace_id = s.workspace_id and w.kind = 'media_upload_completion'
                          and w.subject_id = s.id and w.claimed_until > v_clock)
      order by s.expires_at, s.id limit p_limit) c
    group by c.workspace_id order by min(c.expires_at), c.workspace_id
  loop
    v_clock := clock_timestamp();
    update app.media_upload_sessions set state = 'expired'
    where workspace_id = v_ws
      and id in (select s.id from app.media_upload_sessions s
                 where s.workspace_id = v_ws and s.state = 'pending' and s.expires_at <= v_now
                   and not exists (select 1 from app.work_claims w
                                   where w.workspace_id = v_ws and w.kind = 'media_upload_completion'
                                     and w.subject_id = s.id and w.claimed_until > v_clock)
                 order by s.expires_at, s.id limit least(v_n, p_limit - v_expired) for update skip locked);
    get diagnostics v_rows = row_count;
    v_expired := v_expired + v_rows;
    exit when v_expired >= p_limit;
  end loop;
  -- Sessions past their expiry not yet swept (but not a pending one being completed):
  -- their upload key, and for one never completed its would-be media key, go to the garbage.
  v_clock := clock_timestamp();
  for v_ws, v_n in
    select c.workspace_id, count(*) from (
      select s.workspace_id, s.expires_at from app.media_upload_sessions s
      where s.upload_swept_at is null and s.expires_at <= v_now
        and not (s.state = 'pending'
                 and exists (select 1 from app.work_claims w
                             where w.workspace_id = s.workspace_id and w.kind = 'media_upload_completion'
                               and w.subject_id = s.id and w.claimed_until > v_clock))
      order by s.expires_at, s.id limit p_limit) c
    group by c.workspace_id order by min(c.expires_at), c.workspace_id
  loop
    v_clock := clock_timestamp();
    with swept as (
      update app.media_upload_sessions set upload_swept_at = v_now
      where workspace_id = v_ws
        and id in (select s.id from app.media_upload_sessions s
                   where s.workspace_id = v_ws and s.upload_swept_at is null and s.expires_at <= v_now
                     and not (s.state = 'pending'
                              and exists (select 1 from app.work_claims w
                                          where w.workspace_id = v_ws and w.kind = 'media_upload_completion'
                                            and w.subject_id = s.id and w.claimed_until > v_clock))
                   order by s.expires_at, s.id limit least(v_n, p_limit - v_done) for update skip locked)
      returning id, state, storage_key, workspace_id, organization_id),
    queued as (
      insert into app.media_storage_garbage (storage_key, workspace_id, organization_id, reason)
      select storage_key, workspace_id, organization_id, 'upload_swept' from swept
      union all
      -- Never completed: the final key a refused completion may have left.
      select format('media/%s/%s', workspace_id, id), workspace_id, organization_id, 'upload_expired' from swept
      where state <> 'completed'
      on conflict (storage_key, workspace_id) do nothing
      returning 1)
    select (select count(*) from swept), (select count(*) from queued) into v_rows, v_keys;
    -- v_done counts the sessions swept (what the limit bounds), v_swept the keys queued (the answer).
    v_done := v_done + v_rows;
    v_swept := v_swept + v_keys;
    exit when v_done >= p_limit;
  end loop;
  -- Swept sessions a week past their expiry are forgotten.
  for v_ws in
    select distinct s.workspace_id from app.media_upload_sessions s
    where s.expires_at <= v_now - interval '7 days' and s.upload_swept_at is not null
  loop
    delete from app.media_upload_sessions
    where workspace_id = v_ws and expires_at <= v_now - interval '7 days' and upload_swept_at is not null;
    get diagnostics v_rows = row_count;
    v_forgotten := v_forgotten + v_rows;
  end loop;
  return jsonb_build_object('expired', v_expired, 'keysQueued', v_swept, 'forgotten', v_forgotten);
end
$function$;

CREATE OR REPLACE FUNCTION app.publish_claim_attempt(p_content_id uuid, p_job_id uuid, p_resendable text[], p_batch uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  v app.content_items;
  s app.publishing_states;
  a app.publish_attempts;
  v_connector text;
  v_n int;
  v_run int;
  v_token text;
begin
  select * into v from app.content_items where id = p_content_id for update;
  if v.id is null or v.deleted_at is not null then
    return jsonb_build_object('action', 'skip', 'reason', 'gone');
  end if;
  if v.status <> 'scheduled' then
    return jsonb_build_object('action', 'skip', 'reason', 'status ' || v.status);
  end if;
  if v.publish_job_id is distinct from p_job_id then
    return jsonb_build_object('action', 'skip', 'reason', 'stale job');
  end if;
  select * into s from app.publishing_states where content_item_id = v.id for update;
  if s.state = 'awaiting_confirmation' and s.job_id is not distinct from p_job_id then
    return jsonb_build_object('action', 'skip', 'reason', 'awaiting confirmation');
  end if;
  select connector into v_connector from app.integrations where id = v.integration_id;
  select * into a from app.publish_attempts where content_item_id = v.id and finished_at is null
  order by attempt desc limit 1;
  if a.id is not null then
    -- A worker died while this attempt was in flight: the platform may have the post.
    if a.connector = any (p_resendable) then
      update app.publish_attempts set resent = resent + 1, job_id = p_job_id, claim_batch = p_batch,
        integration_id = coalesce(integration_id, v.integration_id)
      where id = a.id;
      insert into app.publishing_states as ps (content_item_id, organization_id, workspace_id, job_id, state, run_attempts)
      values (v.id, v.organization_id, v.workspace_id, p_job_id, 'publishing', a.run_attempt)
      on conflict (content_item_id, workspace_id) do update set job_id = p_job_id, state = 'publishing', next_attempt_at = null, updated_at = now();
      return jsonb_build_object('action', 'send', 'attemptId', a.id, 'attempt', a.attempt, 'runAttempt', a.run_attempt,
        'token', a.idempotency_token, 'resend', true, 'edition', app.publish_edition_json(v.id));
    end if;
    update app.publish_attempts set finished_at = clock_timestamp(), outcome = 'unknown',
      error = 'The worker stopped while this attempt was in flight; the platform may or may not have the post.'
    where id = a.id;
    insert into app.publishing_states as ps (content_item_id, organization_id, workspace_id, job_id, state, run_attempts, last_error)
    values (v.id, v.organization_id, v.workspace_id, p_job_id, 'awaiting_confirmation', a.run_attempt,
            'The worker stopped while the post was being sent; check the platform and resolve the outcome.')
    on conflict (content_item_id, workspace_id) do update set job_id = p_job_id, state = 'awaiting_confirmation', next_attempt_at = null,
      last_error = excluded.last_error, updated_at = now();
    return jsonb_build_object('action', 'skip', 'reason', 'unknown outcome of an interrupted attempt');
  end if;
  select coalesce(max(attempt), 0) + 1 into v_n from app.publish_attempts where content_item_id = v.id;
  v_run := case when s.job_id is not distinct from p_job_id then coalesce(s.run_attempts, 0) + 1 else 1 end;
  -- One token per edition and version: the same post whatever the attempt.
  v_token := 'pr_' || replace(v.id::text, '-', '') || '_v' || v.version;
  insert into app.publish_attempts (organization_id, workspace_id, content_item_id, attempt, run_attempt, job_id, connector,
    idempotency_token, integration_id, claim_batch)
  values (v.organization_id, v.workspace_id, v.id, v_n, v_run, p_job_id, v_connector, v_token, v.integration_id, p_batch)
  returning * into a;
  insert into app.publishing_states as ps (content_item_id, organization_id, workspace_id, job_id, state, run_attempts)
  values (v.id, v.organization_id, v.workspace_id, p_job_id, 'publishing', v_run)
  on conflict (content_item_id, workspace_id) do update set job_id = p_job_id, state = 'publishing', run_attempts = v_run,
    next_attempt_at = null, updated_at = now();
  return jsonb_build_object('action', 'send', 'attemptId', a.id, 'attempt', a.attempt, 'runAttempt', a.run_attempt,
    'token', a.idempotency_token, 'resend', false, 'edition', app.publish_edition_json(v.id));
end
$function$;

CREATE OR REPLACE FUNCTION app.publish_claim_batch(p_jobs jsonb, p_resendable text[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'app'
 SET enable_seqscan TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
declare
  v_batch uuid := gen_random_uuid();
  g record;
  l record;
  w_take record;
  k int;
  v_claims jsonb;
  v_claim_list jsonb[] := '{}';  -- appended in place; to_jsonb once at the end
  v_allowed int;
  v_until timestamptz;
  v_step interval;       -- the time between two paced editions of one integration
  v_start timestamptz;   -- when the first of them may go
  v_retry_ms int := app.setting_int('publish_limit_retry_ms');
begin
  -- p_jobs: [{"jobId", "contentId"}] as pg-boss fetched them. Locks are taken
  -- in one order by every worker: the app windows of the connectors involved,
  -- then integration by integration (its row when it has an in-flight limit,
  -- its window, then its editions by id).
  -- (Each statement starts from the jobs and looks rows up by key, one lateral look-up each:
  -- a generic plan cannot walk a whole index of a table that grows during a burst.)
  perform 1 from app.publish_windows w
  where w.scope = 'app' and w.key in (
    select distinct c.connector from jsonb_array_elements(p_jobs) e
    cross join lateral (select c.connector from app.content_items i join app.integrations c on c.id = i.integration_id
                        where i.id = (e ->> 'contentId')::uuid offset 0) c)
  order by w.key for update;

  for g in
    select i.integration_id,
      -- editions with an attempt in flight first: their claim settles it whatever the limits
      array_agg((e ->> 'jobId')::uuid order by o.open desc, (e ->> 'contentId')::uuid) as job_ids,
      array_agg((e ->> 'contentId')::uuid order by o.open desc, (e ->> 'contentId')::uuid) as content_ids,
      count(*) filter (where o.open)::int as resumed
    from jsonb_array_elements(p_jobs) e
    left join lateral (select i.integration_id from app.content_items i where i.id = (e ->> 'contentId')::uuid offset 0) i on true
    -- An attempt in flight: the edition's attempts looked up by the edition alone (a plan may
    -- otherwise walk the partial index of every open attempt of the channel, filtering on the edition).
    cross join lateral (select exists (select 1 from (select a.finished_at from app.publish_attempts a
                                                      where a.content_item_id = (e ->> 'contentId')::uuid offset 0) a
                                       where a.finished_at is null) as open) o
    group by i.integration_id
    order by i.integration_id nulls first
  loop
    -- How many of this integration's editions may go now (limits counted once per integration).
    v_allowed := cardinality(g.job_ids);
    v_until := null;
    v_step := interval '0';
    if g.integration_id is not null then
      select * into l from app.publish_limits_of(g.integration_id);
      if l.max_in_flight is not null then
        -- Claims of one integration count its attempts in flight one after the other
        -- (the integration's row, locked in integration order, as every worker does).
        perform 1 from app.integrations i where i.id = g.integration_id for no key update;
        v_allowed := greatest(least(v_allowed, l.max_in_flight - (select count(*) from app.publish_attempts a
                                      where a.integration_id = g.integration_id and a.finished_at is null)::int), 0);
        if v_allowed < cardinality(g.job_ids) then
          -- Every slot is taken: one frees about every (how long a post holds one) / (slots).
          v_step := app.publish_hold_estimate(g.integration_id, v_retry_ms) / l.max_in_flight;
          v_until := clock_timestamp() + v_step;
        end if;
      end if;
      if l.max_per_window is not null and v_allowed > 0 then
        select * into w_take from app.publish_window_take('integration', g.integration_id::text, l.max_per_window, l.window_seconds, v_allowed);
        v_allowed := w_take.granted;
        if w_take.frees_at is not null then
          v_until := greatest(v_until, w_take.frees_at);
          v_step := greatest(v_step, l.window_seconds * interval '1 second' / l.max_per_window);
        end if;
      end if;
      if l.app_max_per_window is not null and v_allowed > 0 then
        select * into w_take from app.publish_window_take('app', l.connector, l.app_max_per_window, l.app_window_seconds, v_allowed);
        v_allowed := w_take.granted;
        if w_take.frees_at is not null then
          v_until := greatest(v_until, w_take.frees_at);
          v_step := greatest(v_step, l.app_window_seconds * interval '1 second' / l.app_max_per_window);
        end if;
      end if;
      v_allowed := greatest(v_allowed, g.resumed);
      if v_allowed < cardinality(g.job_ids) then
        -- The editions put back are paced at the rate the limit lets through, after those this
        -- integration already put back (app.publish_pacing): each comes back about when it can go,
        -- instead of every one coming back together at each retry and going back again.
        insert into app.publish_pacing as p (integration_id, organization_id, workspace_id, next_at)
        select i.id, i.organization_id, i.workspace_id, v_until from app.integrations i where i.id = g.integration_id
        on conflict (integration_id, workspace_id) do nothing;
        -- At most 10 s of pace ahead of the limit's own next opening: a pace that ran ahead (a
        -- long burst, or a hold measured while slots were stuck) costs a look every 10 s at most.
        select greatest(v_until, least(p.next_at, v_until + interval '10 seconds')) into v_start from app.publish_pacing p
        where p.integration_id = g.integration_id for update;
        update app.publish_pacing set next_at = v_start + (cardinality(g.job_ids) - v_allowed) * v_step
        where integration_id = g.integration_id;
      end if;
    end if;
    -- The first v_allowed editions are claimed together (the common case set-based, the rest one by one).
    if v_allowed > 0 then
      v_claim_list := v_claim_list || app.publish_claim_editions(g.content_ids[1:v_allowed], g.job_ids[1:v_allowed], p_resendable, v_batch);
    end if;
    for k in v_allowed + 1 .. cardinality(g.job_ids) loop
      -- Over a limit: the job goes back with a later start, its turn in the pace; no attempt is written.
      v_until := v_start + (k - v_allowed - 1) * v_step;
      perform app.publish_defer_job(g.job_ids[k], v_until);
      v_claim_list := array_append(v_claim_list, jsonb_build_object('action', 'deferred', 'reason', 'rate_limited', 'until', v_until,
        'jobId', g.job_ids[k], 'contentId', g.content_ids[k]));
    end loop;
  end loop;

  v_claims := to_jsonb(v_claim_list);
  return jsonb_build_object('batch', v_batch, 'claims', v_claims,
    -- Where the media of the editions to send are stored, for signed URLs.
    'media', (select coalesce(jsonb_agg(jsonb_build_object('id', m.id, 'key', m.storage_key, 'filename', m.filename,
                'contentType', m.content_type)), '[]')
              from app.media_items m
              where m.id in (
                select (x ->> 'id')::uuid from jsonb_array_elements(v_claims) c, jsonb_array_elements(c #> '{edition,media}') x
                where c ->> 'action' = 'send'
                union
                select y::uuid from jsonb_array_elements(v_claims) c, jsonb_array_elements(c #> '{edition,thread}') t,
                  jsonb_array_elements_text(t -> 'mediaIds') y
                where c ->> 'action' = 'send')));
end
$function$;

CREATE OR REPLACE FUNCTION app.publish_claim_editions(p_content_ids uuid[], p_job_ids uuid[], p_resendable text[], p_batch uuid)
 RETURNS jsonb[]
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_fast uuid[];         -- the jobs of the common case
  v_sent jsonb := '{}';  -- their claims, by job id
  v_out jsonb[];
begin
  -- The editions, locked in the order given (the claim's order: in flight first, then by id).
  perform 1 from unnest(p_content_ids) with ordinality u (id, n)
    join app.content_items i on i.id = u.id
  order by u.n for update of i;
  -- Their publishing states, by edition.
  perform 1 from app.publishing_states s where s.content_item_id = any (p_content_ids)
  order by s.content_item_id for update;
  -- The common case: what app.publish_claim_attempt would send as a first attempt of this job
  -- (the edition's own job, so at most one per edition).
  select coalesce(array_agg(f.job_id), '{}') into v_fast
  from (select distinct on (u.id) u.job_id
        from unnest(p_content_ids, p_job_ids) u (id, job_id)
        join app.content_items i on i.id = u.id
        join app.integrations g on g.id = i.integration_id
        left join app.publishing_states s on s.content_item_id = i.id
        where i.deleted_at is null and i.status = 'scheduled' and i.publish_job_id = u.job_id
          and not (s.state is not distinct from 'awaiting_confirmation' and s.job_id is not distinct from u.job_id)
          and g.deleted_at is null and g.status <> 'disconnected'
          -- (by the edition alone, as in app.publish_claim_batch)
          and not exists (select 1 from (select a.finished_at from app.publish_attempts a where a.content_item_id = i.id offset 0) a
                          where a.finished_at is null)
        order by u.id) f;

  if cardinality(v_fast) > 0 then
    with f as (
      select distinct u.id, u.job_id from unnest(p_content_ids, p_job_ids) u (id, job_id) where u.job_id = any (v_fast)
    ),
    a as (
      insert into app.publish_attempts (organization_id, workspace_id, content_item_id, attempt, run_attempt, job_id, connector,
        idempotency_token, integration_id, claim_batch)
      select i.organization_id, i.workspace_id, i.id,
        coalesce((select max(x.attempt) from app.publish_attempts x where x.content_item_id = i.id), 0) + 1,
        case when s.job_id is not distinct from f.job_id then coalesce(s.run_attempts, 0) + 1 else 1 end,
        f.job_id, g.connector,
        -- One token per edition and version: the same post whatever the attempt.
        'pr_' || replace(i.id::text, '-', '') || '_v' || i.version, i.integration_id, p_batch
      from f
      join app.content_items i on i.id = f.id
      join app.integrations g on g.id = i.integration_id
      left join app.publishing_states s on s.content_item_id = i.id
      order by i.id
      returning id, content_item_id, attempt, run_attempt, job_id, idempotency_token, organization_id, workspace_id
    ),
    s as (
      insert into app.publishing_states as ps (content_item_id, organization_id, workspace_id, job_id, state, run_attempts)
      select a.content_item_id, a.organization_id, a.workspace_id, a.job_id, 'publishing', a.run_attempt from a
      order by a.content_item_id
      on conflict (content_item_id, workspace_id) do update set job_id = excluded.job_id, state = 'publishing',
        run_attempts = excluded.run_attempts, next_attempt_at = null, updated_at = now()
    )
    -- (s, a data-modifying part, runs to completion whether read or not.)
    select jsonb_object_agg(a.job_id::text, jsonb_build_object('action', 'send', 'attemptId', a.id, 'attempt', a.attempt,
             'runAttempt', a.run_attempt, 'token', a.idempotency_token, 'resend', false, 'edition', e.edition,
             'jobId', a.job_id, 'contentId', a.content_item_id))
    into v_sent
    from a join app.publish_editions_json(array(select f.id from f)) e on e.id = a.content_item_id;
  end if;

  -- Every claim in the order given; the others one by one, exactly as a claim alone.
  select array_agg(coalesce(v_sent -> u.job_id::text,
           app.publish_claim(u.id, u.job_id, p_resendable, p_batch) || jsonb_build_object('jobId', u.job_id, 'contentId', u.id))
         order by u.n)
  into v_out
  from unnest(p_content_ids, p_job_ids) with ordinality u (id, job_id, n);
  return coalesce(v_out, '{}');
end
$function$;

CREATE OR REPLACE FUNCTION app.publishing_set_caption(p_id uuid, p_caption text)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
  insert into app.published_captions (content_item_id, organization_id, workspace_id, caption)
  select id, organization_id, workspace_id, p_caption from app.content_items where id = p_id
  on conflict (content_item_id, workspace_id) do update set caption = excluded.caption, edits = app.published_captions.edits + 1,
    updated_at = clock_timestamp()
$function$;

CREATE OR REPLACE FUNCTION app.review_attachment_discard(a app.review_attachments, p_reason text)
 RETURNS void
 LANGUAGE sql
AS $function$
  insert into app.media_storage_garbage (storage_key, workspace_id, organization_id, reason)
  values (a.upload_key, a.workspace_id, a.organization_id, p_reason), (a.storage_key, a.workspace_id, a.organization_id, p_reason)
  on conflict (storage_key, workspace_id) do nothing
$function$;

CREATE OR REPLACE FUNCTION app.review_react(r app.reviews, it app.review_items, p_activity uuid, p_emoji text, p_add boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
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
    on conflict (activity_id, actor_key, workspace_id) do update set emoji = excluded.emoji;
  else
    delete from app.review_reactions where activity_id = p_activity and actor_key = v_key and emoji = p_emoji;
    if not found then
      perform app.raise(404, 'NOT_FOUND', 'You have no such reaction on this activity entry.',
        jsonb_build_object('activityId', p_activity, 'emoji', p_emoji));
    end if;
  end if;
  return jsonb_build_object('activityId', p_activity, 'emoji', p_emoji, 'reacted', p_add);
end
$function$;

CREATE OR REPLACE FUNCTION app.sandbox_receive_post(p_integration_id uuid, p_token text, p_content_id uuid, p_platform_post_id text, p_permalink text, p_caption text, p_payload jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  p app.sandbox_posts;
begin
  insert into app.sandbox_posts (organization_id, workspace_id, integration_id, content_item_id, idempotency_token,
    platform_post_id, permalink, caption, payload)
  select g.organization_id, g.workspace_id, g.id, p_content_id, p_token, p_platform_post_id, p_permalink, p_caption, p_payload
  from app.integrations g where g.id = p_integration_id
  on conflict (integration_id, idempotency_token, workspace_id) do update set deliveries = app.sandbox_posts.deliveries + 1,
    updated_at = clock_timestamp()
  returning * into p;
  return jsonb_build_object('platformPostId', p.platform_post_id, 'permalink', p.permalink, 'deliveries', p.deliveries);
end
$function$;

CREATE OR REPLACE FUNCTION app.sandbox_receive_posts(p_posts jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'app'
 SET enable_seqscan TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
declare
  v_out jsonb;
begin
  -- One token twice in the group (a post re-sent while the first delivery is in the same group):
  -- one by one, in order, so the second counts as a repeated delivery.
  if exists (select 1 from jsonb_array_elements(p_posts) p group by p ->> 'integrationId', p ->> 'token' having count(*) > 1) then
    return (select coalesce(jsonb_agg(app.sandbox_receive_post((p ->> 'integrationId')::uuid, p ->> 'token', (p ->> 'contentId')::uuid,
              p ->> 'platformPostId', p ->> 'permalink', p ->> 'caption', p -> 'payload') order by n), '[]')
            from jsonb_array_elements(p_posts) with ordinality x (p, n));
  end if;
  with x as (
      select (p ->> 'integrationId')::uuid as integration_id, p ->> 'token' as token, p, n
      from jsonb_array_elements(p_posts) with ordinality x (p, n)
    ),
    ins as (
      insert into app.sandbox_posts as sp (organization_id, workspace_id, integration_id, content_item_id, idempotency_token,
        platform_post_id, permalink, caption, payload)
      select g.organization_id, g.workspace_id, g.id, (x.p ->> 'contentId')::uuid, x.token, x.p ->> 'platformPostId',
        x.p ->> 'permalink', x.p ->> 'caption', x.p -> 'payload'
      from x join app.integrations g on g.id = x.integration_id
      order by x.n
      on conflict (integration_id, idempotency_token, workspace_id) do update set deliveries = sp.deliveries + 1, updated_at = clock_timestamp()
      returning sp.integration_id, sp.idempotency_token, sp.platform_post_id, sp.permalink, sp.deliveries
    )
    select coalesce(jsonb_agg(jsonb_build_object('platformPostId', ins.platform_post_id, 'permalink', ins.permalink,
             'deliveries', ins.deliveries) order by x.n), '[]')
    into v_out
    from x left join ins on ins.integration_id = x.integration_id and ins.idempotency_token = x.token;
  return v_out;
end
$function$;

CREATE OR REPLACE FUNCTION app.tg_post_metric_snapshots_rollup()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_root uuid;
  v_next date;
begin
  select i.root_id into v_root from app.content_items i where i.id = new.content_item_id;
  perform app.analytics_lock_root(v_root);
  perform app.analytics_refresh_post_day(new.content_item_id, new.day);
  -- The next day with snapshots measured its gain from the last one before it,
  -- which may now be this one.
  select min(s.day) into v_next from app.post_metric_snapshots s
  where s.content_item_id = new.content_item_id and s.day > new.day;
  if v_next is not null then
    perform app.analytics_refresh_post_day(new.content_item_id, v_next);
  end if;
  insert into app.post_metrics_latest as l (content_item_id, organization_id, workspace_id, integration_id, captured_at,
    impressions, reach, likes, comments, shares, saves, clicks, video_views)
  select s.content_item_id, s.organization_id, s.workspace_id, s.integration_id, s.captured_at,
         s.impressions, s.reach, s.likes, s.comments, s.shares, s.saves, s.clicks, s.video_views
  from app.post_metric_snapshots s where s.content_item_id = new.content_item_id
  order by s.captured_at desc, s.id desc limit 1
  on conflict (content_item_id, workspace_id) do update set
    captured_at = excluded.captured_at, impressions = excluded.impressions, reach = excluded.reach,
    likes = excluded.likes, comments = excluded.comments, shares = excluded.shares, saves = excluded.saves,
    clicks = excluded.clicks, video_views = excluded.video_views;
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION app.work_claim(p_kind text, p_subject uuid, p_seconds integer)
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
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
  on conflict (kind, subject_id, workspace_id) do update
    set organization_id = excluded.organization_id, workspace_id = excluded.workspace_id, token = excluded.token,
        request_id = excluded.request_id, claimed_until = excluded.claimed_until, claimed_at = clock_timestamp()
    where c.claimed_until <= clock_timestamp()
  returning token into v_got;
  return v_got;
end
$function$;

--! split: 03-workbench-section-moves-its-rows.sql
-- Moving a workbench section to another page carries its rows: the foreign key
-- workbench_rows_section_page_fkey did it with ON UPDATE CASCADE, which Citus
-- refuses once the key holds workspace_id (01-keys-carry-the-workspace.sql). The
-- one function that moves a section now moves its rows in the same statement, and
-- the key (now without an action) refuses a section moved without its rows.
CREATE OR REPLACE FUNCTION api.move_workbench_section(p_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.workbench_sections;
  v_page uuid;
  v_target uuid := (p_body ->> 'pageId')::uuid;
  v_ws uuid := app.current_workspace_id();
begin
  perform app.require_role('editor');
  select page_id into v_page from app.workbench_sections where id = p_id and workspace_id = v_ws;
  perform app.workbench_lock(v_page, v_target);
  v := app.workbench_section_for_update(p_id);
  if v_target is null or v_target = v.page_id then
    v_target := v.page_id;
  else
    perform app.workbench_page_for_update(v_target);
  end if;
  -- The section and its rows in one statement: the key is checked at its end.
  with moved as (
    update app.workbench_sections
    set page_id = v_target,
        position = app.workbench_slot('sections', v_target, (p_body ->> 'afterId')::uuid, (p_body ->> 'beforeId')::uuid, v.id)
    where id = v.id and workspace_id = v_ws
    returning *
  ), rows_moved as (
    update app.workbench_rows r set page_id = v_target
    where r.section_id = v.id and r.workspace_id = v_ws and r.page_id <> v_target
  )
  select * into v from moved;
  return app.workbench_section_json(v);
end
$function$;

comment on table app.workbench_sections is 'A section of a workbench page (a group of rows): name, color, collapsed, and its place in the page (a fractional key, unique per page). Moving it to another page carries its rows (api.move_workbench_section updates both in one statement; foreign key workbench_rows_section_page_fkey refuses a section moved without them). Trigger workbench_sections_20_same_workspace keeps it in its page''s workspace. Tenant policies of app.apply_tenant_policies (writes need editor).';
