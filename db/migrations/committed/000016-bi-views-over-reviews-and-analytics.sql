--! Previous: sha1:6d34065e3783412670c58611400093ae96bbd68d
--! Hash: sha1:2275aef2e15e1f7feb90851aafa9acf060b0ba41
--! Message: bi views over reviews and analytics

--! split: 21-bi-and-fixes.sql
-- BI views over reviews and analytics (db/README.md, "Reporting views";
-- tests/db/95-reporting.test.sql). Read-only views for pressroom_bi, next to
-- the ones over publishing, media and campaigns: how long approvals take
-- (reviews, review items, every decision with the time from its stage's
-- opening) and what the posts earned (latest metrics per edition, daily
-- rollups, account metrics). Owned by pressroom_definer (whose policies see
-- every tenant, as the other reporting views do). A reviewer shows as a kind
-- (member or client) with a member's user id or a client's review link id:
-- never an email, a name typed on a link, a token hash or a comment.

-- ---------------------------------------------------------------------------
-- Reviews
-- ---------------------------------------------------------------------------
create or replace view reporting.reviews as
  select r.id, r.organization_id, r.workspace_id, r.workflow_id, w.name as workflow_name, r.status,
         coalesce(jsonb_array_length(r.stages), 0)::int as stage_count,
         (select count(*) from app.review_items it where it.review_id = r.id and it.state <> 'removed')::int as items,
         (select count(*) from app.review_items it where it.review_id = r.id and it.state = 'approved')::int as items_approved,
         (select count(*) from app.review_items it where it.review_id = r.id and it.state = 'changes_requested')::int
           as items_changes_requested,
         (select count(*) from app.review_items it where it.review_id = r.id and it.state = 'pending')::int as items_pending,
         r.created_by, r.created_at, r.sent_at, r.due_at,
         case when r.status = 'completed' then r.completed_at end as completed_at,
         case when r.status = 'cancelled' then r.completed_at end as cancelled_at,
         case when r.status = 'expired' then r.completed_at end as expired_at,
         case when r.status = 'completed' then extract(epoch from r.completed_at - r.sent_at)::numeric(14, 3) end
           as seconds_to_complete
  from app.reviews r
  left join app.approval_workflows w on w.id = r.workflow_id;
comment on view reporting.reviews is 'One row per review: its workflow, status, items by outcome, when it was created, sent, completed, cancelled or expired, and how long it took to complete.';

-- When each item entered review: its first "sent" event (the review was sent,
-- or the item was added to an active review).
create or replace view reporting.review_items as
  select it.id, it.organization_id, it.workspace_id, it.review_id, it.content_id as content_item_id, it.state,
         it.current_stage, it.open, it.approved_version, it.created_at,
         s.sent_at, it.decided_at,
         extract(epoch from it.decided_at - s.sent_at)::numeric(14, 3) as seconds_to_decision,
         (select count(*) from app.review_decisions d where d.item_id = it.id)::int as decisions
  from app.review_items it
  left join lateral (select min(a.created_at) as sent_at from app.review_activity a
                     where a.item_id = it.id and a.kind = 'system' and a.event = 'sent') s on true;
comment on view reporting.review_items is 'One row per item (an edition) of a review: its state, the stage it reached, when it entered review and was decided, and how long that took.';

-- A stage opens for an item when the item is sent or its stages are replaced
-- (stage 0; activity events sent, stages_replaced) or when the stage before
-- it closes (activity event stage_opened with data.stage). A decision's stage
-- opened at the latest such event at or before it.
create or replace view reporting.review_decisions as
  select d.id, d.organization_id, d.workspace_id, d.review_id, d.item_id, it.content_id as content_item_id,
         d.stage, d.stage_name,
         case when d.approver_key like 'client:%' then 'client' else 'member' end as approver_kind,
         d.user_id,
         case when d.approver_key like 'client:%' then
           (select l.id from app.review_links l where l.review_id = d.review_id and 'client:' || l.email = d.approver_key) end
           as review_link_id,
         d.override, d.decision, d.created_at as decided_at,
         o.opened_at as stage_opened_at,
         extract(epoch from d.created_at - o.opened_at)::numeric(14, 3) as seconds_to_decision,
         d.revoked_at, d.superseded_at,
         (d.revoked_at is null and d.superseded_at is null) as live
  from app.review_decisions d
  join app.review_items it on it.id = d.item_id
  left join lateral (
    select coalesce(
      (select max(a.created_at) from app.review_activity a
       where a.item_id = d.item_id and a.kind = 'system' and a.created_at <= d.created_at
         and case when d.stage = 0 then a.event in ('sent', 'stages_replaced')
                  else a.event = 'stage_opened' and (a.data ->> 'stage')::int = d.stage end),
      case when it.current_stage = d.stage and it.stage_opened_at <= d.created_at then it.stage_opened_at end) as opened_at
  ) o on true;
comment on view reporting.review_decisions is 'One row per decision on a review item at a stage: who (member or client, by user id or review link id; never an email), the decision, when, and how long after the stage opened; revoked and superseded decisions stay, marked.';

-- ---------------------------------------------------------------------------
-- Analytics
-- ---------------------------------------------------------------------------
create or replace view reporting.post_metrics as
  select m.content_item_id, m.organization_id, m.workspace_id, m.integration_id, g.platform, g.connector,
         i.root_id, r.campaign_id, i.sent_at, m.captured_at,
         m.impressions, m.reach, m.likes, m.comments, m.shares, m.saves, m.clicks, m.video_views,
         (m.likes + m.comments + m.shares + m.saves) as engagements,
         s.last_attempt_at as last_sync_attempt_at, s.last_success_at as last_sync_success_at, s.last_error as last_sync_error
  from app.post_metrics_latest m
  join app.content_items i on i.id = m.content_item_id
  join app.content_roots r on r.id = i.root_id
  join app.integrations g on g.id = m.integration_id
  left join app.analytics_post_sync s on s.content_item_id = m.content_item_id;
comment on view reporting.post_metrics is 'One row per published edition with metrics: the latest figures (lifetime totals as last captured), its platform, channel and campaign, and how its metrics sync went.';

create or replace view reporting.post_metrics_daily as
  select m.organization_id, m.workspace_id, m.content_item_id, m.integration_id, g.platform, r.campaign_id, m.day,
         m.impressions, m.reach, m.likes, m.comments, m.shares, m.saves, m.clicks, m.video_views
  from app.post_metrics_daily m
  join app.content_items i on i.id = m.content_item_id
  join app.content_roots r on r.id = i.root_id
  join app.integrations g on g.id = m.integration_id;
comment on view reporting.post_metrics_daily is 'What each edition gained per workspace-local day (increments, not totals), with its platform and campaign.';

create or replace view reporting.analytics_daily as
  select a.organization_id, a.workspace_id, a.integration_id, g.platform, a.dimension, a.key, a.day,
         a.impressions, a.reach, a.likes, a.comments, a.shares, a.saves, a.clicks, a.video_views
  from app.analytics_daily a
  join app.integrations g on g.id = a.integration_id;
comment on view reporting.analytics_daily is 'The daily rollups: gains per workspace-local day, channel and dimension (total: key is the channel; tag, pillar, campaign: key is the tag, pillar or campaign).';

create or replace view reporting.account_metrics as
  select a.organization_id, a.workspace_id, a.integration_id, g.platform, a.day, a.captured_at, a.source,
         a.followers, a.profile_views, a.demographics
  from app.integration_metrics_daily a
  join app.integrations g on g.id = a.integration_id;
comment on view reporting.account_metrics is 'Account (channel) metrics per day: followers, profile views and audience demographics as last captured that day.';

alter view reporting.reviews owner to pressroom_definer;
alter view reporting.review_items owner to pressroom_definer;
alter view reporting.review_decisions owner to pressroom_definer;
alter view reporting.post_metrics owner to pressroom_definer;
alter view reporting.post_metrics_daily owner to pressroom_definer;
alter view reporting.analytics_daily owner to pressroom_definer;
alter view reporting.account_metrics owner to pressroom_definer;
revoke all on reporting.reviews, reporting.review_items, reporting.review_decisions, reporting.post_metrics,
  reporting.post_metrics_daily, reporting.analytics_daily, reporting.account_metrics from public;
grant select on reporting.reviews, reporting.review_items, reporting.review_decisions, reporting.post_metrics,
  reporting.post_metrics_daily, reporting.analytics_daily, reporting.account_metrics to pressroom_bi;

select app.harden_api_functions();
