--! Previous: sha1:98f25d69981d28915e47d9fe0dbeaf9630e8fa0d
--! Hash: sha1:779c588b4a2bf66d88404356ff213b71f1fe29e7
--! Message: media settings

--! split: 10-media-settings.sql
-- Media settings in SQL: the bin's retention and the upload session's
-- lifetime are read from app.settings (db/README.md, "Settings"), like the
-- other settings the rules read, instead of arriving as arguments.

insert into app.settings (key, value, kind, minimum, description) values
  ('media_bin_retention_seconds', '2592000', 'integer', 0,
   'How long binned media stays restorable before the purge job deletes it (MEDIA_BIN_RETENTION_SECONDS).'),
  ('upload_session_ttl_seconds', '3600', 'integer', 1,
   'Lifetime of an upload session (UPLOAD_SESSION_TTL_SECONDS).');

------------------------------------------------------------------------------
-- The bin
------------------------------------------------------------------------------
alter function api.delete_media(uuid, int) set schema app;
alter function app.delete_media(uuid, int) rename to bin_media;
revoke all on function app.bin_media(uuid, int) from public, pressroom_request;
grant execute on function app.bin_media(uuid, int) to pressroom_api;
comment on function app.bin_media(uuid, int) is
  'Moves an active media item to the bin for the given retention (refused with 409 MEDIA_IN_USE while scheduled '
  'content uses it); a binned item is returned unchanged. Called by api.delete_media with the setting in force.';

create function api.delete_media(p_id uuid) returns jsonb
language sql volatile
as $$ select app.bin_media(p_id, app.setting_int('media_bin_retention_seconds')) $$;
comment on function api.delete_media(uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/media/{id} (deleteMedia_v1) and the delete of bulk-delete: bins the item '
  'for media_bin_retention_seconds (app.settings). Editor role; 409 MEDIA_IN_USE while scheduled content uses it.';

-- The bulk action's delete takes the retention in force too (was p_args.retentionSeconds).
create or replace function app.media_bulk_one(p_action text, p_id uuid, p_args jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_items;
  v_labels uuid[];
begin
  case p_action
    when 'delete' then
      return api.delete_media(p_id);
    when 'restore' then
      return api.restore_media(p_id);
    when 'delete_forever' then
      perform api.delete_media_permanently(p_id);
      return null;
    when 'move' then
      v := app.media_item(p_id, true);
      perform app.media_require_active(v);
      update app.media_items set folder_id = (p_args ->> 'folderId')::uuid where id = v.id returning * into v;
      return app.media_json(v);
    when 'label' then
      select array_agg(x::uuid) into v_labels from jsonb_array_elements_text(p_args -> 'labelIds') x;
      v := app.media_item(p_id, true);
      perform app.media_require_active(v);
      insert into app.media_item_labels (media_id, label_id, workspace_id, organization_id, created_by)
      select v.id, x, v.workspace_id, v.organization_id, app.current_user_id() from unnest(v_labels) x
      on conflict do nothing;
      return app.media_json(v);
    when 'unlabel' then
      select array_agg(x::uuid) into v_labels from jsonb_array_elements_text(p_args -> 'labelIds') x;
      v := app.media_item(p_id, true);
      perform app.media_require_active(v);
      delete from app.media_item_labels where media_id = v.id and label_id = any (v_labels);
      return app.media_json(v);
  end case;
end
$$;
comment on function app.media_bulk_one(text, uuid, jsonb) is
  'One item of a bulk media action (delete, restore, delete_forever, move, label, unlabel); raises as the single '
  'routes do, so api.bulk_media reports a result per id.';

------------------------------------------------------------------------------
-- Uploads
------------------------------------------------------------------------------
alter function api.init_media_upload(text, text, bigint, uuid, text, int) set schema app;
alter function app.init_media_upload(text, text, bigint, uuid, text, int) rename to init_media_upload_with_ttl;
revoke all on function app.init_media_upload_with_ttl(text, text, bigint, uuid, text, int) from public, pressroom_request;
grant execute on function app.init_media_upload_with_ttl(text, text, bigint, uuid, text, int) to pressroom_api;
comment on function app.init_media_upload_with_ttl(text, text, bigint, uuid, text, int) is
  'Starts an upload session of the given lifetime after checking type, declared size and folder; called by '
  'api.init_media_upload with the setting in force.';

create function api.init_media_upload(p_filename text, p_content_type text, p_size bigint, p_folder_id uuid,
  p_alt_text text) returns jsonb
language sql volatile
as $$
  select app.init_media_upload_with_ttl(p_filename, p_content_type, p_size, p_folder_id, p_alt_text,
    app.setting_int('upload_session_ttl_seconds'))
$$;
comment on function api.init_media_upload(text, text, bigint, uuid, text) is
  'Serves POST /v1/workspaces/{workspaceId}/media/upload (initMediaUpload_v1): starts an upload session that lives '
  'upload_session_ttl_seconds (app.settings). Editor role; 413 MEDIA_TOO_LARGE, 415 UNSUPPORTED_MEDIA_FORMAT, '
  '400 VALIDATION_FAILED, 404 NOT_FOUND (folder).';

select app.harden_api_functions();
