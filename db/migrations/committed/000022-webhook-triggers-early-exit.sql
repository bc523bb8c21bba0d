--! Previous: sha1:056fe5cfff726e939ad136192819c121f0e8637c
--! Hash: sha1:a211577ddc882be7d47a817ebd60f3dc2e48d776
--! Message: webhook triggers early exit

--! split: 40-webhook-triggers-early-exit.sql
-- Lifecycle webhook triggers cost nothing measurable in a workspace without
-- subscriptions (the common case on the publishing path; profile in
-- bench/README.md, scenario `publishing`).
--
--   content_items_90_webhooks       the trigger function decides the event
--                                   type first and returns before building
--                                   the event's data unless the workspace
--                                   has a subscription.
--   publishing_states_90_webhooks   fires only for a row entering
--                                   awaiting_confirmation (WHEN clause), so
--                                   the engine's other state writes call no
--                                   function at all.
--
-- Which events are written, and when, is unchanged (pgTAP
-- 96-lifecycle-webhooks, tests/api/webhook-events.test.ts).

create or replace function app.tg_content_items_webhooks() returns trigger
language plpgsql security definer set search_path = pg_catalog as $$
declare
  v_types text[];
begin
  if tg_op = 'INSERT' then
    v_types := case when new.status = 'scheduled' then array['content.created', 'content.scheduled']
                    else array['content.created'] end;
  elsif new.deleted_at is not null and old.deleted_at is null then
    v_types := array['content.deleted'];
  elsif new.status is distinct from old.status or (new.status = 'scheduled' and new.scheduled_at is distinct from old.scheduled_at) then
    v_types := case new.status when 'scheduled' then array['content.scheduled'] when 'sent' then array['content.published']
                               when 'failed' then array['content.failed'] end;
  end if;
  if v_types is null
     or not exists (select 1 from app.webhook_subscriptions s where s.workspace_id = new.workspace_id and s.events && v_types) then
    return null;
  end if;
  for i in 1 .. cardinality(v_types) loop
    perform app.webhook_emit(new.organization_id, new.workspace_id, v_types[i], new.id, app.webhook_content_data(new));
  end loop;
  return null;
end
$$;
comment on function app.tg_content_items_webhooks() is 'Emits content.created, content.scheduled (also on a new time), content.published (sent), content.failed and content.deleted for an edition, in the transaction of the change; returns at once, before building any data, when no subscription of the workspace wants the event.';

drop trigger publishing_states_90_webhooks on app.publishing_states;
create trigger publishing_states_90_webhooks after insert or update on app.publishing_states
  for each row when (new.state = 'awaiting_confirmation')
  execute function app.tg_publishing_states_webhooks();
