--! Previous: sha1:5a7e4444ac00b1725ac2bdef86e232a2214afcef
--! Hash: sha1:a7ae6291094af696462a0ef2ca44ccd7f7bd401b
--! Message: media answer as its caller

--! split: 01-current.sql
-- The media answer as its caller (the rule of 000055: a helper that only builds an answer runs as
-- its caller, so a request that wrote its workspace's shard reads it back as the same role on a
-- Citus cluster). app.media_json_list was a definer: 14 api functions build their media answers
-- with it, several right after writing (uploads, labels, content with media). It reads the
-- labels and the usage of the request's own workspace's media only (its own check of
-- app.current_workspace_accessible()), which the requests' role reads under the tenant
-- policies anyway.
alter function app.media_json_list(app.media_items[]) security invoker;
comment on function app.media_json_list(app.media_items[]) is 'The JSON of media rows, in order, with the labels and the usage count (roots using each) of those of the request''s workspace. Runs as its caller (000062).';
