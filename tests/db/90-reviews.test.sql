-- Reviews and approval workflows in the database: every review transition,
-- content following its items, the review policy, and the personas (owner,
-- manager, approver of the open stage, approver of a later stage, editor who
-- is not an approver, viewer, client link, stranger, revoked key, another
-- organization), asserting SQLSTATEs and codes.
begin;
select plan(64);

-- @include personas.sql
-- @include content.sql

-- A root and a draft edition on A1's X channel, written as the owner.
create function pg_temp.draft(p_label text) returns uuid
language plpgsql as $$
begin
  insert into app.content_roots (id, organization_id, workspace_id, caption)
  values (pg_temp.id('root:' || p_label), pg_temp.id('A'), pg_temp.id('A1'), 'hello ' || p_label);
  insert into app.content_items (id, organization_id, workspace_id, root_id, integration_id, status)
  values (pg_temp.id(p_label), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('root:' || p_label), pg_temp.id('ig:A1.x'), 'draft');
  return pg_temp.id(p_label);
end
$$;
create function pg_temp.status(p_label text) returns text
language sql as $$ select status from app.content_items where id = pg_temp.id(p_label) $$;
create function pg_temp.review_status(p_id uuid) returns text
language sql as $$ select status from app.reviews where id = p_id $$;
create function pg_temp.item(p_review uuid, p_label text) returns uuid
language sql as $$ select id from app.review_items where review_id = p_review and content_id = pg_temp.id(p_label) $$;
create function pg_temp.live_jobs(p_label text) returns int
language sql as $$
  select count(*)::int from pgboss.job where name = 'content.publish' and singleton_key = pg_temp.id(p_label)::text and state in ('created', 'retry')
$$;
-- The client reviewer persona: a request made with a review link (as the pipeline sets it after api.gate_review_link).
create function pg_temp.act_as_link(p_link uuid) returns void
language plpgsql as $$
declare
  l app.review_links;
begin
  reset role;
  select * into l from app.review_links where id = p_link;
  perform set_config('pressroom.actor_kind', 'review_link', true);
  perform set_config('pressroom.user_id', '', true);
  perform set_config('pressroom.api_key_id', '', true);
  perform set_config('pressroom.review_link_id', l.id::text, true);
  perform set_config('pressroom.organization_id', l.organization_id::text, true);
  perform set_config('pressroom.workspace_id', l.workspace_id::text, true);
  perform set_config('pressroom.workspace_role', '', true);
  set local role pressroom_request;
end
$$;
grant execute on function pg_temp.id(text) to pressroom_request;
-- Ids and answers kept between statements (whatever the role) as transaction settings.
create function pg_temp.r(p_name text) returns uuid language sql as $$ select current_setting('test.' || p_name)::uuid $$;
create function pg_temp.j(p_name text) returns jsonb language sql as $$ select current_setting('test.' || p_name)::jsonb $$;

-- Two stages: the editor (all), then the manager and a client (any).
create function pg_temp.stages() returns jsonb
language sql as $$
  select jsonb_build_array(
    jsonb_build_object('name', 'Team', 'rule', 'all', 'approvers', jsonb_build_array(jsonb_build_object('type', 'member', 'userId', pg_temp.id('A.editor')))),
    jsonb_build_object('name', 'Lead', 'rule', 'any', 'approvers', jsonb_build_array(
      jsonb_build_object('type', 'member', 'userId', pg_temp.id('A.manager')),
      jsonb_build_object('type', 'client', 'email', 'Client@Example.test', 'name', 'Clara'))))
$$;

select pg_temp.draft('c1');
select pg_temp.draft('c2');
select pg_temp.draft('c3');
select pg_temp.draft('sched');
update app.content_items set status = 'scheduled', scheduled_at = now() + interval '2 days' where id = pg_temp.id('sched');

------------------------------------------------------------------------------
-- Workflows: managers write, everyone reads; stage rules.
------------------------------------------------------------------------------
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr($$select api.create_approval_workflow(jsonb_build_object('name', 'W', 'stages', pg_temp.stages()))$$),
  'PT403 ROLE_REQUIRED', 'editor: creating a workflow needs the manager role');
select pg_temp.act_as('A.manager', 'A1');
select is(pg_temp.sqlerr($$select api.create_approval_workflow(jsonb_build_object('name', 'W', 'stages',
  jsonb_build_array(jsonb_build_object('name', 'V', 'approvers', jsonb_build_array(jsonb_build_object('type', 'member', 'userId', pg_temp.id('A.viewer')))))))$$),
  'PT400 VALIDATION_FAILED', 'manager: a viewer cannot be an approver');
select is((api.create_approval_workflow(jsonb_build_object('name', 'Agency', 'stages', pg_temp.stages(), 'autoScheduleOnApproval', true)) ->> 'position')::int,
  0, 'manager: creates a workflow, first in routing order');
select is(pg_temp.sqlerr($$select api.create_approval_workflow(jsonb_build_object('name', ' agency ', 'stages', pg_temp.stages()))$$),
  'PT409 NAME_TAKEN', 'names are unique in a workspace, ignoring case and spaces');
select pg_temp.act_as('A.viewer', 'A1');
select is(jsonb_array_length(api.list_approval_workflows()), 1, 'viewer: lists the workflows');
select is(pg_temp.sqlerr($$select api.set_review_policy('{"reviewPolicy": "required"}')$$), 'PT403 ROLE_REQUIRED', 'viewer: cannot set the review policy');
select pg_temp.act_as('B.owner', 'B1');
select is(jsonb_array_length(api.list_approval_workflows()), 0, 'another organization sees none of A''s workflows');

------------------------------------------------------------------------------
-- Draft review, send: content enters review.
------------------------------------------------------------------------------
select pg_temp.act_as('A.editor', 'A1');
select set_config('test.t_review', api.create_review(jsonb_build_object('title', 'R1', 'workflowId',
            (select id from app.approval_workflows where name = 'Agency'), 'contentIds', jsonb_build_array(pg_temp.id('c1'), pg_temp.id('sched')))) ->> 'id', true);
select is(pg_temp.review_status(pg_temp.r('t_review')), 'draft', 'a review starts as a draft');
select is(pg_temp.status('c1'), 'draft', 'a draft review does not hold its content yet');
select is(pg_temp.sqlerr(format($$select api.create_review(jsonb_build_object('title', 'dup', 'stages', pg_temp.stages(), 'contentIds', jsonb_build_array(%L)))$$, pg_temp.id('c1'))),
  'PT409 CONTENT_IN_REVIEW', 'an edition is in at most one open review');
select pg_temp.act_as('A.viewer', 'A1');
select is(pg_temp.sqlerr(format($$select api.send_review(%L)$$, pg_temp.r('t_review'))), 'PT403 ROLE_REQUIRED', 'viewer: cannot send');
select pg_temp.act_as('A.stranger', 'A1');
select is(pg_temp.sqlerr(format($$select api.send_review(%L)$$, pg_temp.r('t_review'))), 'PT403 ROLE_REQUIRED', 'stranger (no role in A1): cannot send');
select pg_temp.act_as('key:A1.revoked', 'A1');
select is(pg_temp.sqlerr(format($$select api.send_review(%L)$$, pg_temp.r('t_review'))), 'PT403 ROLE_REQUIRED', 'revoked key: refused');
select pg_temp.act_as('B.owner', 'B1');
select is(pg_temp.sqlerr(format($$select api.send_review(%L)$$, pg_temp.r('t_review'))), 'PT404 NOT_FOUND', 'another organization: A''s review is not there');
select pg_temp.act_as('A.editor', 'A1');
select set_config('test.t_send', api.send_review(pg_temp.r('t_review'))::text, true);
select is(pg_temp.review_status(pg_temp.r('t_review')), 'active', 'send: draft -> active');
select is(jsonb_array_length(pg_temp.j('t_send') -> 'links'), 1, 'send: one link for the client, its token in the answer');
select matches((pg_temp.j('t_send') -> 'links' -> 0 ->> 'token'), '^prr_[0-9a-f]{64}$', 'the token is prr_ + 64 hex digits');
select pg_temp.act_as_owner();
select set_config('test.link', (select id from app.review_links where review_id = pg_temp.r('t_review'))::text, true);
select set_config('test.i_c1', pg_temp.item(pg_temp.r('t_review'), 'c1')::text, true);
select is((select encode(token_hash, 'hex') from app.review_links where review_id = pg_temp.r('t_review')),
  encode(sha256(convert_to((pg_temp.j('t_send') -> 'links' -> 0 ->> 'token'), 'UTF8')), 'hex'), 'the link stores only the token''s SHA-256');
select is(pg_temp.status('c1'), 'pending_approval', 'send: a draft edition moves to pending_approval');
select is(pg_temp.status('sched'), 'pending_approval', 'send: a scheduled edition moves to pending_approval');
select is((select intended_publish_at from app.content_items where id = pg_temp.id('sched')), now() + interval '2 days', '... keeping its time as intended time');
select is(pg_temp.live_jobs('sched'), 0, '... and losing its publish job');
select is(pg_temp.sqlerr($$select api.send_review(pg_temp.r('t_review'))$$), 'PT403 WORKSPACE_REQUIRED', 'no context, no send');

------------------------------------------------------------------------------
-- Content in review: only the engine moves it.
------------------------------------------------------------------------------
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr(format($$select api.update_content(%L, '{"caption": "edit"}')$$, pg_temp.id('c1'))), 'PT400 INVALID_CONTENT_STATUS',
  'content in review cannot be edited (400)');
select is(pg_temp.sqlerr(format($$select api.schedule_content(%L, now() + interval '1 day')$$, pg_temp.id('c1'))), 'PT409 REVIEW_IN_PROGRESS',
  'content in review cannot be scheduled (409 REVIEW_IN_PROGRESS)');
select is(pg_temp.sqlerr(format($$select api.publish_content(%L)$$, pg_temp.id('c1'))), 'PT409 REVIEW_IN_PROGRESS', 'nor published');
select is(pg_temp.sqlerr(format($$select api.delete_content(%L)$$, pg_temp.id('c1'))), 'PT409 REVIEW_IN_PROGRESS', 'nor deleted');
select is(pg_temp.sqlerr(format($$select api.revert_content_to_draft(%L, '{}')$$, pg_temp.id('c1'))), 'PT400 INVALID_CONTENT_STATUS', 'nor reverted');
select is(pg_temp.sqlerr(format($$update app.content_items set status = 'draft' where id = %L$$, pg_temp.id('c1'))), 'PT409 REVIEW_IN_PROGRESS',
  'a direct UPDATE out of pending_approval by a request is refused');
select is(pg_temp.sqlerr(format($$update app.content_items set status = 'pending_approval' where id = %L$$, pg_temp.id('c2'))), 'PT409 INVALID_STATUS_TRANSITION',
  'only a review moves content to pending_approval');

------------------------------------------------------------------------------
-- Decisions, persona by persona.
------------------------------------------------------------------------------
select pg_temp.act_as('A.manager', 'A1');
select is(pg_temp.sqlerr(format($$select api.decide_review_item(%L, %L, '{"decision": "approved"}')$$, pg_temp.r('t_review'), pg_temp.item(pg_temp.r('t_review'), 'c1'))),
  'PT403 NOT_AN_APPROVER', 'approver of a later stage: refused while the first stage is open');
select pg_temp.act_as('key:A1', 'A1');
select is(pg_temp.sqlerr(format($$select api.decide_review_item(%L, %L, '{"decision": "approved"}')$$, pg_temp.r('t_review'), pg_temp.item(pg_temp.r('t_review'), 'c1'))),
  'PT403 NOT_AN_APPROVER', 'editor who is not an approver (a key acting for the owner): refused');
select pg_temp.act_as('A.viewer', 'A1');
select is(pg_temp.sqlerr(format($$select api.decide_review_item(%L, %L, '{"decision": "approved"}')$$, pg_temp.r('t_review'), pg_temp.item(pg_temp.r('t_review'), 'c1'))),
  'PT403 ROLE_REQUIRED', 'viewer: refused');
select pg_temp.act_as_link(pg_temp.r('link'));
select is(pg_temp.sqlerr(format($$select api.review_link_decide(%L, '{"decision": "approved"}')$$, pg_temp.r('i_c1'))),
  'PT403 NOT_AN_APPROVER', 'client link: refused while its stage is not open');
select is(pg_temp.sqlerr($$select api.list_approval_workflows()$$), 'PT403 ROLE_REQUIRED', 'client link: no workspace route');
select pg_temp.act_as('A.editor', 'A1');
select is(api.decide_review_item(pg_temp.r('t_review'), pg_temp.item(pg_temp.r('t_review'), 'c1'), '{"decision": "approved"}') ->> 'currentStage',
  '1', 'approver of the open stage: its approval closes the stage (rule all, one approver); the Lead stage opens');
select is(pg_temp.sqlerr(format($$select api.decide_review_item(%L, %L, '{"decision": "approved"}')$$, pg_temp.r('t_review'), pg_temp.item(pg_temp.r('t_review'), 'c1'))),
  'PT403 NOT_AN_APPROVER', 'the first stage''s approver cannot decide the next stage');
select is(pg_temp.sqlerr(format($$select api.revoke_review_decision(%L, %L, '{}')$$, pg_temp.r('t_review'), pg_temp.item(pg_temp.r('t_review'), 'c1'))),
  'PT409 NOTHING_TO_REVOKE', 'a closed stage cannot be revoked');
-- The client approves c1 at the Lead stage through its link.
select pg_temp.act_as_link(pg_temp.r('link'));
select is(api.review_link_decide(pg_temp.r('i_c1'), '{"decision": "approved"}') ->> 'itemState',
  'approved', 'client link: approves at its stage (rule any)');
select pg_temp.act_as_owner();
select is(pg_temp.status('c1'), 'draft', 'approved without an intended time: content is draft, marked approved');
select ok(app.content_review_approved(pg_temp.id('c1')), 'app.content_review_approved: the current version is approved');
-- The scheduled edition: the manager overrides the Team stage, then approves; auto-schedule puts it back at its time with a job.
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr(format($$select api.override_review_item(%L, %L, '{"decision": "approved", "reason": "ok"}')$$, pg_temp.r('t_review'), pg_temp.item(pg_temp.r('t_review'), 'sched'))),
  'PT403 ROLE_REQUIRED', 'editor: override needs the manager role');
select pg_temp.act_as('A.owner', 'A1');
select ok(api.override_review_item(pg_temp.r('t_review'), pg_temp.item(pg_temp.r('t_review'), 'sched'), '{"decision": "approved", "reason": "by phone"}') ? 'decisionId',
  'owner: overrides the open stage with a reason');
select pg_temp.act_as('A.manager', 'A1');
select is(api.decide_review_item(pg_temp.r('t_review'), pg_temp.item(pg_temp.r('t_review'), 'sched'), '{"decision": "approved"}') ->> 'contentStatus',
  'scheduled', 'manager (approver of the Lead stage): approval schedules the edition at its intended time (autoScheduleOnApproval)');
select pg_temp.act_as_owner();
select is(pg_temp.live_jobs('sched'), 1, '... with its publish job, in the same transaction');
select is(pg_temp.review_status(pg_temp.r('t_review')), 'completed', 'active -> completed: every item decided');
select is((select count(*)::int from app.review_links where review_id = pg_temp.r('t_review') and revoked_at is not null), 1, 'the client''s link ends with the review');
select is(pg_temp.sqlerr(format($$update app.reviews set status = 'active' where id = %L$$, pg_temp.r('t_review'))), 'PT409 INVALID_REVIEW_TRANSITION',
  'completed -> active is not a transition');

------------------------------------------------------------------------------
-- Changes requested, edit returns to draft; cancel and removal return content; expiry.
------------------------------------------------------------------------------
select pg_temp.act_as('A.editor', 'A1');
select set_config('test.t_r2', api.create_review(jsonb_build_object('title', 'R2', 'stages', pg_temp.stages(), 'contentIds', jsonb_build_array(pg_temp.id('c2'), pg_temp.id('c3')))) ->> 'id', true);
select is(pg_temp.sqlerr(format($$update app.reviews set status = 'completed' where id = %L$$, pg_temp.r('t_r2'))), 'PT409 INVALID_REVIEW_TRANSITION',
  'draft -> completed is not a transition');
select api.send_review(pg_temp.r('t_r2'));
select is(api.decide_review_item(pg_temp.r('t_r2'), pg_temp.item(pg_temp.r('t_r2'), 'c2'), '{"decision": "changes_requested", "comment": "shorter"}') ->> 'contentStatus',
  'rejected', 'a change request moves the edition to rejected');
select is(pg_temp.sqlerr(format($$select api.schedule_content(%L, now() + interval '1 day')$$, pg_temp.id('c2'))), 'PT400 INVALID_CONTENT_STATUS', 'rejected content cannot be scheduled');
select is(api.update_content(pg_temp.id('c2'), '{"caption": "shorter"}') -> 'editions' -> 0 ->> 'status', 'draft', 'editing a rejected edition returns it to draft');
select is(api.remove_review_item(pg_temp.r('t_r2'), pg_temp.item(pg_temp.r('t_r2'), 'c3')) ->> 'state', 'removed', 'removing a pending item');
select is(pg_temp.status('c3'), 'draft', '... returns its content to where it was');
select is(pg_temp.review_status(pg_temp.r('t_r2')), 'completed', 'the review completes when no item is pending any more');

select set_config('test.t_r3', api.create_review(jsonb_build_object('title', 'R3', 'stages', pg_temp.stages(), 'contentIds', jsonb_build_array(pg_temp.id('c3')))) ->> 'id', true);
select is(api.cancel_review(pg_temp.r('t_r3')) ->> 'status', 'cancelled', 'draft -> cancelled');
select set_config('test.t_r4', api.create_review(jsonb_build_object('title', 'R4', 'stages', pg_temp.stages(), 'contentIds', jsonb_build_array(pg_temp.id('c3')))) ->> 'id', true);
select api.send_review(pg_temp.r('t_r4'));
select is(api.cancel_review(pg_temp.r('t_r4')) ->> 'status', 'cancelled', 'active -> cancelled');
select is(pg_temp.status('c3'), 'draft', '... its pending content back to draft');
select set_config('test.t_r5', api.create_review(jsonb_build_object('title', 'R5', 'stages', pg_temp.stages(), 'contentIds', jsonb_build_array(pg_temp.id('c3')))) ->> 'id', true);
select api.send_review(pg_temp.r('t_r5'));
select pg_temp.act_as_owner();
update app.reviews set due_at = now() - interval '1 second' where id = pg_temp.r('t_r5');
set local role pressroom_worker;
select is(app.expire_due_reviews(), 1, 'the expiry job (as pressroom_worker) expires the overdue review');
reset role;
select is(pg_temp.review_status(pg_temp.r('t_r5')), 'expired', 'active -> expired');
select is(pg_temp.status('c3'), 'draft', '... and its pending content returns to draft');

------------------------------------------------------------------------------
-- Review policy: required.
------------------------------------------------------------------------------
select pg_temp.act_as('A.manager', 'A1');
select api.set_review_policy('{"reviewPolicy": "required"}');
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr(format($$select api.schedule_content(%L, now() + interval '1 day')$$, pg_temp.id('c3'))), 'PT409 REVIEW_REQUIRED',
  'required: scheduling unapproved content answers REVIEW_REQUIRED');
select is(pg_temp.sqlerr(format($$select api.publish_content(%L)$$, pg_temp.id('c3'))), 'PT409 REVIEW_REQUIRED', 'required: so does publishing it');
select is(pg_temp.sqlerr(format($$select api.schedule_content(%L, now() + interval '1 day')$$, pg_temp.id('c1'))), 'ok', 'required: approved content schedules');

select * from finish();
rollback;
