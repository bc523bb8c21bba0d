-- Recurring series in the database: expansion at a fixed local time across
-- daylight-saving changes, materialization with one job per scheduled
-- occurrence, the rules of series and occurrences, and the cancel functions
-- persona by persona.
begin;
select plan(37);


-- Organizations A and B with their personas, workspaces and keys, and the
-- helpers pg_temp.id, pg_temp.token, pg_temp.act_as, ...:
-- @include personas.sql
create function pg_temp.live_jobs(p_item uuid) returns int
language sql as $$
  select count(*)::int from pgboss.job
  where name = 'content.publish' and singleton_key = p_item::text and state in ('created', 'retry')
$$;

-- ---------------------------------------------------------------------------
-- Recurring fixture: an X channel in A1 (Europe/Berlin) and in B1.
-- ---------------------------------------------------------------------------
update app.workspaces set timezone = 'Europe/Berlin' where id = pg_temp.id('A1');
insert into app.integrations (id, organization_id, workspace_id, connector, platform, name)
select pg_temp.id(label), pg_temp.id(org), pg_temp.id(ws), 'sandbox', 'x', label
from (values ('ig:A1.x', 'A', 'A1'), ('ig:B1.x', 'B', 'B1')) i (label, org, ws);

create function pg_temp.series_body(p_anchor text, p_rule jsonb) returns jsonb
language sql as $$
  select jsonb_build_object('intent', 'schedule', 'scheduledAt', p_anchor, 'caption', 'Weekly',
    'channels', jsonb_build_array(jsonb_build_object('integrationId', pg_temp.id('ig:A1.x'))), 'recurrence', p_rule)
$$;

create function pg_temp.utc(p_at timestamptz) returns text
language sql as $$ select to_char(p_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI"Z"') $$;

------------------------------------------------------------------------------
-- Expansion: local wall-clock times, read in the series' time zone
------------------------------------------------------------------------------
select is(
  array(select pg_temp.utc(local_at at time zone 'Europe/Berlin')
        from app.recurrence_local_times('{"frequency": "weekly", "byWeekday": ["MO"]}', '2030-03-18 09:00', 0, 4)),
  array['2030-03-18T08:00Z', '2030-03-25T08:00Z', '2030-04-01T07:00Z', '2030-04-08T07:00Z'],
  'Mondays 09:00 Europe/Berlin: 08:00Z in winter, 07:00Z after the change of 31 March 2030');
select is(
  array(select pg_temp.utc(local_at at time zone 'Europe/Berlin')
        from app.recurrence_local_times('{"frequency": "daily"}', '2030-10-26 09:00', 0, 3)),
  array['2030-10-26T07:00Z', '2030-10-27T08:00Z', '2030-10-28T08:00Z'],
  'daily 09:00 Europe/Berlin across the autumn change (27 October 2030)');
select is(
  array(select pg_temp.utc(local_at at time zone 'America/New_York')
        from app.recurrence_local_times('{"frequency": "weekly"}', '2030-10-28 11:30', 0, 2)),
  array['2030-10-28T15:30Z', '2030-11-04T16:30Z'],
  'weekly 11:30 America/New_York across its change (3 November 2030); default weekday = the first time''s');
select is(
  array(select local_at::text from app.recurrence_local_times('{"frequency": "weekly", "interval": 2, "byWeekday": ["TU", "FR"]}', '2030-03-20 09:00', 0, 4)),
  array['2030-03-22 09:00:00', '2030-04-02 09:00:00', '2030-04-05 09:00:00', '2030-04-16 09:00:00'],
  'every other week on Tuesday and Friday, none before the first time');
select is(
  array(select local_at::date::text from app.recurrence_local_times('{"frequency": "monthly"}', '2030-01-31 18:00', 0, 4)),
  array['2030-01-31', '2030-02-28', '2030-03-31', '2030-04-30'],
  'monthly on the 31st: the last day of shorter months');
select is(
  array(select occurrence_index || '@' || local_at::date from app.recurrence_local_times('{"frequency": "daily", "interval": 3}', '2030-01-01 08:00', 2, 2)),
  array['2@2030-01-07', '3@2030-01-10'], 'p_from skips, and indexes stay those of the whole series');

------------------------------------------------------------------------------
-- Creation through api.create_content, as the editor
------------------------------------------------------------------------------
select pg_temp.act_as('A.editor', 'A1');
select set_config('test.series', api.create_content(pg_temp.series_body('2030-03-18T08:00:00Z', '{"frequency": "weekly", "byWeekday": ["MO"]}'))::text, true);
select pg_temp.act_as_owner();
create function pg_temp.series() returns uuid
language sql as $$ select (current_setting('test.series')::jsonb -> 'series' ->> 'seriesId')::uuid $$;

select is((select timezone from app.recurring_series where id = pg_temp.series()), 'Europe/Berlin', 'the series takes the workspace''s time zone');
select is(
  array(select pg_temp.utc(starts_at) || ' ' || status from app.recurring_occurrences where series_id = pg_temp.series() order by occurrence_index),
  array['2030-03-18T08:00Z materialized', '2030-03-25T08:00Z materialized', '2030-04-01T07:00Z materialized'],
  'three occurrences are made ahead, each at 09:00 Berlin time');
select is(
  array(select pg_temp.utc(i.scheduled_at) || ' ' || i.status || ' ' || pg_temp.live_jobs(i.id)
        from app.recurring_occurrences o join app.content_items i on i.root_id = o.root_id
        where o.series_id = pg_temp.series() order by o.occurrence_index),
  array['2030-03-18T08:00Z scheduled 1', '2030-03-25T08:00Z scheduled 1', '2030-04-01T07:00Z scheduled 1'],
  'each occurrence has its own scheduled edition with one publish job');
select is(current_setting('test.series')::jsonb ->> 'rootId',
  (select root_id::text from app.recurring_occurrences where series_id = pg_temp.series() and occurrence_index = 0),
  'the root the create call made is the first occurrence''s');
select is(
  (select app.content_recurring_metadata(o.root_id) - 'startsAt' from app.recurring_occurrences o where o.series_id = pg_temp.series() and o.occurrence_index = 1),
  (select jsonb_build_object('seriesId', o.series_id, 'occurrenceId', o.id, 'seriesVersion', 1, 'effectiveOccurrenceId', o.id,
     'occurrenceStatus', 'materialized', 'seriesStatus', 'active')
   from app.recurring_occurrences o where o.series_id = pg_temp.series() and o.occurrence_index = 1),
  'recurringMetadata names series, occurrence, version and the effective occurrence');

------------------------------------------------------------------------------
-- The rules of series and occurrences
------------------------------------------------------------------------------
select is(pg_temp.sqlerr(format($$update app.recurring_series set rule = '{"frequency": "daily"}' where id = %L$$, pg_temp.series())),
  'PT400 IMMUTABLE_FIELD', 'a series'' rule cannot change');
select is(pg_temp.sqlerr(format($$update app.recurring_occurrences set starts_at = now() where series_id = %L and occurrence_index = 0$$, pg_temp.series())),
  'PT400 IMMUTABLE_FIELD', 'an occurrence''s time cannot change');
select matches(pg_temp.sqlerr(format($$insert into app.recurring_occurrences (organization_id, workspace_id, series_id, occurrence_index, starts_at, status)
  values (%L, %L, %L, 0, now(), 'missed')$$, pg_temp.id('A'), pg_temp.id('A1'), pg_temp.series())),
  '^23505', 'an occurrence is made once (unique per series and position)');

-- Personas on the cancel routes.
create function pg_temp.occ(p_index int) returns uuid
language sql as $$ select id from app.recurring_occurrences where series_id = pg_temp.series() and occurrence_index = p_index $$;
select pg_temp.act_as('A.viewer', 'A1');
select is((select count(*)::int from app.recurring_occurrences), 3, 'viewer: sees the occurrences');
select is(pg_temp.sqlerr(format($$select api.cancel_recurring_occurrence(%L, '{"seriesVersion": 1}')$$, pg_temp.occ(1))),
  'PT403 ROLE_REQUIRED', 'viewer: cancel occurrence -> PT403');
select is(pg_temp.sqlerr(format($$select api.cancel_recurring_series(%L, '{"seriesVersion": 1}')$$, pg_temp.series())),
  'PT403 ROLE_REQUIRED', 'viewer: cancel series -> PT403');
select is(pg_temp.write_outcome(format($$update app.recurring_series set status = 'cancelled', cancelled_at = now() where id = %L$$, pg_temp.series())),
  '42501', 'viewer: a direct UPDATE of the series is refused (42501)');
select pg_temp.act_as('A.stranger', 'A1');
select is((select count(*)::int from app.recurring_series), 0, 'stranger: sees no series');
select is(pg_temp.sqlerr(format($$select api.cancel_recurring_occurrence(%L, '{"seriesVersion": 1}')$$, pg_temp.occ(1))),
  'PT403 ROLE_REQUIRED', 'stranger: cancel -> PT403');
select pg_temp.act_as('B.editor', 'B1');
select is(pg_temp.sqlerr(format($$select api.cancel_recurring_occurrence(%L, '{"seriesVersion": 1}')$$, pg_temp.occ(1))),
  'PT404 NOT_FOUND', 'editor of another organization: the occurrence does not exist');
select is(pg_temp.sqlerr(format($$select api.cancel_recurring_series(%L, '{"seriesVersion": 1}')$$, pg_temp.series())),
  'PT404 NOT_FOUND', '... nor the series');

select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr(format($$select api.cancel_recurring_occurrence(%L, '{"seriesVersion": 7}')$$, pg_temp.occ(1))),
  'PT409 SERIES_VERSION_STALE', 'editor: a stale seriesVersion -> PT409 SERIES_VERSION_STALE');
select is((api.cancel_recurring_occurrence(pg_temp.occ(1), '{"seriesVersion": 1}') ->> 'seriesVersion')::int, 2,
  'editor: cancelling an occurrence moves the series to version 2');
select pg_temp.act_as_owner();
select is(
  (select i.status || ' ' || pg_temp.live_jobs(i.id) from app.content_items i join app.recurring_occurrences o on o.root_id = i.root_id where o.id = pg_temp.occ(1)),
  'cancelled 0', 'its edition is cancelled and its job with it');
select is(pg_temp.sqlerr(format($$update app.recurring_occurrences set status = 'materialized', cancelled_at = null where id = %L$$, pg_temp.occ(1))),
  'PT409 OCCURRENCE_ALREADY_CANCELLED', 'a cancelled occurrence stays cancelled');
update app.content_items set status = 'sent' where root_id = (select root_id from app.recurring_occurrences where id = pg_temp.occ(0));
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr(format($$select api.cancel_recurring_occurrence(%L, '{"seriesVersion": 2}')$$, pg_temp.occ(0))),
  'PT409 OCCURRENCE_ALREADY_PUBLISHED', 'a published occurrence cannot be cancelled');
select is((app.content_recurring_metadata((select root_id from app.recurring_occurrences where id = pg_temp.occ(0))) ->> 'effectiveOccurrenceId')::uuid,
  pg_temp.occ(2), 'the effective occurrence of a published one is the next open one');
select is(api.cancel_recurring_series(pg_temp.series(), '{"seriesVersion": 2}') -> 'cancelledOccurrenceIds',
  jsonb_build_array(pg_temp.occ(2)), 'cancelling the series cancels the open occurrences from the next one onward');
select pg_temp.act_as_owner();
select is((select status || ' v' || version from app.recurring_series where id = pg_temp.series()), 'cancelled v3', 'the series is cancelled, version 3');
select is(pg_temp.sqlerr(format($$update app.recurring_series set status = 'active' where id = %L$$, pg_temp.series())),
  'PT409 SERIES_ALREADY_CANCELLED', 'a cancelled series stays cancelled');
select is((select count(*)::int from app.content_items i join app.recurring_occurrences o on o.root_id = i.root_id
           where o.series_id = pg_temp.series() and pg_temp.live_jobs(i.id) > 0), 0, 'no job of the series is left');

------------------------------------------------------------------------------
-- The job: only the worker extends every workspace's series
------------------------------------------------------------------------------
select pg_temp.act_as('A.editor', 'A1');
select set_config('test.daily', api.create_content(pg_temp.series_body(to_char((now() + interval '1 hour') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:00"Z"'),
  '{"frequency": "daily", "count": 45}'))::text, true);
select is(pg_temp.sqlerr('select app.materialize_due_series()'), '42501', 'the request role cannot run the job''s function');
select pg_temp.act_as_owner();
select cmp_ok(jsonb_array_length(current_setting('test.daily')::jsonb -> 'series' -> 'occurrences'), '<', 45, 'creation makes the next 30 days');
set local role pressroom_worker;
select is((app.materialize_due_series(interval '60 days') -> 'failed')::int, 0, 'the worker extends the series 60 days ahead');
reset role;
select is((select count(*)::int || ' ' || max(occurrence_index) from app.recurring_occurrences
           where series_id = (current_setting('test.daily')::jsonb -> 'series' ->> 'seriesId')::uuid), '45 44', 'every occurrence up to the count');
select is((select status from app.recurring_series where id = (current_setting('test.daily')::jsonb -> 'series' ->> 'seriesId')::uuid),
  'completed', 'and the series is complete');

select * from finish();
rollback;
