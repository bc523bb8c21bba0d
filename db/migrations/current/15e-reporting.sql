-- Scale, part e: what BI tools see (README.md, "BI access"; db/README.md,
-- "Reporting views"). Read-only views for pressroom_bi over what was
-- published, where, when, how late, what failed and why: editions, publish
-- attempts, channels (integrations), media and their use, campaigns. Owned by
-- pressroom_definer (whose policies see every tenant, as the existing
-- reporting views do); no secret, token, hash, webhook URL or settings column.

create or replace view reporting.integrations as
  select g.id, g.organization_id, g.workspace_id, g.connector, g.platform, g.name, g.username, g.status,
         g.created_at, g.updated_at, g.deleted_at
  from app.integrations g;
comment on view reporting.integrations is 'Channels (integrations) without their secrets, webhook URLs or settings.';

create or replace view reporting.content_editions as
  select i.id, i.organization_id, i.workspace_id, i.root_id, r.campaign_id, r.phase_id, i.integration_id,
         g.platform, g.connector, i.kind, i.status,
         -- app.content_workflow_status written out: a view's functions run with the reader's privileges.
         case i.status when 'pending_approval' then 'in_review' when 'rejected' then 'changes_requested'
                       when 'scheduled' then case when i.scheduled_at <= now() then 'publishing' else 'scheduled' end
                       when 'sent' then 'published' else i.status end as workflow_status,
         i.version, r.title, coalesce(i.caption, r.caption) as caption,
         i.scheduled_at, i.sent_at,
         extract(epoch from i.sent_at - i.scheduled_at)::numeric(12, 3) as lateness_seconds,
         i.permalink, i.platform_post_id, i.error,
         s.state as publishing_state, s.run_attempts, s.next_attempt_at,
         (select count(*) from app.publish_attempts a where a.content_item_id = i.id)::int as attempts,
         i.created_by, i.created_at, i.updated_at, i.deleted_at
  from app.content_items i
  join app.content_roots r on r.id = i.root_id
  join app.integrations g on g.id = i.integration_id
  left join app.publishing_states s on s.content_item_id = i.id;
comment on view reporting.content_editions is 'One row per edition (a root on one channel): status, when it was due and sent, how late, its post, the publishing state and number of attempts.';

create or replace view reporting.publish_attempts as
  select a.id, a.organization_id, a.workspace_id, a.content_item_id, coalesce(a.integration_id, i.integration_id) as integration_id,
         a.connector, a.attempt, a.run_attempt, a.started_at, a.finished_at,
         (extract(epoch from a.finished_at - a.started_at) * 1000)::numeric(12, 1) as duration_ms,
         a.outcome, a.error, a.platform_post_id, a.permalink, a.resent, a.claim_batch
  from app.publish_attempts a
  join app.content_items i on i.id = a.content_item_id;
comment on view reporting.publish_attempts is 'Every attempt to publish an edition: when, how long, the outcome (published, failed, transient, unknown, resolved_*, skipped) and the platform''s error.';

create or replace view reporting.media_items as
  select m.id, m.organization_id, m.workspace_id, m.folder_id, m.type, m.filename, m.content_type, m.file_size,
         m.width, m.height, m.duration_ms, m.source, m.state, m.is_favorite, m.created_by, m.created_at, m.deleted_at,
         (select count(distinct e.id) from app.content_items e
          where e.deleted_at is null and (e.id in (select cim.content_item_id from app.content_item_media cim where cim.media_id = m.id)
                or (not e.own_media and e.root_id in (select crm.root_id from app.content_root_media crm where crm.media_id = m.id))))::int
           as editions_using,
         (select count(distinct e.id) from app.content_items e
          where e.status = 'sent' and (e.id in (select cim.content_item_id from app.content_item_media cim where cim.media_id = m.id)
                or (not e.own_media and e.root_id in (select crm.root_id from app.content_root_media crm where crm.media_id = m.id))))::int
           as editions_published,
         (select max(u.occurred_at) from app.media_usage_events u where u.media_id = m.id) as last_used_at
  from app.media_items m;
comment on view reporting.media_items is 'Media items (no storage key or checksum) with how many live editions use them, how many published ones did, and when they were last used.';

create or replace view reporting.media_usage_events as
  select u.id, u.organization_id, u.workspace_id, u.media_id, u.event, u.via, u.content_item_id, u.root_id,
         u.content_status, u.scheduled_at, u.occurred_at
  from app.media_usage_events u;
comment on view reporting.media_usage_events is 'The history of media use: attached, detached, published, ... per edition or root.';

create or replace view reporting.campaigns as
  select c.id, c.organization_id, c.workspace_id, c.name, c.starts_on, c.ends_on, c.created_at, c.updated_at,
         (select count(*) from app.content_roots r where r.campaign_id = c.id and r.deleted_at is null)::int as roots,
         (select count(*) from app.content_items i join app.content_roots r on r.id = i.root_id
          where r.campaign_id = c.id and i.deleted_at is null)::int as editions,
         (select count(*) from app.content_items i join app.content_roots r on r.id = i.root_id
          where r.campaign_id = c.id and i.deleted_at is null and i.status = 'sent')::int as editions_sent,
         (select count(*) from app.content_items i join app.content_roots r on r.id = i.root_id
          where r.campaign_id = c.id and i.deleted_at is null and i.status = 'failed')::int as editions_failed
  from app.campaigns c;
comment on view reporting.campaigns is 'Campaigns with their dates and how many roots and editions they hold, sent and failed.';

alter view reporting.integrations owner to pressroom_definer;
alter view reporting.content_editions owner to pressroom_definer;
alter view reporting.publish_attempts owner to pressroom_definer;
alter view reporting.media_items owner to pressroom_definer;
alter view reporting.media_usage_events owner to pressroom_definer;
alter view reporting.campaigns owner to pressroom_definer;
revoke all on reporting.integrations, reporting.content_editions, reporting.publish_attempts, reporting.media_items,
  reporting.media_usage_events, reporting.campaigns from public;
grant select on reporting.integrations, reporting.content_editions, reporting.publish_attempts, reporting.media_items,
  reporting.media_usage_events, reporting.campaigns to pressroom_bi;
