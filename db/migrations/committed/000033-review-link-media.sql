--! Previous: sha1:1049e3f2a4756634a6888446abb00fb43342eb32
--! Hash: sha1:1b4a7dc89fc92cddbf5fa3afb4bee2919cc83e67
--! Message: review link media

--! split: 01-current.sql
-- The client review page (web/review/main.tsx, docs/web-app.md) shows each
-- item as the platform will show it: its media with their alt text and
-- dimensions, and the media of its thread messages. GET /v1/review-link
-- answered the edition's own media without alt text and each thread message
-- with media ids only, which a client cannot open. One helper now describes a
-- review link's media (with the storage key the route turns into a signed
-- view URL and drops), used for the edition and for every thread message.

create or replace function app.review_link_media_json(p_ids uuid[])
returns jsonb
language sql
stable
set search_path = pg_catalog, app
as $$
  select coalesce(jsonb_agg(jsonb_build_object(
      'id', m.id, 'type', m.type, 'contentType', m.content_type, 'filename', m.filename,
      'altText', m.alt_text, 'width', m.width, 'height', m.height, 'durationMs', m.duration_ms,
      'storageKey', m.storage_key) order by x.n), '[]')
  from unnest(coalesce(p_ids, '{}')) with ordinality x (id, n)
  join app.media_items m on m.id = x.id
$$;
alter function app.review_link_media_json(uuid[]) owner to pressroom_definer;
revoke all on function app.review_link_media_json(uuid[]) from public;
comment on function app.review_link_media_json(uuid[]) is 'The media of a review link''s item or thread message, in order: id, type, contentType, filename, altText, width, height, durationMs and the storage key (the route signs a view URL from it and drops it). Called by api.review_link_get only.';

create or replace function api.review_link_get()
returns jsonb
language plpgsql
stable
security definer
set search_path = pg_catalog, app
as $$
declare
  l app.review_links := app.review_link_context();
  r app.reviews;
begin
  select * into r from app.reviews where id = l.review_id;
  return jsonb_build_object(
    'review', jsonb_build_object('id', r.id, 'title', r.title, 'message', r.message, 'status', r.status, 'dueAt', r.due_at),
    'reviewer', jsonb_build_object('email', l.email, 'name', l.name, 'expiresAt', l.expires_at),
    'items', coalesce((select jsonb_agg(jsonb_build_object('id', it.id, 'contentId', it.content_id, 'state', it.state,
        'currentStage', it.current_stage, 'currentStageName', case when it.state = 'pending' then r.stages -> it.current_stage ->> 'name' end,
        'awaitingYou', ('client:' || l.email) = any (it.waiting_on),
        'platform', g.platform, 'channelName', g.name,
        'caption', coalesce(i.caption, cr.caption),
        'thread', (select coalesce(jsonb_agg(jsonb_build_object('caption', coalesce(e ->> 'caption', ''),
                     'media', app.review_link_media_json(app.jsonb_uuids(coalesce(e -> 'mediaIds', '[]')))) order by n), '[]')
                   from jsonb_array_elements(i.thread) with ordinality t (e, n)),
        'scheduledAt', coalesce(i.scheduled_at, i.intended_publish_at),
        'media', app.review_link_media_json(app.content_item_media_ids(i.id, i.root_id, i.own_media))) order by it.created_at, it.id)
      from app.review_items it
      join app.content_items i on i.id = it.content_id
      join app.content_roots cr on cr.id = i.root_id
      join app.integrations g on g.id = i.integration_id
      where it.review_id = r.id and it.state <> 'removed'), '[]'));
end
$$;
comment on function api.review_link_get() is 'Serves GET /v1/review-link (getReviewLink_v1): the link''s review and its items as a client sees them (platform, channel, caption, scheduled time, media with alt text, thread messages with their media; the route signs media view URLs and drops the storage keys). Review link only.';
