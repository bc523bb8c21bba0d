-- What only the publishing engine may write.
--
-- The status machine (app.content_transition_allowed, enforced by trigger
-- content_items_20_status_machine) allows scheduled -> sent and
-- scheduled -> failed, but only the engine makes those moves: the worker
-- (pressroom_worker) and the engine's definer functions (app.publish_record,
-- app.publishing_resolve, owned by pressroom_definer). A request, and a DBA
-- acting as pressroom_api or pressroom_request, is refused with 42501, as it
-- is for the engine-only columns (sent_at, permalink, platform_post_id,
-- publish_job_id), which 30-grants.sql grants to nobody but the engine.
-- A request may clear the last publishing error (retry does) but not write one.

create function app.is_request_role() returns boolean
language sql stable parallel safe
set search_path = pg_catalog
as $$ select current_user in ('pressroom_api', 'pressroom_request') $$;
comment on function app.is_request_role() is
  'True when the statement runs as a request (pressroom_api inside api functions, or pressroom_request).';
grant execute on function app.is_request_role() to pressroom_api, pressroom_definer, pressroom_worker;

create function app.tg_content_items_engine_only() returns trigger
language plpgsql
set search_path = pg_catalog
as $$
begin
  if not app.is_request_role() then
    return new;
  end if;
  if new.status in ('sent', 'failed') and new.status is distinct from old.status then
    raise exception using errcode = '42501',
      message = format('Only the publishing engine marks content %s.', new.status),
      detail = 'ENGINE_ONLY';
  end if;
  if new.error is not null and new.error is distinct from old.error then
    raise exception using errcode = '42501',
      message = 'Only the publishing engine records a publishing error.',
      detail = 'ENGINE_ONLY';
  end if;
  return new;
end
$$;
comment on function app.tg_content_items_engine_only() is
  'Refuses a request''s move of an edition to sent or failed, and a request''s write of its publishing error (42501).';
create trigger content_items_15_engine_only before update of status, error on app.content_items
  for each row execute function app.tg_content_items_engine_only();
