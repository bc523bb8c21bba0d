-- pg_temp.due(label, channel): a scheduled edition of workspace A1 due now on a channel of
-- content.sql, its publish job fetched (active), as a worker's batch gets it. Needs
-- personas.sql and content.sql.
create function pg_temp.due(p_label text, p_integration text) returns uuid
language plpgsql as $$
begin
  insert into app.content_roots (id, organization_id, workspace_id, caption)
  values (pg_temp.id('root:' || p_label), pg_temp.id('A'), pg_temp.id('A1'), 'hello ' || p_label);
  insert into app.content_items (id, organization_id, workspace_id, root_id, integration_id, status, scheduled_at)
  values (pg_temp.id(p_label), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('root:' || p_label), pg_temp.id(p_integration),
          'scheduled', now());
  update pgboss.job set state = 'active', started_on = now()
  where id = (select publish_job_id from app.content_items where id = pg_temp.id(p_label));
  return pg_temp.id(p_label);
end
$$;
