--! Previous: sha1:1b4a7dc89fc92cddbf5fa3afb4bee2919cc83e67
--! Hash: sha1:b9f385e57fe3978b3a642f2ca489c0aa198d9a36
--! Message: sealed replays

--! split: 01-current.sql
-- Client review link tokens are never stored in the clear. POST reviews/submit
-- kept its results for replays by requestId (app.review_submissions.results)
-- with each client link's token in them. Now the stored results hold no token
-- (a trigger strips them, whoever writes the row), and the route keeps the
-- tokens of the answer sealed with the credential vault (AES-256-GCM, the key
-- outside the database; server/routes/reviews.ts), in sealed_tokens, through
-- api.seal_review_submission in the same transaction; a replay opens them
-- again (api.review_submission_sealed_tokens). Stored submissions that hold
-- tokens from before are deleted: a retry of one is a new submission, which
-- the content's state refuses (its items are already in review).

alter table app.review_submissions add column if not exists sealed_tokens bytea;
comment on column app.review_submissions.sealed_tokens is 'The client link tokens of the stored answer ({linkId: token}), sealed by the route with the credential vault; null when the answer holds no client link. Never readable by requests.';

create or replace function app.review_links_without_tokens(p_results jsonb)
returns jsonb
language sql
immutable
set search_path = pg_catalog
as $$
  select coalesce(jsonb_agg(
           case when jsonb_typeof(r -> 'links') = 'array'
                then jsonb_set(r, '{links}', coalesce((select jsonb_agg(l - 'token' order by n)
                                                        from jsonb_array_elements(r -> 'links') with ordinality x (l, n)), '[]'))
                else r end order by m), '[]')
  from jsonb_array_elements(p_results) with ordinality y (r, m)
$$;
comment on function app.review_links_without_tokens(jsonb) is 'The results of a stored review submission without the client links'' tokens (each link keeps its id, email, name and expiry).';
revoke all on function app.review_links_without_tokens(jsonb) from public;
grant execute on function app.review_links_without_tokens(jsonb) to pressroom_api, pressroom_definer;

create or replace function app.tg_review_submissions_strip_tokens()
returns trigger
language plpgsql
set search_path = pg_catalog, app
as $$
begin
  if jsonb_typeof(new.results -> 'results') = 'array' then
    new.results := jsonb_set(new.results, '{results}', app.review_links_without_tokens(new.results -> 'results'));
  end if;
  return new;
end
$$;
comment on function app.tg_review_submissions_strip_tokens() is 'Trigger of app.review_submissions: the stored results never hold a client link token (the route seals them into sealed_tokens).';
revoke all on function app.tg_review_submissions_strip_tokens() from public;

drop trigger if exists review_submissions_10_strip_tokens on app.review_submissions;
create trigger review_submissions_10_strip_tokens before insert or update of results on app.review_submissions
  for each row execute function app.tg_review_submissions_strip_tokens();

-- Submissions stored with tokens in the clear: gone (see above).
delete from app.review_submissions s
where exists (select 1 from jsonb_array_elements(s.results -> 'results') r, jsonb_array_elements(coalesce(r -> 'links', '[]')) l
              where l ? 'token');

create or replace function api.seal_review_submission(p_request_id text, p_sealed bytea)
returns void
language plpgsql
security definer
set search_path = pg_catalog, app
as $$
begin
  perform app.require_role('editor');
  update app.review_submissions set sealed_tokens = p_sealed
  where workspace_id = app.current_workspace_id() and principal_key = coalesce(app.current_approver_key(), 'anonymous')
    and request_id = p_request_id and sealed_tokens is null;
end
$$;
alter function api.seal_review_submission(text, bytea) owner to pressroom_definer;
comment on function api.seal_review_submission(text, bytea) is 'Called by POST /v1/workspaces/{workspaceId}/reviews/submit (submitReviews_v1, server/routes/reviews.ts) in its own transaction, right after api.submit_reviews stored a new submission: keeps the client link tokens of the answer sealed with the credential vault, for replays. Editor role; once per submission.';
revoke all on function api.seal_review_submission(text, bytea) from public;
grant execute on function api.seal_review_submission(text, bytea) to pressroom_request;

create or replace function api.review_submission_sealed_tokens(p_request_id text)
returns bytea
language plpgsql
stable
security definer
set search_path = pg_catalog, app
as $$
declare
  v bytea;
begin
  perform app.require_role('editor');
  select sealed_tokens into v from app.review_submissions
  where workspace_id = app.current_workspace_id() and principal_key = coalesce(app.current_approver_key(), 'anonymous')
    and request_id = p_request_id;
  return v;
end
$$;
alter function api.review_submission_sealed_tokens(text) owner to pressroom_definer;
comment on function api.review_submission_sealed_tokens(text) is 'Called by POST /v1/workspaces/{workspaceId}/reviews/submit (submitReviews_v1) when api.submit_reviews replays a requestId: the sealed client link tokens of the stored answer (null when it holds none), which the route opens with the credential vault. Editor role; the caller''s own submissions only.';
revoke all on function api.review_submission_sealed_tokens(text) from public;
grant execute on function api.review_submission_sealed_tokens(text) to pressroom_request;

-- Requests read the stored results, never the sealed tokens.
revoke select on app.review_submissions from pressroom_api;
grant select (workspace_id, organization_id, request_id, principal_key, results, created_at) on app.review_submissions to pressroom_api;
