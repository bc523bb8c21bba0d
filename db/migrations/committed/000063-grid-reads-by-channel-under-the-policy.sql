--! Previous: sha1:a7ae6291094af696462a0ef2ca44ccd7f7bd401b
--! Hash: sha1:63854061ab630119dafd1082d11a239b48799dc3
--! Message: grid reads by channel under the policy

--! split: 01-current.sql
-- The grid's reads by channel under the tenant policy. The policy's `workspace_id =
-- app.current_accessible_workspace_id()` is an index condition, and with only
-- grid_tiles_workspace_id_idx to serve it the planner read every tile of the workspace and
-- filtered the channel (the grid's total and counts, its ordered window, the moves' locks:
-- measured with auto_explain on the grid bench, 1,100 tiles read for a 1,000-tile channel). An
-- index on (workspace_id, integration_id, position_key) serves the policy, the channel and the
-- grid's order in one; it replaces the index on workspace_id alone, which it also serves.
create index grid_tiles_workspace_channel_key_idx on app.grid_tiles (workspace_id, integration_id, position_key);
drop index app.grid_tiles_workspace_id_idx;
