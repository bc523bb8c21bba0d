-- pg_temp.due(label, channel, caption, at, fetched): a scheduled edition of workspace A1 on a
-- channel of content.sql (default ig:A1.x), its caption its own or null (the root's 'hello
-- <label>'), due at `at` (default now), with its publish job as the content trigger writes it,
-- fetched (active) as a worker's batch gets it unless `fetched` is false. Needs personas.sql and
-- content.sql.
create function pg_temp.due(p_label text, p_integration text default 'ig:A1.x', p_caption text default null,
                            p_at timestamptz default now(), p_fetched boolean default true) returns uuid
language plpgsql as $$
begin
  insert into app.content_roots (id, organization_id, workspace_id, caption)
  values (pg_temp.id('root:' || p_label), pg_temp.id('A'), pg_temp.id('A1'), 'hello ' || p_label);
  insert into app.content_items (id, organization_id, workspace_id, root_id, integration_id, status, scheduled_at, caption)
  values (pg_temp.id(p_label), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('root:' || p_label), pg_temp.id(p_integration),
          'scheduled', p_at, p_caption);
  if p_fetched then
    update pgboss.job set state = 'active', started_on = now()
    where id = (select publish_job_id from app.content_items where id = pg_temp.id(p_label));
  end if;
  return pg_temp.id(p_label);
end
$$;
