-- Every api function runs as pressroom_api (see 10-api-role-and-helpers.sql).
-- Each migration that adds api functions ends with this call.
select app.harden_api_functions();
