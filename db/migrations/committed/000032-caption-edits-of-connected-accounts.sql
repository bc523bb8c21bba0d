--! Previous: sha1:13125e11169d139433938a675e2a8046eb895f6d
--! Hash: sha1:1049e3f2a4756634a6888446abb00fb43342eb32
--! Message: caption edits of connected accounts

--! split: 01-caption-edit-connected-accounts.sql
-- A published caption is edited through any connector whose platform can edit
-- captions (app.platforms capabilities editPublishedCaption): a connected
-- account's channel too (Mastodon, LinkedIn), with the account's credentials,
-- which the route loads for that one call (server/routes/publishing.ts). Before,
-- only sandbox and webhook channels could.
CREATE OR REPLACE FUNCTION api.published_caption_target(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.content_items;
  g record;
begin
  perform app.require_role('editor');
  select * into v from app.content_items where id = p_id and workspace_id = app.current_workspace_id() and deleted_at is null;
  if v.id is null then
    perform app.raise_not_found('content', p_id);
  end if;
  if v.status <> 'sent' then
    perform app.raise(400, 'INVALID_CONTENT_STATUS',
      format('Only published (sent) content has a published caption; this content is %s.', v.status),
      jsonb_build_object('contentId', v.id, 'status', v.status, 'allowedStatuses', jsonb_build_array('sent')));
  end if;
  select i.id, i.connector, i.platform, i.name, i.username, i.settings, i.webhook_url, i.deleted_at,
         coalesce((p.capabilities ->> 'editPublishedCaption')::boolean, true) as can_edit
  into g from app.integrations i left join app.platforms p on p.code = i.platform where i.id = v.integration_id;
  if not g.can_edit then
    perform app.raise(409, 'CAPTION_EDIT_NOT_SUPPORTED',
      format('The channel''s connector (%s, %s) cannot edit a published caption.', g.connector, g.platform),
      jsonb_build_object('contentId', v.id, 'connector', g.connector, 'platform', g.platform));
  end if;
  if g.deleted_at is not null then
    perform app.raise(409, 'INTEGRATION_UNAVAILABLE', 'The channel of this content was deleted.', jsonb_build_object('integrationId', g.id));
  end if;
  return jsonb_build_object('contentId', v.id, 'integrationId', g.id, 'connector', g.connector, 'platform', g.platform,
    'name', g.name, 'username', g.username, 'settings', g.settings, 'webhookUrl', g.webhook_url,
    'platformPostId', v.platform_post_id, 'caption', v.caption,
    'attempt', coalesce((select edits from app.published_captions where content_item_id = v.id), 0) + 1);
end
$function$;

comment on function api.published_caption_target(uuid) is 'Serves PATCH /v1/workspaces/{workspaceId}/content/{id}/published-caption (updatePublishedCaption_v1), first step: checks only, and returns what the connector needs; the route then calls the connector (a connected account with its credentials) and api.record_published_caption. Requires the editor role; 404 NOT_FOUND, 400 INVALID_CONTENT_STATUS (not sent), 409 CAPTION_EDIT_NOT_SUPPORTED (the platform cannot edit captions), 409 INTEGRATION_UNAVAILABLE.';
