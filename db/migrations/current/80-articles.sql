-- Articles (issue 5, "Articles"): long-form drafts for platforms whose
-- capabilities.canPublishArticles is true (platform x). An article is a
-- content item of kind 'article' with its own root, so its contentId works on
-- every content lifecycle route (schedule, revert-to-draft, delete, ...); its
-- title, body and cover live in app.articles, its inline images (body order)
-- in app.article_images.
--
-- Rules held here, whoever writes (trigger articles_20_guard and friends):
--   * title 1-200 characters; body at most 2,000,000 characters of stored HTML
--     (the request takes at most 1,000,000; sanitizing may lengthen it, as
--     <br> becomes <br />), at
--     most 100,000 characters of text (character_count, computed by the server
--     from the sanitized body: see server/articles/text.ts), at most 20 images;
--   * every inline image (<img data-media-id="...">, read from the body itself)
--     and the cover is a still image (type 'image', not 'gif' or 'video') of
--     at most 5 MB, active in the workspace's media library;
--   * title, body and cover change only while the article is a draft
--     (PT400 INVALID_CONTENT_STATUS);
--   * body_version counts body changes: nobody sets it by hand; it goes up by
--     one whenever body_html changes. api.update_article refuses a body
--     replacement whose expectedBodyVersion is stale (PT409 POST_BODY_CHANGED).
-- Idempotent: it is rerun whole whenever it changes.

create table if not exists app.articles (
  content_item_id uuid primary key references app.content_items (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  title text not null constraint articles_title_length check (char_length(title) between 1 and 200),
  body_html text not null default '' constraint articles_body_html_length check (char_length(body_html) <= 2000000),
  body_version int not null default 1 check (body_version >= 1),
  character_count int not null default 0 constraint articles_character_count check (character_count between 0 and 100000),
  cover_media_id uuid references app.media_items (id),
  platform_draft_article_id text check (platform_draft_article_id is null or length(platform_draft_article_id) <= 500),
  platform_draft_url text check (platform_draft_url is null or length(platform_draft_url) <= 2048),
  platform_draft_sent_at timestamptz,
  platform_draft_fingerprint text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index if not exists articles_workspace_id_idx on app.articles (workspace_id) include (organization_id);
create index if not exists articles_organization_id_idx on app.articles (organization_id);
create index if not exists articles_cover_media_id_idx on app.articles (cover_media_id);

create table if not exists app.article_images (
  content_item_id uuid not null references app.articles (content_item_id) on delete cascade,
  position int not null constraint article_images_position check (position between 0 and 19),
  media_id uuid not null references app.media_items (id),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  primary key (content_item_id, position)
);
create index if not exists article_images_media_id_idx on app.article_images (media_id);
create index if not exists article_images_workspace_id_idx on app.article_images (workspace_id) include (organization_id);
create index if not exists article_images_organization_id_idx on app.article_images (organization_id);

drop trigger if exists articles_10_set_updated_at on app.articles;
create trigger articles_10_set_updated_at before update on app.articles
  for each row execute function app.tg_set_updated_at();

------------------------------------------------------------------------------
-- Row-level security, as for the content tables.
------------------------------------------------------------------------------
do $$
declare
  t text;
  x text;
begin
  foreach t in array array['articles', 'article_images']
  loop
    execute format('alter table app.%I enable row level security', t);
    execute format('alter table app.%I force row level security', t);
    foreach x in array array['definer', 'worker', 'request_select', 'request_insert', 'request_update', 'request_delete',
                             'request_scope', 'request_role'] loop
      execute format('drop policy if exists %I on app.%I', t || '_' || x, t);
    end loop;
    execute format('create policy %I on app.%I to pressroom_definer using (true) with check (true)', t || '_definer', t);
    execute format('create policy %I on app.%I to pressroom_worker using (true) with check (true)', t || '_worker', t);
    execute format('create policy %I on app.%I for select to pressroom_request using (workspace_id = (select app.current_workspace_id()))', t || '_request_select', t);
    execute format($p$create policy %I on app.%I for insert to pressroom_request
      with check (workspace_id = (select app.current_workspace_id())
                  and organization_id = (select app.current_organization_id()))$p$, t || '_request_insert', t);
    execute format($p$create policy %I on app.%I for update to pressroom_request
      using (workspace_id = (select app.current_workspace_id()))
      with check (workspace_id = (select app.current_workspace_id()))$p$, t || '_request_update', t);
    execute format($p$create policy %I on app.%I for delete to pressroom_request
      using (workspace_id = (select app.current_workspace_id()))$p$, t || '_request_delete', t);
    execute format($p$create policy %I on app.%I as restrictive for all to pressroom_request
      using (organization_id = (select app.current_organization_id())
             and workspace_id in (select unnest(app.accessible_workspace_ids())))
      with check (organization_id = (select app.current_organization_id())
                  and workspace_id in (select unnest(app.accessible_workspace_ids())))$p$, t || '_request_scope', t);
    -- Viewers read; editors and managers write.
    execute format($p$create policy %I on app.%I as restrictive to pressroom_request
      using (app.role_rank((select app.current_workspace_role())) >= 1)
      with check (app.role_rank((select app.current_workspace_role())) >= 2)$p$, t || '_request_role', t);
    execute format('grant select, insert, update, delete on app.%I to pressroom_definer, pressroom_worker', t);
  end loop;
end
$$;
grant select, delete on app.articles, app.article_images to pressroom_request;
grant insert (content_item_id, organization_id, workspace_id, title, body_html, character_count, cover_media_id)
  on app.articles to pressroom_request;
grant update (title, body_html, character_count, cover_media_id, platform_draft_article_id, platform_draft_url,
  platform_draft_sent_at, platform_draft_fingerprint) on app.articles to pressroom_request;
grant insert on app.article_images to pressroom_request;

------------------------------------------------------------------------------
-- Rules
------------------------------------------------------------------------------
-- Largest still image an article may carry (cover or inline), in bytes.
create or replace function app.article_image_max_bytes() returns bigint
language sql immutable parallel safe
as $$ select 5242880::bigint $$;

create or replace function app.article_max_images() returns int
language sql immutable parallel safe
as $$ select 20 $$;

-- The data-media-id values of the body's <img> tags, in body order (as text:
-- a value that is not a UUID is a problem, not an error; null: an img
-- without one).
create or replace function app.article_body_media_refs(p_body text) returns text[]
language sql immutable parallel safe
as $$
  select coalesce(array_agg(substring(m[1] from 'data-media-id="([^"]*)"') order by n), '{}')
  from regexp_matches(coalesce(p_body, ''), '<img(\s[^>]*)?>', 'gi') with ordinality as x (m, n)
$$;

create or replace function app.is_uuid(p text) returns boolean
language sql immutable parallel safe
as $$ select p ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' $$;

-- Problems of one media reference for an article (cover or inline image):
-- not in the workspace's library, in the bin, not a still image, too large.
create or replace function app.article_media_problem(p_workspace_id uuid, p_ref text, p_field text) returns jsonb
language plpgsql stable
as $$
declare
  v record;
begin
  if p_ref is null or p_ref = '' then
    return app.field_problem(p_field, 'media_id_required', 'every img needs data-media-id naming a still image of the media library');
  end if;
  if not app.is_uuid(p_ref) then
    return app.field_problem(p_field, 'media_not_found', 'data-media-id must name a media item (a UUID) of this workspace');
  end if;
  select m.id, m.type, m.file_size, m.state into v
  from app.media_items m where m.id = p_ref::uuid and m.workspace_id = p_workspace_id;
  if v.id is null then
    return app.field_problem(p_field, 'media_not_found', 'no media item with this id in this workspace');
  elsif v.state <> 'active' then
    return app.field_problem(p_field, 'media_deleted', 'this media item is in the bin; restore it first');
  elsif v.type <> 'image' then
    return app.field_problem(p_field, 'media_not_still_image',
      format('articles take still images only (not %s)', case when v.type = 'gif' then 'a GIF' else 'a ' || v.type end));
  elsif v.file_size > app.article_image_max_bytes() then
    return app.field_problem(p_field, 'media_too_large',
      format('article images are at most 5 MB (5242880 bytes); this one has %s bytes', v.file_size));
  end if;
  return null;
end
$$;

-- Every media problem of an article: its inline images (read from the body)
-- and its cover. Empty array: fine.
create or replace function app.article_media_problems(p_workspace_id uuid, p_body text, p_cover uuid) returns jsonb
language plpgsql stable
as $$
declare
  v_out jsonb := '[]';
  v_refs text[];
  v_p jsonb;
  v_i int;
begin
  select app.article_body_media_refs(p_body) into v_refs;
  if cardinality(v_refs) > app.article_max_images() then
    v_out := v_out || app.field_problem('bodyHtml', 'too_many_images',
      format('an article has at most %s images; this body has %s', app.article_max_images(), cardinality(v_refs)));
  end if;
  for v_i in 1 .. coalesce(cardinality(v_refs), 0) loop
    select app.article_media_problem(p_workspace_id, v_refs[v_i], 'bodyHtml.images.' || (v_i - 1)) into v_p;
    if v_p is not null then
      v_out := v_out || v_p;
    end if;
  end loop;
  if p_cover is not null then
    select app.article_media_problem(p_workspace_id, p_cover::text, 'coverMediaId') into v_p;
    if v_p is not null then
      v_out := v_out || v_p;
    end if;
  end if;
  return v_out;
end
$$;

-- Problems of the integration an article is for.
create or replace function app.article_integration_problems(p_workspace_id uuid, p_integration_id uuid) returns jsonb
language plpgsql stable
as $$
declare
  v record;
begin
  select g.id, g.status, g.platform, coalesce((p.capabilities ->> 'canPublishArticles')::boolean, false) as can
  into v
  from app.integrations g join app.platforms p on p.code = g.platform
  where g.id = p_integration_id and g.workspace_id = p_workspace_id and g.deleted_at is null;
  if v.id is null then
    return jsonb_build_array(app.field_problem('integrationId', 'integration_not_found',
      'no connected channel with this id in this workspace'));
  elsif not v.can then
    return jsonb_build_array(app.field_problem('integrationId', 'articles_not_supported',
      format('%s does not publish articles; choose a channel whose content.canPublishArticles is true', v.platform)));
  elsif v.status <> 'active' then
    return jsonb_build_array(app.field_problem('integrationId', 'integration_unavailable',
      'the channel is disconnected; reconnect it or choose another channel'));
  end if;
  return '[]';
end
$$;

------------------------------------------------------------------------------
-- Triggers
------------------------------------------------------------------------------
-- 20: the article belongs to an article content item of its workspace; the
-- content changes only while a draft; body_version counts body changes; the
-- media rules hold; the image list follows the body.
create or replace function app.tg_articles_guard() returns trigger
language plpgsql
as $$
declare
  v_item record;
  v_problems jsonb;
begin
  select i.id, i.kind, i.status, i.workspace_id, i.organization_id, i.deleted_at into v_item
  from app.content_items i where i.id = new.content_item_id;
  if tg_op = 'INSERT' then
    if v_item.id is null or v_item.kind <> 'article' or v_item.workspace_id <> new.workspace_id
       or v_item.organization_id <> new.organization_id then
      perform app.raise(400, 'VALIDATION_FAILED', 'An article belongs to a content item of kind article in its workspace.',
        jsonb_build_object('fields', jsonb_build_array(app.field_problem('contentId', 'not_an_article',
          'no article content item with this id in this workspace'))));
    end if;
    new.body_version := 1;
  else
    if new.content_item_id <> old.content_item_id or new.workspace_id <> old.workspace_id
       or new.organization_id <> old.organization_id then
      perform app.raise(400, 'IMMUTABLE_FIELD', 'An article''s content item and workspace cannot change.',
        jsonb_build_object('contentId', old.content_item_id));
    end if;
    new.body_version := old.body_version + case when new.body_html is distinct from old.body_html then 1 else 0 end;
    new.created_at := old.created_at;
  end if;
  if tg_op = 'UPDATE' and v_item.deleted_at is not null then
    perform app.raise(409, 'CONTENT_DELETED', 'This content was deleted and cannot change.',
      jsonb_build_object('contentId', old.content_item_id));
  end if;
  if (tg_op = 'INSERT' or new.title <> old.title or new.body_html <> old.body_html
      or new.cover_media_id is distinct from old.cover_media_id or new.character_count <> old.character_count)
     and v_item.status <> 'draft' then
    perform app.raise(400, 'INVALID_CONTENT_STATUS',
      format('Only draft articles can be edited; this article is %s. Revert it to draft first.', v_item.status),
      jsonb_build_object('contentId', new.content_item_id, 'status', v_item.status, 'allowedStatuses', jsonb_build_array('draft')));
  end if;
  if tg_op = 'INSERT' or new.body_html <> old.body_html or new.cover_media_id is distinct from old.cover_media_id then
    select app.article_media_problems(new.workspace_id, new.body_html, new.cover_media_id) into v_problems;
    perform app.raise_field_problems(v_problems, 'The article breaks a rule; see details.fields.');
  end if;
  return new;
end
$$;
drop trigger if exists articles_20_guard on app.articles;
create trigger articles_20_guard before insert or update on app.articles
  for each row execute function app.tg_articles_guard();

-- 30: app.article_images mirrors the body's images (body order).
create or replace function app.tg_articles_sync_images() returns trigger
language plpgsql
as $$
begin
  delete from app.article_images where content_item_id = new.content_item_id;
  insert into app.article_images (content_item_id, position, media_id, organization_id, workspace_id)
  select new.content_item_id, n - 1, ref::uuid, new.organization_id, new.workspace_id
  from unnest(app.article_body_media_refs(new.body_html)) with ordinality as x (ref, n);
  return null;
end
$$;
drop trigger if exists articles_30_sync_images on app.articles;
drop trigger if exists articles_30_sync_images_insert on app.articles;
create trigger articles_30_sync_images_insert after insert on app.articles
  for each row execute function app.tg_articles_sync_images();
drop trigger if exists articles_30_sync_images_update on app.articles;
create trigger articles_30_sync_images_update after update on app.articles
  for each row when (old.body_html is distinct from new.body_html)
  execute function app.tg_articles_sync_images();

-- The image list is written only by the trigger above (through the body):
-- a direct write must still name a still image of at most 5 MB of the
-- workspace and belong to a draft article. (Deletes follow the body or a
-- cascade and are not guarded.)
create or replace function app.tg_article_images_guard() returns trigger
language plpgsql
as $$
declare
  v_status text;
  v_p jsonb;
begin
  select i.status into v_status from app.content_items i where i.id = new.content_item_id;
  if v_status is not null and v_status <> 'draft' then
    perform app.raise(400, 'INVALID_CONTENT_STATUS',
      format('Only draft articles can be edited; this article is %s.', v_status),
      jsonb_build_object('status', v_status, 'allowedStatuses', jsonb_build_array('draft')));
  end if;
  select app.article_media_problem(new.workspace_id, new.media_id::text, 'bodyHtml.images.' || new.position) into v_p;
  if v_p is not null then
    perform app.raise_field_problems(jsonb_build_array(v_p), 'The article breaks a rule; see details.fields.');
  end if;
  return new;
end
$$;
drop trigger if exists article_images_20_guard on app.article_images;
create trigger article_images_20_guard before insert or update on app.article_images
  for each row execute function app.tg_article_images_guard();

------------------------------------------------------------------------------
-- JSON
------------------------------------------------------------------------------
-- A media reference of an article. storageKey, contentType and filename are
-- for the server, which turns them into a signed view URL (`url`) and drops
-- them before answering.
create or replace function app.article_media_json(p_media_id uuid) returns jsonb
language sql stable
as $$
  select jsonb_build_object('mediaId', m.id, 'url', null, 'altText', m.alt_text,
    'storageKey', m.storage_key, 'contentType', m.content_type, 'filename', m.filename)
  from app.media_items m where m.id = p_media_id
$$;

create or replace function app.article_json(p_id uuid, p_detail boolean) returns jsonb
language sql stable
as $$
  select jsonb_build_object(
    'contentId', i.id,
    'rootId', i.root_id,
    'title', a.title,
    'status', i.status,
    'workflowStatus', app.content_workflow_status(i.status, i.scheduled_at),
    'editable', i.status = 'draft',
    'destination', jsonb_build_object(
      'integrationId', g.id, 'platform', g.platform, 'username', g.username, 'name', g.name,
      'canPublishArticles', coalesce((p.capabilities ->> 'canPublishArticles')::boolean, false)),
    'cover', case when a.cover_media_id is null then null else app.article_media_json(a.cover_media_id) end,
    'scheduledAt', i.scheduled_at,
    'sentAt', i.sent_at,
    'permalink', i.permalink,
    'platformDraft', case when a.platform_draft_article_id is null then null
      else jsonb_build_object('articleId', a.platform_draft_article_id, 'sentAt', a.platform_draft_sent_at) end,
    'updatedAt', greatest(a.updated_at, i.updated_at))
  || case when p_detail then jsonb_build_object(
    'bodyHtml', a.body_html,
    'bodyVersion', a.body_version::text,
    'images', coalesce((select jsonb_agg(app.article_media_json(x.media_id) order by x.position)
                        from app.article_images x where x.content_item_id = a.content_item_id), '[]'),
    'characterCount', a.character_count,
    'error', case when i.status = 'failed' then i.error end)
  else '{}'::jsonb end
  from app.articles a
  join app.content_items i on i.id = a.content_item_id
  join app.integrations g on g.id = i.integration_id
  join app.platforms p on p.code = g.platform
  where a.content_item_id = p_id
$$;

-- The article of the current workspace (live), locked for update when asked.
create or replace function app.article_for(p_id uuid, p_lock boolean) returns app.articles
language plpgsql
as $$
declare
  v app.articles;
begin
  if p_lock then
    perform 1 from app.content_items i
    where i.id = p_id and i.workspace_id = app.current_workspace_id() and i.deleted_at is null and i.kind = 'article'
    for update;
    select a.* into v from app.articles a
    join app.content_items i on i.id = a.content_item_id
    where a.content_item_id = p_id and a.workspace_id = app.current_workspace_id() and i.deleted_at is null
    for update of a;
  else
    select a.* into v from app.articles a
    join app.content_items i on i.id = a.content_item_id
    where a.content_item_id = p_id and a.workspace_id = app.current_workspace_id() and i.deleted_at is null;
  end if;
  if v.content_item_id is null then
    perform app.raise_not_found('article', p_id);
  end if;
  return v;
end
$$;

------------------------------------------------------------------------------
-- API
------------------------------------------------------------------------------
-- p_body: { integrationId, title, bodyHtml (sanitized by the server),
-- characterCount, coverMediaId?, problems? (the server's findings on the
-- body: structure, text length) }.
create or replace function api.create_article(p_body jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v_ws uuid;
  v_org uuid;
  v_integration uuid := (p_body ->> 'integrationId')::uuid;
  v_title text := p_body ->> 'title';
  v_html text := coalesce(p_body ->> 'bodyHtml', '');
  v_count int := coalesce((p_body ->> 'characterCount')::int, 0);
  v_cover uuid := (p_body ->> 'coverMediaId')::uuid;
  v_problems jsonb := coalesce(p_body -> 'problems', '[]');
  v_root uuid;
  v_item uuid;
begin
  perform app.require_role('editor');
  select app.current_workspace_id(), app.current_organization_id() into v_ws, v_org;
  v_problems := v_problems || (select app.article_integration_problems(v_ws, v_integration));
  if v_title is null or char_length(v_title) not between 1 and 200 then
    v_problems := v_problems || app.field_problem('title', 'length', 'a title has 1 to 200 characters');
  end if;
  v_problems := v_problems || (select app.article_media_problems(v_ws, v_html, v_cover));
  perform app.raise_field_problems(v_problems, 'The article is not valid; see details.fields.');
  insert into app.content_roots (organization_id, workspace_id, title, created_by)
  values (v_org, v_ws, v_title, app.current_user_id())
  returning id into v_root;
  insert into app.content_items (organization_id, workspace_id, root_id, integration_id, kind, status, created_by)
  values (v_org, v_ws, v_root, v_integration, 'article', 'draft', app.current_user_id())
  returning id into v_item;
  insert into app.articles (content_item_id, organization_id, workspace_id, title, body_html, character_count, cover_media_id)
  values (v_item, v_org, v_ws, v_title, v_html, v_count, v_cover);
  return (select app.article_json(v_item, true));
end
$$;

create or replace function api.list_articles(p_limit int, p_offset bigint) returns jsonb
language plpgsql stable
as $$
declare
  v_ws uuid;
  v_total bigint;
  v_items jsonb;
begin
  perform app.require_role('viewer');
  select app.current_workspace_id() into v_ws;
  select count(*) into v_total
  from app.articles a join app.content_items i on i.id = a.content_item_id
  where a.workspace_id = v_ws and i.workspace_id = v_ws and i.deleted_at is null;
  select coalesce(jsonb_agg(app.article_json(x.id, false) order by x.changed desc, x.id desc), '[]') into v_items
  from (
    select a.content_item_id as id, greatest(a.updated_at, i.updated_at) as changed
    from app.articles a join app.content_items i on i.id = a.content_item_id
    where a.workspace_id = v_ws and i.workspace_id = v_ws and i.deleted_at is null
    order by changed desc, id desc
    limit p_limit offset p_offset
  ) x;
  return jsonb_build_object('articles', v_items,
    'pagination', jsonb_build_object('limit', p_limit, 'offset', p_offset, 'total', v_total,
      'hasMore', p_offset + jsonb_array_length(v_items) < v_total));
end
$$;

create or replace function api.get_article(p_id uuid) returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  perform app.article_for(p_id, false);
  return jsonb_build_object('article', (select app.article_json(p_id, true)));
end
$$;

-- p_body: { title?, bodyHtml? (sanitized), characterCount? (with bodyHtml),
-- expectedBodyVersion?, coverMediaId? (null removes the cover), problems? }.
create or replace function api.update_article(p_id uuid, p_body jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v app.articles;
  v_status text;
  v_problems jsonb := coalesce(p_body -> 'problems', '[]');
  v_cover uuid;
begin
  perform app.require_role('editor');
  v := app.article_for(p_id, true);
  select status into v_status from app.content_items where id = p_id;
  if v_status <> 'draft' then
    perform app.raise(400, 'INVALID_CONTENT_STATUS',
      format('Only draft articles can be edited; this article is %s. Revert it to draft first.', v_status),
      jsonb_build_object('contentId', p_id, 'status', v_status, 'allowedStatuses', jsonb_build_array('draft')));
  end if;
  if p_body ? 'bodyHtml' and not p_body ? 'expectedBodyVersion' then
    v_problems := v_problems || app.field_problem('expectedBodyVersion', 'required',
      'replacing the body needs expectedBodyVersion (the bodyVersion you edited)');
  end if;
  if p_body ? 'title' and char_length(coalesce(p_body ->> 'title', '')) not between 1 and 200 then
    v_problems := v_problems || app.field_problem('title', 'length', 'a title has 1 to 200 characters');
  end if;
  v_cover := case when p_body ? 'coverMediaId' then (p_body ->> 'coverMediaId')::uuid else v.cover_media_id end;
  if p_body ? 'bodyHtml' or (p_body ? 'coverMediaId' and v_cover is not null) then
    v_problems := v_problems || (select coalesce(jsonb_agg(e), '[]') from jsonb_array_elements(
      app.article_media_problems(v.workspace_id, case when p_body ? 'bodyHtml' then p_body ->> 'bodyHtml' else '' end,
        case when p_body ? 'coverMediaId' then v_cover end)) e);
  end if;
  perform app.raise_field_problems(v_problems, 'The article is not valid; see details.fields.');
  if p_body ? 'expectedBodyVersion' and p_body ->> 'expectedBodyVersion' <> v.body_version::text then
    perform app.raise(409, 'POST_BODY_CHANGED',
      'The article body changed since the version you edited; get the article, merge, and send its bodyVersion.',
      jsonb_build_object('contentId', p_id, 'expectedBodyVersion', p_body ->> 'expectedBodyVersion',
        'currentBodyVersion', v.body_version::text));
  end if;
  update app.articles
  set title = case when p_body ? 'title' then p_body ->> 'title' else title end,
      body_html = case when p_body ? 'bodyHtml' then p_body ->> 'bodyHtml' else body_html end,
      character_count = case when p_body ? 'bodyHtml' then coalesce((p_body ->> 'characterCount')::int, 0) else character_count end,
      cover_media_id = v_cover
  where content_item_id = p_id;
  if p_body ? 'title' then
    update app.content_roots set title = p_body ->> 'title' where id = (select root_id from app.content_items where id = p_id);
  end if;
  return jsonb_build_object('article', (select app.article_json(p_id, true)));
end
$$;

-- What sending the article to the platform's drafts takes: the article (with
-- its media for signing), the integration, the fingerprint of the content,
-- and the draft already made when the content has not changed since.
create or replace function api.begin_article_platform_draft(p_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v app.articles;
  v_fp text;
  v_integration jsonb;
begin
  perform app.require_role('editor');
  v := app.article_for(p_id, true);
  v_fp := md5(jsonb_build_array(v.title, v.body_html, v.cover_media_id)::text);
  select app.article_integration_ref(p_id) into v_integration;
  return jsonb_build_object(
    'contentId', p_id,
    'fingerprint', v_fp,
    'existing', case when v.platform_draft_fingerprint = v_fp and v.platform_draft_article_id is not null
      then jsonb_build_object('articleId', v.platform_draft_article_id, 'draftUrl', v.platform_draft_url) end,
    'article', (select app.article_json(p_id, true)),
    'integration', v_integration);
end
$$;

create or replace function api.record_article_platform_draft(p_id uuid, p_article_id text, p_draft_url text, p_fingerprint text)
returns jsonb
language plpgsql volatile
as $$
begin
  perform app.require_role('editor');
  perform app.article_for(p_id, true);
  update app.articles
  set platform_draft_article_id = p_article_id,
      platform_draft_url = p_draft_url,
      platform_draft_sent_at = now(),
      platform_draft_fingerprint = p_fingerprint
  where content_item_id = p_id;
  return jsonb_build_object('contentId', p_id, 'articleId', p_article_id, 'draftUrl', p_draft_url);
end
$$;

-- The integration of an article as a connector needs it, secret included:
-- SECURITY DEFINER (the request role may not read webhook_secret), so it
-- checks itself that the caller is an editor of the article's workspace.
create or replace function app.article_integration_ref(p_id uuid) returns jsonb
language plpgsql stable security definer
set search_path = pg_catalog, app
as $$
declare
  v_ws uuid := app.current_workspace_id();
  v jsonb;
begin
  if v_ws is null or app.role_rank(app.current_workspace_role()) < 2
     or not (v_ws = any (app.accessible_workspace_ids())) then
    perform app.raise(403, 'ROLE_REQUIRED', 'This operation needs the editor role in this workspace.',
      jsonb_build_object('requiredRole', 'editor', 'role', app.current_workspace_role()));
  end if;
  select jsonb_build_object(
    'id', g.id, 'connector', g.connector, 'platform', g.platform, 'name', g.name, 'username', g.username,
    'status', g.status, 'deleted', g.deleted_at is not null,
    'settings', g.settings, 'capabilities', app.platform_capabilities_json(g.platform),
    'webhookUrl', g.webhook_url, 'webhookSecret', g.webhook_secret)
  into v
  from app.content_items i join app.integrations g on g.id = i.integration_id
  where i.id = p_id and i.workspace_id = v_ws and i.kind = 'article' and i.deleted_at is null;
  if v is null then
    perform app.raise_not_found('article', p_id);
  end if;
  return v;
end
$$;
alter function app.article_integration_ref(uuid) owner to pressroom_definer;

------------------------------------------------------------------------------
-- Grants: functions of this file only.
------------------------------------------------------------------------------
do $$
declare
  f record;
begin
  for f in
    select p.oid::regprocedure as sig, n.nspname, p.proname
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname in ('app', 'api') and p.prokind = 'f'
      and p.proname = any (array[
        'article_image_max_bytes', 'article_max_images', 'article_body_media_refs', 'is_uuid', 'article_media_problem',
        'article_media_problems', 'article_integration_problems', 'tg_articles_guard', 'tg_articles_sync_images',
        'tg_article_images_guard', 'article_media_json', 'article_json', 'article_for', 'article_integration_ref',
        'create_article', 'list_articles', 'get_article', 'update_article', 'begin_article_platform_draft',
        'record_article_platform_draft'])
  loop
    execute format('revoke execute on function %s from public', f.sig);
    if f.nspname = 'app' and f.proname = 'article_integration_ref' then
      execute format('grant execute on function %s to pressroom_request', f.sig);
    elsif f.nspname = 'app' then
      execute format('grant execute on function %s to pressroom_request, pressroom_definer, pressroom_worker', f.sig);
    else
      execute format('grant execute on function %s to pressroom_request', f.sig);
    end if;
  end loop;
end
$$;
