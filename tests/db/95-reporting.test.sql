-- The BI views over publishing, media and campaigns (db/migrations/committed/000011-scale-batched-publishing-list-totals-search-metrics-reporting.sql, split 15e-reporting.sql):
-- pressroom_bi reads them (every tenant, as BI does) and writes nothing; no
-- view exposes a secret, a token, a hash, a storage key or a webhook URL; the
-- figures match what happened (an edition sent late, a failed attempt).
begin;
select plan(21);
-- @include personas.sql
-- @include content.sql

-- An edition due ten minutes ago, sent now after a failed attempt; a second one failed for good.
insert into app.campaigns (id, organization_id, workspace_id, name) values (pg_temp.id('camp'), pg_temp.id('A'), pg_temp.id('A1'), 'Launch');
insert into app.content_roots (id, organization_id, workspace_id, caption, campaign_id)
values (pg_temp.id('root:r1'), pg_temp.id('A'), pg_temp.id('A1'), 'Hello', pg_temp.id('camp'));
insert into app.content_items (id, organization_id, workspace_id, root_id, integration_id, status, scheduled_at)
values (pg_temp.id('e1'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('root:r1'), pg_temp.id('ig:A1.x'), 'draft', null),
       (pg_temp.id('e2'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('root:r1'), pg_temp.id('ig:A1.li'), 'draft', null);
set local session_replication_role = replica;
update app.content_items set status = 'sent', scheduled_at = now() - interval '10 minutes', sent_at = now(),
  platform_post_id = 'p-1', permalink = 'https://x.example/p-1' where id = pg_temp.id('e1');
update app.content_items set status = 'failed', scheduled_at = now() - interval '10 minutes', error = 'Refused'
where id = pg_temp.id('e2');
insert into app.publish_attempts (organization_id, workspace_id, content_item_id, attempt, run_attempt, connector, idempotency_token,
  integration_id, started_at, finished_at, outcome, error)
values (pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('e1'), 1, 1, 'sandbox', 'tok-1', pg_temp.id('ig:A1.x'), now() - interval '9 minutes',
        now() - interval '9 minutes' + interval '250 milliseconds', 'transient', 'Try later'),
       (pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('e1'), 2, 2, 'sandbox', 'tok-1', pg_temp.id('ig:A1.x'), now(), now(), 'published', null),
       (pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('e2'), 1, 1, 'sandbox', 'tok-2', pg_temp.id('ig:A1.li'), now(), now(), 'failed', 'Refused');
set local session_replication_role = origin;
update app.integrations set webhook_secret = 'whsec_reporting_secret', webhook_url = 'https://hooks.example/secret-path'
where id = pg_temp.id('ig:A1.x');

set local role pressroom_bi;
select is((select lateness_seconds >= 599 and lateness_seconds < 700 from reporting.content_editions where id = pg_temp.id('e1')), true,
  'content_editions: how late the edition went out');
select is((select attempts from reporting.content_editions where id = pg_temp.id('e1')), 2, '... after how many attempts');
select is((select workflow_status from reporting.content_editions where id = pg_temp.id('e1')), 'published', '... its workflow status');
select is((select campaign_id from reporting.content_editions where id = pg_temp.id('e1')), pg_temp.id('camp'), '... its campaign');
select is((select platform from reporting.content_editions where id = pg_temp.id('e2')), 'linkedin', '... where');
select is((select error from reporting.content_editions where id = pg_temp.id('e2')), 'Refused', '... and why it failed');
select is((select array_agg(outcome order by attempt) from reporting.publish_attempts where content_item_id = pg_temp.id('e1')),
  array['transient', 'published'], 'publish_attempts: every attempt and its outcome');
select is((select duration_ms from reporting.publish_attempts where content_item_id = pg_temp.id('e1') and attempt = 1), 250.0::numeric(12, 1),
  '... how long it took');
select is((select editions_sent || '/' || editions_failed || '/' || editions from reporting.campaigns where id = pg_temp.id('camp')), '1/1/2',
  'campaigns: editions sent, failed, in all');
select is((select count(*)::int from reporting.integrations where workspace_id = pg_temp.id('A1')), 4, 'integrations: the channels');
select ok((select count(*) >= 0 from reporting.media_items), 'media_items is readable');
select ok((select count(*) >= 0 from reporting.media_usage_events), 'media_usage_events is readable');
select is((select count(distinct organization_id)::int from reporting.integrations), 2, 'BI sees every organization');

-- Writes are refused.
select throws_ok($$update reporting.integrations set name = 'bi'$$, '42501', null, 'pressroom_bi cannot update integrations');
select throws_ok($$delete from reporting.media_usage_events$$, '42501', null, 'pressroom_bi cannot delete media_usage_events');
select throws_ok($$insert into reporting.campaigns (name) values ('x')$$, '42501', null, 'pressroom_bi cannot insert into campaigns');
select throws_ok($$select count(*) from app.publish_attempts$$, '42501', null, 'pressroom_bi cannot read app.publish_attempts');
reset role;

-- From the catalog: every reporting view readable by pressroom_bi and nothing writable; no secret anywhere.
select is(
  array(select c.relname::text from pg_class c where c.relnamespace = 'reporting'::regnamespace and c.relkind = 'v'
          and not has_table_privilege('pressroom_bi', c.oid, 'SELECT') order by 1),
  '{}'::text[], 'pressroom_bi reads every reporting view');
select is(
  array(select format('%s %s', c.relname, p.priv) from pg_class c
        cross join (values ('INSERT'), ('UPDATE'), ('DELETE'), ('TRUNCATE')) p (priv)
        where c.relnamespace = 'reporting'::regnamespace and has_table_privilege('pressroom_bi', c.oid, p.priv) order by 1),
  '{}'::text[], 'pressroom_bi writes no reporting view');
select is(
  array(select format('%s.%s', c.relname, a.attname) from pg_attribute a join pg_class c on c.oid = a.attrelid
        where c.relnamespace = 'reporting'::regnamespace and a.attnum > 0 and not a.attisdropped
          and a.attname ~ '(secret|token|hash|password|storage_key|checksum|webhook_url|settings)' order by 1),
  '{}'::text[], 'no reporting view has a secret, token, hash, password, storage key, webhook URL or settings column');
set local role pressroom_bi;
select is(
  (select count(*)::int from reporting.integrations g where to_jsonb(g)::text ~ '(whsec_|secret-path)'),
  0, 'no value of the channels view carries the webhook secret or URL');
reset role;

select * from finish();
rollback;
