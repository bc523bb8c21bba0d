-- The BI views over publishing, media and campaigns (db/migrations/committed/000011-scale-batched-publishing-list-totals-search-metrics-reporting.sql, split 15e-reporting.sql)
-- and over reviews and analytics (db/migrations/committed/000016-bi-views-over-reviews-and-analytics.sql):
-- pressroom_bi reads them (every tenant, as BI does) and writes nothing; no
-- view exposes a secret, a token, a hash, an email, a storage key or a webhook
-- URL (checked on every reporting view's columns and values); the figures
-- match what happened (an edition sent late, a failed attempt, a two-stage
-- review decided by a member then a client, the metrics of a post).
begin;
select plan(36);
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
-- A review sent 50 minutes ago: the member decided stage 0 ten minutes later,
-- stage 1 (a client's, by link) opened then and was decided ten minutes after.
insert into app.reviews (id, organization_id, workspace_id, status, title, stages, created_by, created_at, sent_at, completed_at)
values (pg_temp.id('rev'), pg_temp.id('A'), pg_temp.id('A1'), 'completed', 'Launch posts',
        jsonb_build_array(jsonb_build_object('name', 'Team', 'approvers', jsonb_build_array(jsonb_build_object('userId', pg_temp.id('A.editor')))),
                          jsonb_build_object('name', 'Client', 'approvers', jsonb_build_array(jsonb_build_object('email', 'clara-bi@client.example')))),
        pg_temp.id('A.editor'), now() - interval '1 hour', now() - interval '50 minutes', now() - interval '30 minutes'),
       (pg_temp.id('rev:cancelled'), pg_temp.id('A'), pg_temp.id('A1'), 'cancelled', 'Dropped', null,
        pg_temp.id('A.editor'), now() - interval '1 hour', null, now() - interval '5 minutes');
insert into app.review_items (id, organization_id, workspace_id, review_id, content_id, state, current_stage, stage_opened_at, open,
  decided_at, created_at)
values (pg_temp.id('rev:item'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('rev'), pg_temp.id('e1'), 'approved', 1,
        now() - interval '40 minutes', false, now() - interval '30 minutes', now() - interval '1 hour');
insert into app.review_links (id, organization_id, workspace_id, review_id, email, name, token_hash)
values (pg_temp.id('rev:link'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('rev'), 'clara-bi@client.example', 'Clara Bi-Client',
        sha256('bi-link-token'::bytea));
insert into app.review_activity (organization_id, workspace_id, review_id, item_id, kind, event, actor_key, actor_name, data, created_at)
values (pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('rev'), pg_temp.id('rev:item'), 'system', 'sent', 'user:' || pg_temp.id('A.editor'),
        'a-editor@example.test', '{}', now() - interval '50 minutes'),
       (pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('rev'), pg_temp.id('rev:item'), 'system', 'stage_opened', 'user:' || pg_temp.id('A.editor'),
        'a-editor@example.test', '{"stage": 1, "stageName": "Client"}', now() - interval '40 minutes');
insert into app.review_decisions (id, organization_id, workspace_id, review_id, item_id, stage, stage_name, approver_key, user_id,
  client_email, decision, comment, created_at)
values (pg_temp.id('dec:member'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('rev'), pg_temp.id('rev:item'), 0, 'Team',
        'user:' || pg_temp.id('A.editor'), pg_temp.id('A.editor'), null, 'approved', null, now() - interval '40 minutes'),
       (pg_temp.id('dec:client'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('rev'), pg_temp.id('rev:item'), 1, 'Client',
        'client:clara-bi@client.example', null, 'clara-bi@client.example', 'approved', 'Fine by me', now() - interval '30 minutes');
-- The first post's metrics: its latest figures, a day's gains, the rollup and the account's followers.
insert into app.post_metrics_latest (content_item_id, organization_id, workspace_id, integration_id, captured_at,
  impressions, reach, likes, comments, shares, saves, clicks, video_views)
values (pg_temp.id('e1'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('ig:A1.x'), now(), 1000, 800, 40, 5, 3, 2, 12, 0);
insert into app.post_metrics_daily (organization_id, workspace_id, content_item_id, integration_id, day, impressions, likes)
values (pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('e1'), pg_temp.id('ig:A1.x'), current_date, 1000, 40);
insert into app.analytics_daily (organization_id, workspace_id, integration_id, dimension, key, day, impressions)
values (pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('ig:A1.x'), 'campaign', pg_temp.id('camp'), current_date, 1000);
insert into app.integration_metrics_daily (organization_id, workspace_id, integration_id, day, captured_at, source, followers, profile_views)
values (pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('ig:A1.x'), current_date, now(), 'sync', 4321, 17);
set local session_replication_role = origin;
update app.integrations set webhook_secret = 'whsec_reporting_secret', webhook_url = 'https://hooks.example/secret-path'
where id = pg_temp.id('ig:A1.x');

-- The same through the review engine: two one-member stages, each decided.
insert into app.content_roots (id, organization_id, workspace_id, caption)
values (pg_temp.id('root:r3'), pg_temp.id('A'), pg_temp.id('A1'), 'Reviewed');
insert into app.content_items (id, organization_id, workspace_id, root_id, integration_id, status)
values (pg_temp.id('e3'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('root:r3'), pg_temp.id('ig:A1.x'), 'draft');
select pg_temp.act_as('A.editor', 'A1');
select set_config('test.engine_review', api.create_review(jsonb_build_object('title', 'Engine', 'contentIds', jsonb_build_array(pg_temp.id('e3')),
  'stages', jsonb_build_array(
    jsonb_build_object('name', 'Team', 'rule', 'all', 'approvers', jsonb_build_array(jsonb_build_object('type', 'member', 'userId', pg_temp.id('A.editor')))),
    jsonb_build_object('name', 'Lead', 'rule', 'all', 'approvers', jsonb_build_array(jsonb_build_object('type', 'member', 'userId', pg_temp.id('A.manager'))))))) ->> 'id', true);
select api.send_review(current_setting('test.engine_review')::uuid);
reset role;
select set_config('test.engine_item', (select id from app.review_items where content_id = pg_temp.id('e3'))::text, true);
select pg_temp.act_as('A.editor', 'A1');
select api.decide_review_item(current_setting('test.engine_review')::uuid, current_setting('test.engine_item')::uuid, '{"decision": "approved"}');
select pg_temp.act_as('A.manager', 'A1');
select api.decide_review_item(current_setting('test.engine_review')::uuid, current_setting('test.engine_item')::uuid, '{"decision": "approved"}');
reset role;

-- The reporting views whose rows carry text matching a pattern (run as pressroom_bi).
create function pg_temp.reporting_views_carrying(p_pattern text) returns text[]
language plpgsql as $$
declare
  v text;
  n int;
  found text[] := '{}';
begin
  for v in select c.relname from pg_class c where c.relnamespace = 'reporting'::regnamespace and c.relkind = 'v' order by 1 loop
    execute format('select count(*) from reporting.%I x where to_jsonb(x)::text ~* $1', v) into n using p_pattern;
    if n > 0 then
      found := found || v;
    end if;
  end loop;
  return found;
end
$$;

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
select is((select status || ' ' || seconds_to_complete::int || ' ' || items_approved || '/' || items from reporting.reviews where id = pg_temp.id('rev')),
  'completed 1200 1/1', 'reviews: completed in 20 minutes from sending, its item approved');
select is((select (completed_at is null and expired_at is null and cancelled_at is not null)::text from reporting.reviews
           where id = pg_temp.id('rev:cancelled')), 'true', '... a cancelled one says when it was cancelled');
select is((select seconds_to_decision::int from reporting.review_items where id = pg_temp.id('rev:item')), 1200,
  'review_items: how long the item took from entering review to its decision');
select is((select array_agg(approver_kind || ' ' || decision || ' ' || seconds_to_decision::int order by stage) from reporting.review_decisions
           where item_id = pg_temp.id('rev:item')), array['member approved 600', 'client approved 600'],
  'review_decisions: who decided each stage, and how long after the stage opened');
select is((select array_agg(stage || ' ' || approver_kind || ' ' || (stage_opened_at is not null and stage_opened_at <= decided_at
                                and seconds_to_decision >= 0) order by stage)
           from reporting.review_decisions where review_id = current_setting('test.engine_review')::uuid),
  array['0 member true', '1 member true'], '... through the engine: every decision finds when its stage opened');
select is((select status || ' ' || items_approved from reporting.reviews where id = current_setting('test.engine_review')::uuid), 'completed 1',
  '... and the review completed');
select is((select user_id from reporting.review_decisions where id = pg_temp.id('dec:member')), pg_temp.id('A.editor'), '... a member by user id');
select is((select review_link_id from reporting.review_decisions where id = pg_temp.id('dec:client')), pg_temp.id('rev:link'),
  '... a client by review link id');
select is((select platform || ' ' || impressions || ' ' || engagements from reporting.post_metrics
           where content_item_id = pg_temp.id('e1') and campaign_id = pg_temp.id('camp')), 'x 1000 50',
  'post_metrics: the latest figures of an edition, where and in which campaign');
select is((select likes from reporting.post_metrics_daily where content_item_id = pg_temp.id('e1') and day = current_date), 40::bigint,
  'post_metrics_daily: a day''s gains');
select is((select impressions from reporting.analytics_daily where dimension = 'campaign' and key = pg_temp.id('camp')), 1000::bigint,
  'analytics_daily: the rollups');
select is((select followers from reporting.account_metrics where integration_id = pg_temp.id('ig:A1.x')), 4321::bigint,
  'account_metrics: followers per day');
select ok((select count(*) >= 0 from reporting.media_usage_events), 'media_usage_events is readable');
select is((select count(distinct organization_id)::int from reporting.integrations), 2, 'BI sees every organization');

-- Writes are refused.
select throws_ok($$update reporting.integrations set name = 'bi'$$, '42501', null, 'pressroom_bi cannot update integrations');
select throws_ok($$delete from reporting.media_usage_events$$, '42501', null, 'pressroom_bi cannot delete media_usage_events');
select throws_ok($$insert into reporting.campaigns (name) values ('x')$$, '42501', null, 'pressroom_bi cannot insert into campaigns');
-- A view over a join is not updatable (55000) before any privilege check; the catalog check below covers the grants.
select ok(pg_temp.write_outcome($$update reporting.reviews set status = 'cancelled'$$) in ('42501', '55000'), 'pressroom_bi cannot update reviews');
select ok(pg_temp.write_outcome($$delete from reporting.review_decisions$$) in ('42501', '55000'), 'pressroom_bi cannot delete review_decisions');
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
          and a.attname ~ '(secret|token|hash|password|storage_key|checksum|webhook_url|settings|email|(^|_)comment$|body|actor_name)' order by 1),
  '{}'::text[], 'no reporting view has a secret, token, hash, password, storage key, webhook URL, settings, email or free-text column');
set local role pressroom_bi;
select is(
  (select count(*)::int from reporting.integrations g where to_jsonb(g)::text ~ '(whsec_|secret-path)'),
  0, 'no value of the channels view carries the webhook secret or URL');
select is(pg_temp.reporting_views_carrying(
  '(whsec_reporting_secret|secret-path|clara-bi@client\.example|Clara Bi-Client|Fine by me|bi-link-token|' ||
  encode(sha256('bi-link-token'::bytea), 'hex') || '|@example\.test|not-a-real-hash|' || encode(pg_temp.token('key:A1'), 'hex') || ')'), '{}'::text[],
  'no value of any reporting view carries a webhook secret or URL, an email, a link token or its hash, a client''s name or comment, a password or key hash');
reset role;

select * from finish();
rollback;
