-- The list totals kept by trigger (db/migrations/committed/000011-scale-batched-publishing-list-totals-search-metrics-reporting.sql, split 15b-lists.sql):
-- app.content_item_counts follows every insert, status change, soft delete,
-- restore and hard delete (an edition's channel never changes), folding (app.compact_content_item_counts) changes no total, and
-- app.content_list_total answers what an exact count answers, or null for a
-- filter it cannot serve.
begin;
select plan(23);
-- @include personas.sql
-- @include content.sql

create function pg_temp.exact(p_where text) returns bigint
language plpgsql as $$
declare n bigint;
begin
  execute format('select count(*) from app.content_items i where i.workspace_id = %L and i.deleted_at is null and %s',
                 pg_temp.id('A1'), p_where) into n;
  return n;
end
$$;
create function pg_temp.total(p_query jsonb) returns bigint
language plpgsql as $$
declare n bigint;
begin
  perform pg_temp.act_as('A.owner', 'A1');
  n := app.content_list_total(p_query);
  reset role;
  return n;
end
$$;
create function pg_temp.matches(p_label text) returns boolean
language sql as $$
  select pg_temp.total('{}') = pg_temp.exact($w$i.status in ('draft', 'scheduled', 'sent', 'failed')$w$)
     and pg_temp.total('{"status": "draft"}') = pg_temp.exact($w$i.status = 'draft'$w$)
     and pg_temp.total('{"status": "scheduled"}') = pg_temp.exact($w$i.status = 'scheduled'$w$)
     and pg_temp.total(jsonb_build_object('integrationId', pg_temp.id('ig:A1.x'))) =
         pg_temp.exact(format($w$i.status in ('draft', 'scheduled', 'sent', 'failed') and i.integration_id = %L$w$, pg_temp.id('ig:A1.x')))
     and pg_temp.total(jsonb_build_object('integrationId', pg_temp.id('ig:A1.li'))) =
         pg_temp.exact(format($w$i.status in ('draft', 'scheduled', 'sent', 'failed') and i.integration_id = %L$w$, pg_temp.id('ig:A1.li')))
$$;

-- Ten roots with an edition on x and on linkedin, through every trigger.
insert into app.content_roots (id, organization_id, workspace_id, caption)
select pg_temp.id('r' || n), pg_temp.id('A'), pg_temp.id('A1'), 'Post ' || n from generate_series(1, 10) n;
insert into app.content_items (id, organization_id, workspace_id, root_id, integration_id, caption)
select pg_temp.id('e' || n || c), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('r' || n), pg_temp.id(g), 'Post ' || n
from generate_series(1, 10) n, (values ('x', 'ig:A1.x'), ('li', 'ig:A1.li')) v (c, g);
select ok(pg_temp.matches('insert'), 'after inserts: every total equals the exact count');
select is(pg_temp.total('{}'), 20::bigint, '... 20 live editions');

update app.content_items set status = 'scheduled', scheduled_at = now() + interval '1 day'
where id in (pg_temp.id('e1x'), pg_temp.id('e2x'), pg_temp.id('e3li'));
select ok(pg_temp.matches('schedule'), 'after a status change');
select is(pg_temp.total('{"status": "scheduled"}'), 3::bigint, '... 3 scheduled');

update app.content_items set status = 'pending_approval' where id = pg_temp.id('e4x');
select ok(pg_temp.matches('review') and pg_temp.total('{"status": "pending_approval"}') = 1, 'after a move out of the default statuses');

update app.content_items set deleted_at = now() where id in (pg_temp.id('e5x'), pg_temp.id('e5li'));
select ok(pg_temp.matches('soft delete'), 'after a soft delete');
select is(pg_temp.total('{}'), 17::bigint, '... 17 live in the default statuses');
update app.content_items set deleted_at = null where id = pg_temp.id('e5x');
select ok(pg_temp.matches('restore'), 'after a restore');

delete from app.content_items where id = pg_temp.id('e6li');
select ok(pg_temp.matches('delete'), 'after a hard delete');

-- The workflow split: "publishing" is scheduled and due.
-- Time passes (triggers off for this one update: a due time cannot be set in the past; counts do not depend on it).
set local session_replication_role = replica;
update app.content_items set scheduled_at = now() - interval '1 minute' where id = pg_temp.id('e1x');
set local session_replication_role = origin;
select is(pg_temp.total('{"workflowStatuses": ["publishing"]}'), pg_temp.exact($w$i.status = 'scheduled' and i.scheduled_at <= now()$w$),
  'workflow publishing: scheduled and due');
select is(pg_temp.total('{"workflowStatuses": ["scheduled"]}'), pg_temp.exact($w$i.status = 'scheduled' and i.scheduled_at > now()$w$),
  'workflow scheduled: scheduled and not yet due');
select is(pg_temp.total('{"workflowStatus": "draft"}'), pg_temp.exact($w$i.status = 'draft'$w$), 'workflow draft');

-- Filters the counters cannot answer: null, the list counts exactly.
select is(pg_temp.total('{"since": "2026-01-01T00:00:00Z"}'), null::bigint, 'since: counted exactly by the list');
select is(pg_temp.total('{"reviewState": "open"}'), null::bigint, 'a filter the counters do not know: counted exactly by the list');

-- Folding changes no total.
select ok(app.compact_content_item_counts(pg_temp.id('A1')) > 0, 'the deltas fold');
select ok(pg_temp.matches('fold'), '... and every total is unchanged');
-- The roots' counter folds the same way (000060: the deleted rows read back by the DELETE itself).
create temp table roots_before as select sum(n) as n from app.content_root_counts where workspace_id = pg_temp.id('A1');
select ok(app.compact_content_root_counts(pg_temp.id('A1')) > 0, 'the roots'' deltas fold');
select is((select array[sum(n), count(*)] from app.content_root_counts where workspace_id = pg_temp.id('A1')),
  array[(select n from roots_before), 1::numeric], '... into one row with the same total');
select is(app.compact_content_item_counts(pg_temp.id('A1')), (select count(*)::int from app.content_item_counts where workspace_id = pg_temp.id('A1')),
  'folding again reads back exactly the rows it folds');

-- Deleting an organization with content (db/migrations/committed/000027-counts-on-workspace-delete.sql):
-- its editions and roots go with it, and so do their counts.
insert into app.content_roots (id, organization_id, workspace_id, caption)
values (pg_temp.id('root:gone'), pg_temp.id('B'), pg_temp.id('B1'), 'going with its organization');
insert into app.content_items (organization_id, workspace_id, root_id, integration_id, status)
values (pg_temp.id('B'), pg_temp.id('B1'), pg_temp.id('root:gone'), pg_temp.id('ig:B1.x'), 'draft');
select ok((select sum(n) from app.content_item_counts where workspace_id = pg_temp.id('B1')) > 0
          and (select sum(n) from app.content_root_counts where workspace_id = pg_temp.id('B1')) > 0, 'an organization with content is counted');
select lives_ok($$delete from app.organizations where id = pg_temp.id('B')$$, 'an organization with content can be deleted');
select is((select count(*)::int from app.content_item_counts where workspace_id = pg_temp.id('B1'))
          + (select count(*)::int from app.content_root_counts where workspace_id = pg_temp.id('B1')), 0, '... and its counts go with it');
select ok(pg_temp.matches('after an organization was deleted'), 'the other workspaces'' totals are unchanged');

select * from finish();
rollback;
