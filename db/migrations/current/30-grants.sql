-- Privileges: the request role reaches api functions only; pressroom_api
-- holds column-listed grants; engine-only columns are granted to nobody.
--
-- Before this migration pressroom_request could use the schema app, execute
-- its functions, and had whole-table insert, update and delete on the
-- planning tables, so a request role (a DBA testing rules in psql) could mark
-- content sent or write a permalink. Now:
--   * pressroom_request: usage on api, execute on api functions. Nothing else.
--   * pressroom_api: the privileges the request role had, with insert and
--     update listed column by column, minus the engine-only columns.
--   * engine-only columns (content_items.sent_at, permalink, platform_post_id,
--     publish_job_id) are written by pressroom_worker and by definer
--     functions of the publishing engine only (40-engine-only.sql adds the
--     status rule).

------------------------------------------------------------------------------
-- Functions of app: executable by the roles that run rules, never by PUBLIC
-- or the request role.
------------------------------------------------------------------------------
do $$
declare
  v record;
begin
  for v in
    select p.oid::regprocedure as fn,
           p.proacl is null or has_function_privilege('pressroom_request', p.oid, 'execute') as for_api
    from pg_proc p
    where p.pronamespace = 'app'::regnamespace and p.prokind = 'f'
  loop
    -- The publishing engine's own functions (claim, record, purges) were never
    -- the request role's and do not become pressroom_api's.
    if v.for_api then
      execute format('grant execute on function %s to pressroom_api', v.fn);
    end if;
    execute format('revoke execute on function %s from public, pressroom_request', v.fn);
  end loop;
end
$$;
grant execute on all functions in schema app to pressroom_definer, pressroom_worker;
-- Functions created later are executable by PUBLIC until revoked (a per-schema
-- default privilege cannot take back the global one): app.harden_api_functions,
-- which ends every migration, revokes it, and tests/db/07-catalog.test.sql
-- checks that no app function is PUBLIC's.

------------------------------------------------------------------------------
-- Tables of app
------------------------------------------------------------------------------
-- Foundation tables: their column-listed grants move to pressroom_api as they were.
do $$
declare
  v record;
begin
  for v in
    select table_name, privilege_type, string_agg(quote_ident(column_name), ', ') as columns
    from information_schema.column_privileges
    where grantee = 'pressroom_request' and table_schema = 'app'
      and table_name in ('organizations', 'users', 'sessions', 'workspaces', 'workspace_members',
                         'api_keys', 'api_key_workspaces', 'idempotency_keys')
    group by table_name, privilege_type
  loop
    execute format('grant %s (%s) on app.%I to pressroom_api', v.privilege_type, v.columns, v.table_name);
  end loop;
  for v in
    select table_name, privilege_type
    from information_schema.role_table_grants
    where grantee = 'pressroom_request' and table_schema = 'app' and privilege_type in ('DELETE', 'TRUNCATE')
      and table_name in ('organizations', 'users', 'sessions', 'workspaces', 'workspace_members',
                         'api_keys', 'api_key_workspaces', 'idempotency_keys')
  loop
    execute format('grant %s on app.%I to pressroom_api', v.privilege_type, v.table_name);
  end loop;
end
$$;

-- Reference data.
grant select on app.platforms to pressroom_api;

-- Tenant tables: read everything but secrets; write the listed columns.
grant select (id, organization_id, workspace_id, connector, platform, name, username, status, settings,
  webhook_url, created_by, created_at, updated_at, deleted_at) on app.integrations to pressroom_api;
grant insert (organization_id, workspace_id, connector, platform, name, username, status, settings,
  webhook_url, webhook_secret, created_by) on app.integrations to pressroom_api;
grant update (name, username, status, settings, deleted_at) on app.integrations to pressroom_api;

grant select on app.tags, app.pillars, app.formats, app.hashtag_groups, app.campaigns, app.campaign_phases,
  app.content_roots, app.content_root_media, app.content_items, app.content_item_media,
  app.content_root_tags, app.content_root_pillars, app.content_root_formats, app.content_versions,
  app.recurring_series, app.recurring_occurrences,
  app.media_folders, app.media_items, app.media_label_groups, app.media_labels, app.media_item_labels,
  app.media_upload_sessions, app.media_storage_garbage, app.media_usage_events,
  app.publish_attempts, app.publishing_states, app.published_captions, app.sandbox_posts,
  app.articles, app.article_images
  to pressroom_api;

select app.grant_api_columns(t, array['insert', 'update'])
from unnest(array['app.tags', 'app.pillars', 'app.formats', 'app.hashtag_groups', 'app.campaigns',
  'app.campaign_phases', 'app.content_roots', 'app.content_root_media', 'app.content_item_media',
  'app.content_versions', 'app.recurring_series', 'app.recurring_occurrences', 'app.media_folders',
  'app.media_items', 'app.media_label_groups', 'app.media_labels', 'app.media_item_labels',
  'app.media_upload_sessions']::regclass[]) t;
select app.grant_api_columns(t, array['insert'])
from unnest(array['app.content_root_tags', 'app.content_root_pillars', 'app.content_root_formats',
  'app.media_storage_garbage', 'app.article_images']::regclass[]) t;
-- Editions: everything but what the publishing engine records.
select app.grant_api_columns('app.content_items', array['insert', 'update'],
  array['sent_at', 'permalink', 'platform_post_id', 'publish_job_id']);
-- Articles: the draft columns as the request functions write them.
grant insert (content_item_id, organization_id, workspace_id, title, body_html, character_count, cover_media_id)
  on app.articles to pressroom_api;
grant update (title, body_html, character_count, cover_media_id, platform_draft_article_id, platform_draft_url,
  platform_draft_sent_at, platform_draft_fingerprint) on app.articles to pressroom_api;

grant delete on app.tags, app.pillars, app.formats, app.hashtag_groups, app.campaigns, app.campaign_phases,
  app.content_roots, app.content_root_media, app.content_items, app.content_item_media,
  app.content_root_tags, app.content_root_pillars, app.content_root_formats,
  app.media_folders, app.media_items, app.media_label_groups, app.media_labels, app.media_item_labels,
  app.articles, app.article_images
  to pressroom_api;

------------------------------------------------------------------------------
-- The request role: api only.
------------------------------------------------------------------------------
revoke all on all tables in schema app from pressroom_request;
revoke all on schema app from pressroom_request;
