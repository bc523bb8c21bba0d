-- Reviews, part 5: comment attachments through the media library's signed-upload
-- flow (init, PUT the bytes to the signed URL, complete, abort). Images (PNG,
-- JPEG, WebP, GIF) and PDFs up to 25 MB; the type is decided from the bytes at
-- completion (server/routes/reviews.ts). An aborted or expired upload queues
-- its keys in app.media_storage_garbage, whose bytes the media purge job
-- deletes, so it leaves no file behind. Re-creates api.storage_upload_session
-- and api.storage_media_object (media area) with the attachments added
-- (marked "reviews"), and app.review_activity_json (10-reviews.sql) with them.

insert into app.settings (key, value, kind, minimum, description) values
  ('review_attachment_max_bytes', '26214400', 'integer', 1,
   'Reviews: the largest comment attachment in bytes (25 MB; 413 MEDIA_TOO_LARGE).')
on conflict (key) do nothing;

create table app.review_attachments (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  review_id uuid not null references app.reviews (id) on delete cascade,
  item_id uuid not null references app.review_items (id) on delete cascade,
  activity_id uuid references app.review_activity (id) on delete set null,
  filename text not null check (length(btrim(filename)) between 1 and 255),
  content_type text not null check (content_type in ('image/png', 'image/jpeg', 'image/webp', 'image/gif', 'application/pdf')),
  declared_size bigint not null check (declared_size > 0),
  file_size bigint,
  checksum_sha256 text,
  state text not null default 'pending' check (state in ('pending', 'completed', 'aborted', 'expired')),
  upload_key text not null,
  storage_key text not null,
  uploaded_by text,
  expires_at timestamptz not null,
  created_at timestamptz not null default now(),
  completed_at timestamptz
);
create index review_attachments_item_idx on app.review_attachments (item_id);
create index review_attachments_activity_idx on app.review_attachments (activity_id) where activity_id is not null;
create index review_attachments_pending_idx on app.review_attachments (expires_at) where state = 'pending';
create index review_attachments_workspace_idx on app.review_attachments (workspace_id);
create index review_attachments_organization_id_idx on app.review_attachments (organization_id);
comment on table app.review_attachments is 'A comment attachment of a review item: an upload session (pending; bytes PUT to uploads/<workspace>/<id>) that completes into media/<workspace>/<id> once the bytes are verified (an image or a PDF of the declared size, at most review_attachment_max_bytes), or is aborted or expires (its keys queued in app.media_storage_garbage). A comment references completed attachments (activity_id). Tenant policies of app.apply_tenant_policies (writes need editor).';
select app.apply_tenant_policies('app.review_attachments', array['select', 'insert', 'update']);
select app.grant_api_columns('app.review_attachments', array['insert', 'update']);
grant select on app.review_attachments to pressroom_api;

create function app.review_attachment_json(a app.review_attachments) returns jsonb
language sql stable as $$
  select jsonb_build_object('id', a.id, 'reviewId', a.review_id, 'itemId', a.item_id, 'activityId', a.activity_id,
    'filename', a.filename, 'contentType', a.content_type, 'declaredSize', a.declared_size, 'fileSize', a.file_size,
    'checksumSha256', a.checksum_sha256, 'state', a.state, 'expiresAt', a.expires_at, 'createdAt', a.created_at,
    'completedAt', a.completed_at, 'storageKey', case when a.state = 'pending' then a.upload_key else a.storage_key end)
$$;
comment on function app.review_attachment_json(app.review_attachments) is 'An attachment with its storage key (the upload key while pending: the route signs the upload URL; the final key once completed: the route signs the view URL and drops the key).';
grant execute on function app.review_attachment_json(app.review_attachments) to pressroom_api, pressroom_definer;

create function app.review_attachment_for(r app.reviews, p_item uuid, p_id uuid, p_lock boolean default false) returns app.review_attachments
language plpgsql as $$
declare
  a app.review_attachments;
begin
  if p_lock then
    select * into a from app.review_attachments where id = p_id and review_id = r.id and item_id = p_item for update;
  else
    select * into a from app.review_attachments where id = p_id and review_id = r.id and item_id = p_item;
  end if;
  if a.id is null then
    perform app.raise_not_found('attachment', p_id);
  end if;
  return a;
end
$$;
comment on function app.review_attachment_for(app.reviews, uuid, uuid, boolean) is 'The attachment of this review item with this id, or 404 NOT_FOUND.';
grant execute on function app.review_attachment_for(app.reviews, uuid, uuid, boolean) to pressroom_api;

-- Queues an attachment's keys for the media purge job (bytes may sit under either).
create function app.review_attachment_discard(a app.review_attachments, p_reason text) returns void
language sql as $$
  insert into app.media_storage_garbage (storage_key, workspace_id, organization_id, reason)
  values (a.upload_key, a.workspace_id, a.organization_id, p_reason), (a.storage_key, a.workspace_id, a.organization_id, p_reason)
  on conflict (storage_key) do nothing
$$;
comment on function app.review_attachment_discard(app.review_attachments, text) is 'Queues both storage keys of an aborted or expired attachment in app.media_storage_garbage (the media purge job deletes the bytes).';
grant execute on function app.review_attachment_discard(app.review_attachments, text) to pressroom_api, pressroom_definer;

create function api.init_review_attachment(p_review uuid, p_item uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  it app.review_items;
  a app.review_attachments;
  v_id uuid := gen_random_uuid();
  v_max bigint := app.setting_int('review_attachment_max_bytes');
begin
  perform app.require_role('editor');
  r := app.review_for(p_review);
  it := app.review_item_for(r, p_item);
  perform app.require_review_status(r, array['draft', 'active']);
  if (p_body ->> 'contentType') not in ('image/png', 'image/jpeg', 'image/webp', 'image/gif', 'application/pdf') then
    perform app.raise(415, 'UNSUPPORTED_MEDIA_FORMAT', format('%s cannot be attached; images (PNG, JPEG, WebP, GIF) and PDFs can.', p_body ->> 'contentType'),
      jsonb_build_object('field', 'body.contentType', 'supported', jsonb_build_array('image/png', 'image/jpeg', 'image/webp', 'image/gif', 'application/pdf')));
  end if;
  if (p_body ->> 'size')::bigint > v_max then
    perform app.raise(413, 'MEDIA_TOO_LARGE', format('An attachment may be at most %s bytes; this one is %s bytes.', v_max, p_body ->> 'size'),
      jsonb_build_object('field', 'body.size', 'maxBytes', v_max, 'size', (p_body ->> 'size')::bigint));
  end if;
  if btrim(p_body ->> 'filename') = '' or (p_body ->> 'filename') ~ '[[:cntrl:]/\\]' then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('filename', 'invalid', 'a file name without slashes or control characters')),
      'The file name is not valid.');
  end if;
  insert into app.review_attachments (id, organization_id, workspace_id, review_id, item_id, filename, content_type, declared_size,
    upload_key, storage_key, uploaded_by, expires_at)
  values (v_id, r.organization_id, r.workspace_id, r.id, it.id, btrim(p_body ->> 'filename'), p_body ->> 'contentType',
    (p_body ->> 'size')::bigint, format('uploads/%s/%s', r.workspace_id, v_id), format('media/%s/%s', r.workspace_id, v_id),
    app.current_approver_key(), now() + make_interval(secs => app.setting_int('upload_session_ttl_seconds')))
  returning * into a;
  return app.review_attachment_json(a);
end
$$;
comment on function api.init_review_attachment(uuid, uuid, jsonb) is 'Serves POST .../reviews/{reviewId}/items/{itemId}/comment-attachments/init (initReviewAttachment_v1): an upload session for an image or PDF of at most review_attachment_max_bytes, expiring after upload_session_ttl_seconds; the route signs the upload URL. Editor role; 404 NOT_FOUND, 409 INVALID_REVIEW_STATUS, 413 MEDIA_TOO_LARGE, 415 UNSUPPORTED_MEDIA_FORMAT.';

create function api.begin_review_attachment_completion(p_review uuid, p_item uuid, p_id uuid) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  a app.review_attachments;
begin
  perform app.require_role('editor');
  r := app.review_for(p_review);
  a := app.review_attachment_for(r, p_item, p_id, true);
  if a.state = 'completed' then
    return jsonb_build_object('state', 'completed', 'attachment', app.review_attachment_json(a));
  end if;
  if a.state <> 'pending' or a.expires_at <= now() then
    perform app.raise(409, 'UPLOAD_SESSION_CLOSED', format('This upload is %s; start another.', case when a.state = 'pending' then 'expired' else a.state end),
      jsonb_build_object('attachmentId', a.id, 'state', a.state));
  end if;
  return jsonb_build_object('state', 'pending', 'uploadKey', a.upload_key, 'finalKey', a.storage_key,
    'declaredSize', a.declared_size, 'contentType', a.content_type);
end
$$;
comment on function api.begin_review_attachment_completion(uuid, uuid, uuid) is 'First phase of POST .../comment-attachments/{attachmentId}/complete (completeReviewAttachment_v1): the completed attachment, or what verifying the bytes needs (upload and final key, declared size and type). Editor role; 404 NOT_FOUND, 409 UPLOAD_SESSION_CLOSED.';

create function api.finish_review_attachment_completion(p_review uuid, p_item uuid, p_id uuid, p_facts jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  a app.review_attachments;
begin
  perform app.require_role('editor');
  r := app.review_for(p_review);
  a := app.review_attachment_for(r, p_item, p_id, true);
  if a.state = 'completed' then
    return app.review_attachment_json(a);
  end if;
  if a.state <> 'pending' then
    perform app.raise(409, 'UPLOAD_SESSION_CLOSED', format('This upload is %s; start another.', a.state),
      jsonb_build_object('attachmentId', a.id, 'state', a.state));
  end if;
  update app.review_attachments set state = 'completed', completed_at = now(), file_size = (p_facts ->> 'fileSize')::bigint,
    checksum_sha256 = p_facts ->> 'checksumSha256', content_type = p_facts ->> 'contentType'
  where id = a.id returning * into a;
  return app.review_attachment_json(a);
end
$$;
comment on function api.finish_review_attachment_completion(uuid, uuid, uuid, jsonb) is 'Last phase of completeReviewAttachment_v1: records the verified bytes (size, SHA-256, type from the bytes). Editor role.';

create function api.abort_review_attachment(p_review uuid, p_item uuid, p_id uuid) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  a app.review_attachments;
begin
  perform app.require_role('editor');
  r := app.review_for(p_review);
  a := app.review_attachment_for(r, p_item, p_id, true);
  if a.state <> 'pending' then
    perform app.raise(409, 'UPLOAD_SESSION_CLOSED', format('This upload is %s and cannot be aborted.', a.state),
      jsonb_build_object('attachmentId', a.id, 'state', a.state));
  end if;
  update app.review_attachments set state = 'aborted' where id = a.id returning * into a;
  perform app.review_attachment_discard(a, 'upload_aborted');
  return jsonb_build_object('attachmentId', a.id, 'state', a.state);
end
$$;
comment on function api.abort_review_attachment(uuid, uuid, uuid) is 'Serves POST .../comment-attachments/{attachmentId}/abort (abortReviewAttachment_v1): a pending upload is aborted and whatever was PUT is queued for deletion. Editor role; 404 NOT_FOUND, 409 UPLOAD_SESSION_CLOSED.';

-- The reviews job: pending attachments past their expiry expire, their bytes queued for deletion.
create function app.expire_review_attachments() returns int
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  a app.review_attachments;
  v_count int := 0;
begin
  for a in select * from app.review_attachments where state = 'pending' and expires_at <= now() order by expires_at limit 1000
           for update skip locked loop
    update app.review_attachments set state = 'expired' where id = a.id;
    perform app.review_attachment_discard(a, 'upload_expired');
    v_count := v_count + 1;
  end loop;
  return v_count;
end
$$;
alter function app.expire_review_attachments() owner to pressroom_definer;
comment on function app.expire_review_attachments() is 'The reviews.expire-due job also expires never-completed attachment uploads and queues their keys in app.media_storage_garbage. Idempotent.';
grant execute on function app.expire_review_attachments() to pressroom_worker;

-- Comments reference completed attachments of their item (the comment functions of 10a call this).
create function app.review_attach_to_comment(p_item uuid, p_activity uuid, p_ids uuid[]) returns void
language plpgsql as $$
declare
  v_bad uuid[];
begin
  v_bad := array(select x from unnest(coalesce(p_ids, '{}')) x
                 where not exists (select 1 from app.review_attachments a where a.id = x and a.item_id = p_item
                                   and a.state = 'completed' and a.activity_id is null));
  if cardinality(v_bad) > 0 then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('attachmentIds', 'not_attachable',
      'every attachment must be a completed upload of this item, not yet on a comment')), 'An attachment cannot be used.',
      jsonb_build_object('attachmentIds', to_jsonb(v_bad)));
  end if;
  update app.review_attachments set activity_id = p_activity where id = any (p_ids);
end
$$;
comment on function app.review_attach_to_comment(uuid, uuid, uuid[]) is 'Puts completed attachments of an item on a comment (400 VALIDATION_FAILED for any other).';
grant execute on function app.review_attach_to_comment(uuid, uuid, uuid[]) to pressroom_api, pressroom_definer;

-- reviews: the storage router accepts the bytes of attachment uploads too (media area's function, attachments added).
create or replace function api.storage_upload_session(p_id uuid)
returns jsonb
language sql stable security definer set search_path = pg_catalog, app as $$
  select coalesce(
    (select jsonb_build_object('sessionId', s.id, 'state', s.state, 'storageKey', s.storage_key,
       'declaredSize', s.declared_size, 'contentType', s.content_type, 'expiresAt', s.expires_at,
       'expired', s.expires_at <= now())
     from app.media_upload_sessions s where s.id = p_id),
    (select jsonb_build_object('sessionId', a.id, 'state', a.state, 'storageKey', a.upload_key,  -- reviews
       'declaredSize', a.declared_size, 'contentType', a.content_type, 'expiresAt', a.expires_at,
       'expired', a.expires_at <= now())
     from app.review_attachments a where a.id = p_id))
$$;

-- reviews: the storage router serves completed attachments too (media area's function, attachments added).
create or replace function api.storage_media_object(p_id uuid)
returns jsonb
language sql stable security definer set search_path = pg_catalog, app as $$
  select coalesce(
    (select jsonb_build_object('id', m.id, 'storageKey', m.storage_key, 'contentType', m.content_type,
       'filename', m.filename, 'fileSize', m.file_size, 'checksumSha256', m.checksum_sha256)
     from app.media_items m where m.id = p_id),
    (select jsonb_build_object('id', a.id, 'storageKey', a.storage_key, 'contentType', a.content_type,  -- reviews
       'filename', a.filename, 'fileSize', a.file_size, 'checksumSha256', a.checksum_sha256)
     from app.review_attachments a where a.id = p_id and a.state = 'completed'))
$$;

-- An activity entry with its reactions and, for comments, its attachments
-- (storage keys: the routes sign view URLs and drop the keys).
create or replace function app.review_activity_json(a app.review_activity) returns jsonb
language sql stable as $$
  select jsonb_build_object('id', a.id, 'reviewId', a.review_id, 'itemId', a.item_id, 'kind', a.kind, 'event', a.event,
    'actor', a.actor_key, 'actorName', a.actor_name, 'body', a.body, 'mentions', to_jsonb(a.mentions), 'data', a.data,
    'reactions', coalesce((select jsonb_agg(jsonb_build_object('emoji', x.emoji, 'count', x.n, 'actors', x.actors) order by x.emoji)
                           from (select emoji, count(*)::int as n, jsonb_agg(actor_key order by actor_key) as actors
                                 from app.review_reactions where activity_id = a.id group by emoji) x), '[]'),
    'attachments', coalesce((select jsonb_agg(jsonb_build_object('id', t.id, 'filename', t.filename, 'contentType', t.content_type,
                               'fileSize', t.file_size, 'storageKey', t.storage_key) order by t.created_at, t.id)
                             from app.review_attachments t where t.activity_id = a.id and t.state = 'completed'), '[]'),
    'createdAt', a.created_at)
$$;

select app.harden_api_functions();
