--! Previous: sha1:a211577ddc882be7d47a817ebd60f3dc2e48d776
--! Hash: sha1:8c5304028b9ef5704368d38a3d95d6bd11225b33
--! Message: search custom plans

--! split: 10-search-custom-plans.sql
-- Substring searches plan for the pattern they are given.
--
-- app.campaign_search_ids, app.media_search_ids and app.media_label_search_ids
-- match `name ilike pattern` through trigram indexes. A plan made without the
-- pattern (a generic plan: PostgreSQL 18 caches the plans of SQL functions)
-- cannot tell the trigram index's cost and may walk the workspace's rows by
-- workspace_id instead: the campaign search on 100,000 campaigns took 100 to
-- 190 ms (bench/README.md, scenario `lists`). A custom plan per call sees the
-- pattern and takes the trigram index.
alter function app.campaign_search_ids(text) set plan_cache_mode = force_custom_plan;
alter function app.media_search_ids(text) set plan_cache_mode = force_custom_plan;
alter function app.media_label_search_ids(text) set plan_cache_mode = force_custom_plan;
