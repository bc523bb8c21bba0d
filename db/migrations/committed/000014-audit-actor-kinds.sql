--! Previous: sha1:632329f978c0da756b7f5c2b0081543bf4493087
--! Hash: sha1:ce6182ba1d564be52b919d9bd871255ec38c0349
--! Message: audit actor kinds

--! split: 01-current.sql
-- Audit actor kinds: every kind the service writes.
--
-- Migration 000010 (reviews) widened audit.api_calls' actor-kind check to
-- admit review_link, then 000013 (inbox) re-created the same check with
-- platform_webhook but without review_link, so a client reviewer's calls lost
-- their audit rows. The check now lists all five kinds; the pgTAP test
-- 04-audit records a row of each.
alter table audit.api_calls drop constraint if exists api_calls_actor_kind_check;
alter table audit.api_calls add constraint api_calls_actor_kind_check
  check (actor_kind = any (array['user', 'api_key', 'anonymous', 'review_link', 'platform_webhook']));

select app.harden_api_functions();
