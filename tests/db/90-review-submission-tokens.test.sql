-- A stored review submission never holds a client link token in the clear
-- (db/migrations/committed/000034-sealed-replays.sql): the trigger strips the tokens
-- whoever writes the row, api.seal_review_submission keeps the route's sealed
-- copy once, api.review_submission_sealed_tokens gives it back to the same
-- principal in the same workspace only, and requests cannot read the column.
begin;
select plan(10);

-- @include personas.sql
-- @include content.sql

create function pg_temp.results(p_token text) returns jsonb language sql as $$
  select jsonb_build_object('requestId', 'r1', 'results', jsonb_build_array(
    jsonb_build_object('contentId', pg_temp.id('c1'), 'outcome', 'review_sent', 'links',
      jsonb_build_array(jsonb_build_object('id', pg_temp.id('link1'), 'email', 'c@example.test', 'name', 'C', 'token', p_token, 'expiresAt', null))),
    jsonb_build_object('contentId', pg_temp.id('c2'), 'outcome', 'draft', 'links', '[]'::jsonb)))
$$;

-- Written directly (as the owner): the token is gone, everything else is kept.
insert into app.review_submissions (workspace_id, organization_id, request_id, principal_key, results)
values (pg_temp.id('A1'), pg_temp.id('A'), 'r1', 'user:' || pg_temp.id('A.editor'), pg_temp.results('prr_secret'));
select is((select results #> '{results,0,links,0}' from app.review_submissions where request_id = 'r1'),
  jsonb_build_object('id', pg_temp.id('link1'), 'email', 'c@example.test', 'name', 'C', 'expiresAt', null),
  'the stored link keeps its id, email, name and expiry, not its token');
select ok((select position('prr_secret' in results::text) = 0 from app.review_submissions where request_id = 'r1'), 'no token anywhere in the row');
select is((select results #> '{results,1}' from app.review_submissions where request_id = 'r1'),
  jsonb_build_object('contentId', pg_temp.id('c2'), 'outcome', 'draft', 'links', '[]'::jsonb), 'a result without links is unchanged');
update app.review_submissions set results = pg_temp.results('prr_again') where request_id = 'r1';
select ok((select position('prr_again' in results::text) = 0 from app.review_submissions where request_id = 'r1'), 'an update cannot store one either');

-- The principal of the row seals and reads back; nobody else sees it.
select is(app.current_approver_key(), null, '(no principal outside a request)');
-- (act_as takes the request's context; the pipeline's role, pressroom_request, calls the api functions)
select pg_temp.act_as('A.editor', 'A1');
select is(app.current_approver_key(), 'user:' || pg_temp.id('A.editor'), 'the editor is the row''s principal');
set local role pressroom_request;
select api.seal_review_submission('r1', '\x0102'::bytea);
select api.seal_review_submission('r1', '\x0304'::bytea);
select is(api.review_submission_sealed_tokens('r1'), '\x0102'::bytea, 'sealed once: a second seal does not replace it');
select pg_temp.act_as('A.viewer', 'A1');
set local role pressroom_request;
select throws_ok($$select api.review_submission_sealed_tokens('r1')$$, 'PT403', null, 'a viewer may not read it');
select pg_temp.act_as('A.manager', 'A1');
set local role pressroom_request;
select is(api.review_submission_sealed_tokens('r1'), null, 'another principal of the workspace gets nothing');
reset role;
select is(has_column_privilege('pressroom_api', 'app.review_submissions', 'sealed_tokens', 'select'), false,
  'requests cannot select the sealed column');

select * from finish();
rollback;
