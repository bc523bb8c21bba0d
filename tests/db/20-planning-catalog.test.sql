-- Planning catalog, persona by persona: integrations, taxonomy (tags,
-- pillars, formats, hashtag groups) and campaigns with phases. Editors
-- write the catalog, managers connect accounts, viewers only read, a
-- principal of another workspace (or a forged context) sees and changes
-- nothing; names are unique per workspace case-insensitively; a phase stays
-- in its campaign, a campaign in its workspace; a deleted integration takes
-- no content. (The tables, policies and api.* functions of integrations,
-- taxonomy and campaigns in db/schema.sql.)
begin;
select plan(106);


-- Organizations A and B with their personas, workspaces and keys, and the
-- helpers pg_temp.id, pg_temp.token, pg_temp.act_as, ...:
-- @include personas.sql

-- Catalog fixture (as the owner). A1: two sandbox integrations (x,
-- pinterest), a tag, pillar, format and hashtag group, campaign camp:A1
-- with phases phase:A1.1 and phase:A1.2, campaign camp:A1.other with
-- phase:A1.other; a root in camp:A1/phase:A1.1 with one scheduled edition
-- on integ:A1.x. B1: an integration, a tag, a campaign with a phase.
insert into app.integrations (id, organization_id, workspace_id, connector, platform, name, settings)
values (pg_temp.id('integ:A1.x'), pg_temp.id('A'), pg_temp.id('A1'), 'sandbox', 'x', 'A1 on X', '{"behavior":"succeed"}'),
       (pg_temp.id('integ:A1.pin'), pg_temp.id('A'), pg_temp.id('A1'), 'sandbox', 'pinterest', 'A1 pins', '{"behavior":"succeed"}'),
       (pg_temp.id('integ:B1'), pg_temp.id('B'), pg_temp.id('B1'), 'sandbox', 'x', 'B1 on X', '{}');
insert into app.tags (id, organization_id, workspace_id, name) values
  (pg_temp.id('tag:A1'), pg_temp.id('A'), pg_temp.id('A1'), 'Launch'),
  (pg_temp.id('tag:B1'), pg_temp.id('B'), pg_temp.id('B1'), 'Launch');
insert into app.pillars (id, organization_id, workspace_id, name) values (pg_temp.id('pillar:A1'), pg_temp.id('A'), pg_temp.id('A1'), 'Education');
insert into app.formats (id, organization_id, workspace_id, name) values (pg_temp.id('format:A1'), pg_temp.id('A'), pg_temp.id('A1'), 'Carousel');
insert into app.hashtag_groups (id, organization_id, workspace_id, name, hashtags)
values (pg_temp.id('hashtags:A1'), pg_temp.id('A'), pg_temp.id('A1'), 'Brand', array['#Acme', 'acme', 'launch']);
insert into app.campaigns (id, organization_id, workspace_id, name) values
  (pg_temp.id('camp:A1'), pg_temp.id('A'), pg_temp.id('A1'), 'Summer'),
  (pg_temp.id('camp:A1.other'), pg_temp.id('A'), pg_temp.id('A1'), 'Winter'),
  (pg_temp.id('camp:B1'), pg_temp.id('B'), pg_temp.id('B1'), 'B summer');
insert into app.campaign_phases (id, organization_id, workspace_id, campaign_id, name, position) values
  (pg_temp.id('phase:A1.1'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('camp:A1'), 'Teaser', 0),
  (pg_temp.id('phase:A1.2'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('camp:A1'), 'Launch', 1),
  (pg_temp.id('phase:A1.other'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('camp:A1.other'), 'Cold', 0),
  (pg_temp.id('phase:B1'), pg_temp.id('B'), pg_temp.id('B1'), pg_temp.id('camp:B1'), 'B teaser', 0);
insert into app.content_roots (id, organization_id, workspace_id, caption, campaign_id, phase_id)
values (pg_temp.id('root:A1'), pg_temp.id('A'), pg_temp.id('A1'), 'Hello', pg_temp.id('camp:A1'), pg_temp.id('phase:A1.1'));
-- The edition skips the content area's own triggers (state machine, jobs):
-- this file is about the catalog.
set local session_replication_role = replica;
insert into app.content_items (id, organization_id, workspace_id, root_id, integration_id, status, scheduled_at)
values (pg_temp.id('item:A1'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('root:A1'), pg_temp.id('integ:A1.x'),
        'scheduled', now() + interval '1 day');
set local session_replication_role = origin;

-- A statement text with fixture ids filled in.
create function pg_temp.q(p_template text, variadic p_labels text[]) returns text
language sql as $$
  select format(p_template, variadic array(select pg_temp.id(l)::text from unnest(p_labels) l))
$$;
create function pg_temp.ids(p_json jsonb) returns uuid[]
language sql as $$ select array(select (e ->> 'id')::uuid from jsonb_array_elements(p_json) e order by 1) $$;
create function pg_temp.labels(variadic p_labels text[]) returns uuid[]
language sql as $$ select array(select pg_temp.id(l) from unnest(p_labels) l order by 1) $$;

------------------------------------------------------------------------------
-- The catalog: grants, definer functions, scope policies.
------------------------------------------------------------------------------
select ok(not has_column_privilege('pressroom_request', 'app.integrations', 'webhook_secret', 'SELECT'),
  'the request role cannot read webhook secrets');
select is(
  array(select p.oid::regprocedure::text from pg_proc p join pg_namespace n on n.oid = p.pronamespace
        where n.nspname in ('api', 'app') and p.prosecdef
          and p.proname in ('tg_content_items_check_integration', 'tg_campaign_phases_check_campaign', 'tg_content_roots_check_campaign')
          and (pg_get_userbyid(p.proowner) <> 'pressroom_definer'
               or not coalesce(p.proconfig, '{}') @> array['search_path=pg_catalog, app'])
        order by 1),
  '{}'::text[],
  'the security-definer triggers of the catalog belong to pressroom_definer and fix their search_path');
select is(
  array(select p.oid::regprocedure::text from pg_proc p join pg_namespace n on n.oid = p.pronamespace
        where n.nspname = 'api'
          and p.proname in ('list_integrations', 'get_integration', 'integration_for_listing', 'create_integration', 'delete_integration',
             'list_taxonomy_terms', 'create_taxonomy_term', 'update_taxonomy_term', 'delete_taxonomy_term',
             'list_hashtag_groups', 'create_hashtag_group', 'update_hashtag_group', 'delete_hashtag_group',
             'list_campaigns', 'get_campaign', 'create_campaign', 'update_campaign', 'delete_campaign',
             'list_campaign_phases', 'create_campaign_phase', 'update_campaign_phase', 'delete_campaign_phase',
             'save_campaign_phases', 'list_campaign_content')
          and (has_function_privilege('pressroom_bi', p.oid, 'EXECUTE') or not has_function_privilege('pressroom_request', p.oid, 'EXECUTE')
               or not p.prosecdef or pg_get_userbyid(p.proowner) <> 'pressroom_api')
        order by 1),
  '{}'::text[],
  'the catalog''s api functions run as pressroom_api (under the tenant policies), executable by the request role and not by PUBLIC');
select is(
  array(select c.relname::text from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'app'
          and c.relname in ('integrations', 'tags', 'pillars', 'formats', 'hashtag_groups', 'campaigns', 'campaign_phases')
          and not exists (select 1 from pg_policy p where p.polrelid = c.oid and p.polname = c.relname || '_api_select'
                          and pg_get_expr(p.polqual, p.polrelid) like '%workspace_id = app.current_accessible_workspace_id()%')
        order by 1),
  '{}'::text[],
  'every catalog table''s request policies carry the workspace scope');

------------------------------------------------------------------------------
-- Editors write the catalog; only managers connect or disconnect accounts.
------------------------------------------------------------------------------
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr($$select api.create_taxonomy_term('tags', 'Editor tag', '#ABCDEF')$$), 'ok', 'editor: creates a tag');
select is(pg_temp.sqlerr($$select api.create_taxonomy_term('pillars', 'Editor pillar', null)$$), 'ok', 'editor: creates a pillar');
select is(pg_temp.sqlerr($$select api.create_taxonomy_term('formats', 'Editor format', null)$$), 'ok', 'editor: creates a format');
select is(pg_temp.sqlerr($$select api.create_hashtag_group('Editor group', array['one', '#two'])$$), 'ok', 'editor: creates a hashtag group');
select is(pg_temp.sqlerr(pg_temp.q($$select api.update_taxonomy_term('tags', %L, '{"name": "Launch 2"}')$$, 'tag:A1')), 'ok', 'editor: renames a tag');
select is(pg_temp.sqlerr(pg_temp.q($$select api.delete_taxonomy_term('formats', %L)$$, 'format:A1')), 'ok', 'editor: deletes a format');
select is(pg_temp.sqlerr($$select api.create_campaign('Editor campaign', null, null, '2026-01-01', '2026-02-01', '[{"name": "P"}]')$$), 'ok',
  'editor: creates a campaign with a phase');
select is(pg_temp.sqlerr(pg_temp.q($$select api.update_campaign(%L, '{"color": "#00FF00"}')$$, 'camp:A1')), 'ok', 'editor: updates a campaign');
select is(pg_temp.sqlerr(pg_temp.q($$select api.create_campaign_phase(%L, 'Follow-up', null, null, null, 0)$$, 'camp:A1')), 'ok', 'editor: adds a phase');
select is(pg_temp.sqlerr(pg_temp.q($$select api.save_campaign_phases(%L, '[{"name": "Only"}]')$$, 'camp:A1')), 'ok', 'editor: bulk-saves phases');
select is(pg_temp.sqlerr(pg_temp.q($$select api.delete_campaign(%L)$$, 'camp:A1.other')), 'ok', 'editor: deletes a campaign');
select is(pg_temp.sqlerr($$select api.create_integration('sandbox', 'x', 'Mine', null, null, null, null, null)$$), 'PT403 ROLE_REQUIRED',
  'editor: api.create_integration -> PT403 ROLE_REQUIRED');
select is(pg_temp.sqlerr(pg_temp.q($$select api.delete_integration(%L)$$, 'integ:A1.pin')), 'PT403 ROLE_REQUIRED',
  'editor: api.delete_integration -> PT403 ROLE_REQUIRED');
select is(jsonb_array_length(api.list_integrations()), 2, 'editor: lists both integrations of A1');

select pg_temp.act_as('A.manager', 'A1');
select is(pg_temp.sqlerr($$select api.create_integration('sandbox', 'youtube', 'Tube', 'acme', '{"behavior": "fail"}', null, null, null)$$), 'ok',
  'manager: connects a sandbox account');
select is(pg_temp.sqlerr($$select api.create_integration('webhook', 'x', 'Hook', null, null, 'https://93.184.215.14/hook', 'whsec_BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=', 'prv1:'||encode('sealed by the route','base64'))$$), 'ok',
  'manager: connects a webhook account');
select is(pg_temp.sqlerr($$select api.create_integration('webhook', 'x', 'Hook', null, null, 'ftp://93.184.215.14/hook', 'whsec_BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=', 'prv1:'||encode('sealed by the route','base64'))$$),
  'PT400 INVALID_WEBHOOK_URL', 'manager: a non-http webhook url -> PT400 INVALID_WEBHOOK_URL');
select is(pg_temp.sqlerr($$select api.create_integration('sandbox', 'myspace', 'M', null, null, null, null, null)$$), 'PT400 UNKNOWN_PLATFORM',
  'manager: an unknown platform -> PT400 UNKNOWN_PLATFORM');
select is(pg_temp.sqlerr($$select api.create_integration('sandbox', 'x', 'M', null, '{"behavior": "explode"}', null, null, null)$$), 'PT400 INVALID_SETTINGS',
  'manager: an unknown sandbox behavior -> PT400 INVALID_SETTINGS');
select is((api.create_integration('webhook', 'x', 'Hook', null, null, 'https://93.184.215.14/hook', 'whsec_BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=', 'prv1:'||encode('sealed by the route','base64')) ? 'secret'), false,
  'manager: the created webhook integration does not show its secret');

------------------------------------------------------------------------------
-- Viewers read and change nothing, through the API or around it.
------------------------------------------------------------------------------
select pg_temp.act_as('A.viewer', 'A1');
select is(pg_temp.ids(api.list_campaigns(null, true)), pg_temp.labels('camp:A1', 'camp:A1.other'), 'viewer: lists the campaigns of A1');
select is(jsonb_array_length(api.get_campaign(pg_temp.id('camp:A1')) -> 'phases'), 2, 'viewer: reads a campaign with its phases');
select is(pg_temp.ids(api.list_taxonomy_terms('tags')), pg_temp.labels('tag:A1'), 'viewer: lists the tags of A1');
select is(api.list_hashtag_groups() -> 0 -> 'hashtags', '["Acme", "launch"]'::jsonb, 'viewer: hashtags are stored normalized');
select is((api.list_campaign_content(pg_temp.id('camp:A1'), 100, 0, null, null, null, 'asc') -> 'meta' ->> 'total')::int, 1,
  'viewer: reads the campaign content page');
select is(pg_temp.sqlerr($$select api.create_taxonomy_term('tags', 'V', null)$$), 'PT403 ROLE_REQUIRED', 'viewer: create tag -> PT403 ROLE_REQUIRED');
select is(pg_temp.sqlerr($$select api.create_taxonomy_term('pillars', 'V', null)$$), 'PT403 ROLE_REQUIRED', 'viewer: create pillar -> PT403 ROLE_REQUIRED');
select is(pg_temp.sqlerr(pg_temp.q($$select api.update_taxonomy_term('formats', %L, '{"name": "V"}')$$, 'format:A1')), 'PT403 ROLE_REQUIRED',
  'viewer: update format -> PT403 ROLE_REQUIRED');
select is(pg_temp.sqlerr(pg_temp.q($$select api.delete_taxonomy_term('tags', %L)$$, 'tag:A1')), 'PT403 ROLE_REQUIRED', 'viewer: delete tag -> PT403 ROLE_REQUIRED');
select is(pg_temp.sqlerr($$select api.create_hashtag_group('V', '{}')$$), 'PT403 ROLE_REQUIRED', 'viewer: create hashtag group -> PT403 ROLE_REQUIRED');
select is(pg_temp.sqlerr(pg_temp.q($$select api.update_hashtag_group(%L, '{"name": "V"}')$$, 'hashtags:A1')), 'PT403 ROLE_REQUIRED',
  'viewer: update hashtag group -> PT403 ROLE_REQUIRED');
select is(pg_temp.sqlerr($$select api.create_campaign('V', null, null, null, null, null)$$), 'PT403 ROLE_REQUIRED', 'viewer: create campaign -> PT403 ROLE_REQUIRED');
select is(pg_temp.sqlerr(pg_temp.q($$select api.update_campaign(%L, '{"name": "V"}')$$, 'camp:A1')), 'PT403 ROLE_REQUIRED', 'viewer: update campaign -> PT403 ROLE_REQUIRED');
select is(pg_temp.sqlerr(pg_temp.q($$select api.delete_campaign(%L)$$, 'camp:A1')), 'PT403 ROLE_REQUIRED', 'viewer: delete campaign -> PT403 ROLE_REQUIRED');
select is(pg_temp.sqlerr(pg_temp.q($$select api.create_campaign_phase(%L, 'V', null, null, null, null)$$, 'camp:A1')), 'PT403 ROLE_REQUIRED',
  'viewer: add phase -> PT403 ROLE_REQUIRED');
select is(pg_temp.sqlerr(pg_temp.q($$select api.save_campaign_phases(%L, '[]')$$, 'camp:A1')), 'PT403 ROLE_REQUIRED', 'viewer: bulk-save phases -> PT403 ROLE_REQUIRED');
select is(pg_temp.sqlerr(pg_temp.q($$select api.update_campaign_phase(%L, %L, '{"name": "V"}')$$, 'camp:A1', 'phase:A1.1')), 'PT403 ROLE_REQUIRED',
  'viewer: update phase -> PT403 ROLE_REQUIRED');
select is(pg_temp.sqlerr(pg_temp.q($$select api.delete_campaign_phase(%L, %L)$$, 'camp:A1', 'phase:A1.1')), 'PT403 ROLE_REQUIRED',
  'viewer: delete phase -> PT403 ROLE_REQUIRED');
select is(pg_temp.sqlerr($$select api.create_integration('sandbox', 'x', 'V', null, null, null, null, null)$$), 'PT403 ROLE_REQUIRED',
  'viewer: connect -> PT403 ROLE_REQUIRED');
select is(pg_temp.write_outcome(pg_temp.q($$insert into app.tags (organization_id, workspace_id, name) values (%L, %L, 'Direct')$$, 'A', 'A1')), '42501',
  'viewer: a direct INSERT of a tag -> 42501');
select is(pg_temp.write_outcome(pg_temp.q($$insert into app.campaigns (organization_id, workspace_id, name) values (%L, %L, 'Direct')$$, 'A', 'A1')), '42501',
  'viewer: a direct INSERT of a campaign -> 42501');
select is(pg_temp.write_outcome($$update app.campaigns set name = 'Direct'$$), '42501', 'viewer: a direct UPDATE of campaigns is refused (42501)');
select is(pg_temp.write_outcome($$delete from app.campaign_phases$$), 'rows=0', 'viewer: a direct DELETE of phases touches no row');
select is(pg_temp.write_outcome($$update app.integrations set deleted_at = now()$$), '42501', 'viewer: a direct soft delete of integrations is refused (42501)');

------------------------------------------------------------------------------
-- Another organization's principal, and forged contexts, see and change nothing.
------------------------------------------------------------------------------
select pg_temp.act_as('B.editor', 'B1');
select is(pg_temp.ids(api.list_campaigns(null, false)), pg_temp.labels('camp:B1'), 'B editor: lists only B1''s campaign');
select is(pg_temp.ids(api.list_integrations()), pg_temp.labels('integ:B1'), 'B editor: lists only B1''s integration');
select is(pg_temp.sqlerr(pg_temp.q($$select api.get_campaign(%L)$$, 'camp:A1')), 'PT404 NOT_FOUND', 'B editor: A1''s campaign -> PT404');
select is(pg_temp.sqlerr(pg_temp.q($$select api.update_campaign(%L, '{"name": "Stolen"}')$$, 'camp:A1')), 'PT404 NOT_FOUND',
  'B editor: updating A1''s campaign -> PT404');
select is(pg_temp.sqlerr(pg_temp.q($$select api.delete_campaign_phase(%L, %L)$$, 'camp:A1', 'phase:A1.1')), 'PT404 NOT_FOUND',
  'B editor: deleting A1''s phase -> PT404');
select is(pg_temp.sqlerr(pg_temp.q($$select api.update_taxonomy_term('tags', %L, '{"name": "Stolen"}')$$, 'tag:A1')), 'PT404 NOT_FOUND',
  'B editor: renaming A1''s tag -> PT404');
select is(pg_temp.sqlerr(pg_temp.q($$select api.get_integration(%L)$$, 'integ:A1.x')), 'PT404 NOT_FOUND', 'B editor: A1''s integration -> PT404');
select is(pg_temp.sqlerr(pg_temp.q($$select api.list_campaign_content(%L, 100, 0, null, null, null, 'asc')$$, 'camp:A1')), 'PT404 NOT_FOUND',
  'B editor: A1''s campaign content -> PT404');
select is(pg_temp.write_outcome(pg_temp.q($$update app.tags set name = 'Stolen' where id = %L$$, 'tag:A1')), 'rows=0',
  'B editor: a direct UPDATE of A1''s tag touches no row');
select is(pg_temp.write_outcome(pg_temp.q($$delete from app.campaigns where id = %L$$, 'camp:A1')), 'rows=0',
  'B editor: a direct DELETE of A1''s campaign touches no row');
select is(pg_temp.write_outcome(pg_temp.q($$insert into app.campaign_phases (organization_id, workspace_id, campaign_id, name) values (%L, %L, %L, 'Intruder')$$, 'B', 'B1', 'camp:A1')),
  'PT404', 'B editor: a phase of B1 pointing at A1''s campaign is refused (PT404 CAMPAIGN_NOT_FOUND)');

-- Forged: B's editor with A1 as its workspace (the gate would refuse).
select pg_temp.act_as('B.editor', 'A1');
select is((select count(*)::int from app.campaigns) + (select count(*)::int from app.campaign_phases) + (select count(*)::int from app.tags)
          + (select count(*)::int from app.pillars) + (select count(*)::int from app.formats) + (select count(*)::int from app.hashtag_groups)
          + (select count(*)::int from app.integrations),
  0, 'forged A1 context for B editor: sees no catalog row at all');
select is(pg_temp.sqlerr('select api.list_campaigns(null, false)'), 'PT403 ROLE_REQUIRED', 'forged A1 context for B editor: api.list_campaigns -> PT403');
-- Forged with a role too.
select set_config('pressroom.workspace_role', 'manager', true);
select is(jsonb_array_length(api.list_campaigns(null, false)), 0, 'forged A1 manager context for B editor: lists no campaign');
select is(jsonb_array_length(api.list_integrations()), 0, 'forged A1 manager context for B editor: lists no integration');
select is(pg_temp.write_outcome($$update app.campaigns set name = 'Stolen'$$), 'rows=0', 'forged A1 manager context: a direct UPDATE touches no campaign');
select is(pg_temp.sqlerr($$select api.create_taxonomy_term('tags', 'Intruder', null)$$), '42501',
  'forged A1 manager context: creating a tag in A1 with B''s organization -> 42501');
-- The stranger of A (no access to A1), forged into A1 as a manager.
select pg_temp.act_as('A.stranger', 'A1');
select set_config('pressroom.workspace_role', 'manager', true);
select is((select count(*)::int from app.campaigns) + (select count(*)::int from app.tags) + (select count(*)::int from app.integrations), 0,
  'forged A1 manager context for the stranger: sees no catalog row');
select is(pg_temp.write_outcome(pg_temp.q($$insert into app.campaigns (organization_id, workspace_id, name) values (%L, %L, 'Intruder')$$, 'A', 'A1')), '42501',
  'forged A1 manager context for the stranger: a direct INSERT of a campaign -> 42501');

------------------------------------------------------------------------------
-- Names are unique per workspace, case-insensitively (and trimmed).
------------------------------------------------------------------------------
select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr($$select api.create_taxonomy_term('tags', ' LAUNCH ', null)$$), 'PT409 NAME_TAKEN', 'tags: '' LAUNCH '' clashes with Launch');
select is(pg_temp.sqlerr($$select api.create_taxonomy_term('pillars', 'education', null)$$), 'PT409 NAME_TAKEN', 'pillars: education clashes with Education');
select is(pg_temp.sqlerr($$select api.create_taxonomy_term('formats', 'CAROUSEL', null)$$), 'PT409 NAME_TAKEN', 'formats: CAROUSEL clashes with Carousel');
select is(pg_temp.sqlerr($$select api.create_hashtag_group('brand', '{}')$$), 'PT409 NAME_TAKEN', 'hashtag groups: brand clashes with Brand');
select is(pg_temp.sqlerr(pg_temp.q($$select api.update_hashtag_group(%L, '{"name": "BRAND"}')$$, 'hashtags:A1')), 'ok',
  'hashtag groups: a group may change the case of its own name');
select is(pg_temp.sqlerr($$select api.create_taxonomy_term('tags', 'Launch!', null)$$), 'ok', 'tags: another name is fine');
select pg_temp.act_as('A.owner', 'A2');
select is(pg_temp.sqlerr($$select api.create_taxonomy_term('tags', 'launch', null)$$), 'ok', 'tags: the same name in another workspace is fine');
select pg_temp.act_as_owner();
select is(pg_temp.write_outcome(pg_temp.q($$insert into app.tags (organization_id, workspace_id, name) values (%L, %L, 'launch ')$$, 'A', 'A1')), '23505',
  'tags: a direct INSERT of a taken name (another case, trailing space) -> 23505');
select is(pg_temp.sqlerr(pg_temp.q($$insert into app.hashtag_groups (organization_id, workspace_id, name, hashtags) values (%L, %L, 'Bad', array['two words'])$$, 'A', 'A1')),
  'PT400 INVALID_HASHTAG', 'hashtag groups: a hashtag with a space -> PT400 INVALID_HASHTAG, whoever writes');

------------------------------------------------------------------------------
-- Phases stay in their campaign; campaigns in their workspace.
------------------------------------------------------------------------------
select is(pg_temp.sqlerr(pg_temp.q($$insert into app.content_roots (organization_id, workspace_id, campaign_id, phase_id) values (%L, %L, %L, %L)$$, 'A', 'A1', 'camp:A1', 'phase:A1.other')),
  'PT400 PHASE_NOT_IN_CAMPAIGN', 'a root cannot take a phase of another campaign');
select is(pg_temp.sqlerr(pg_temp.q($$insert into app.content_roots (organization_id, workspace_id, phase_id) values (%L, %L, %L)$$, 'A', 'A1', 'phase:A1.1')),
  'PT400 PHASE_NOT_IN_CAMPAIGN', 'a root cannot take a phase without its campaign');
select is(pg_temp.sqlerr(pg_temp.q($$update app.content_roots set campaign_id = %L where id = %L$$, 'camp:A1.other', 'root:A1')),
  'PT400 PHASE_NOT_IN_CAMPAIGN', 'moving a root to another campaign while keeping the old phase is refused');
select is(pg_temp.sqlerr(pg_temp.q($$update app.content_roots set campaign_id = %L, phase_id = null where id = %L$$, 'camp:B1', 'root:A1')),
  'PT404 CAMPAIGN_NOT_FOUND', 'a root cannot take a campaign of another workspace');
select is(pg_temp.sqlerr(pg_temp.q($$insert into app.campaign_phases (organization_id, workspace_id, campaign_id, name) values (%L, %L, %L, 'x')$$, 'A', 'A1', 'camp:B1')),
  'PT404 CAMPAIGN_NOT_FOUND', 'a phase cannot be put in a campaign of another workspace');
select is(pg_temp.sqlerr(pg_temp.q($$update app.campaign_phases set campaign_id = %L where id = %L$$, 'camp:A1.other', 'phase:A1.1')),
  'PT400 IMMUTABLE_FIELD', 'a phase never moves to another campaign');
update app.content_roots set campaign_id = null where id = pg_temp.id('root:A1');
select is((select phase_id from app.content_roots where id = pg_temp.id('root:A1')), null::uuid,
  'unassigning the campaign unassigns the phase too');
update app.content_roots set campaign_id = pg_temp.id('camp:A1'), phase_id = pg_temp.id('phase:A1.2') where id = pg_temp.id('root:A1');

select pg_temp.act_as('A.editor', 'A1');
select is(pg_temp.sqlerr(pg_temp.q($$select api.update_campaign_phase(%L, %L, '{"name": "x"}')$$, 'camp:A1.other', 'phase:A1.1')), 'PT404 NOT_FOUND',
  'api: a phase addressed under another campaign -> PT404');
select is(pg_temp.sqlerr(pg_temp.q($$select api.delete_campaign_phase(%L, %L)$$, 'camp:A1.other', 'phase:A1.1')), 'PT404 NOT_FOUND',
  'api: deleting a phase under another campaign -> PT404');
select is(pg_temp.sqlerr(format($$select api.save_campaign_phases(%L, %L)$$, pg_temp.id('camp:A1'),
          jsonb_build_array(jsonb_build_object('id', pg_temp.id('phase:A1.other'), 'name', 'x')))),
  'PT400 PHASE_NOT_IN_CAMPAIGN', 'api: bulk save naming another campaign''s phase -> PT400');
select is(pg_temp.sqlerr(pg_temp.q($$select api.list_campaign_content(%L, 100, 0, %L, null, null, 'asc')$$, 'camp:A1', 'phase:A1.other')), 'PT404 NOT_FOUND',
  'api: the content page filtered by another campaign''s phase -> PT404');
select is(pg_temp.sqlerr(pg_temp.q($$select api.create_campaign(%L, null, null, '2026-02-01', '2026-01-01', null)$$, 'x')), 'PT400 VALIDATION_FAILED',
  'api: a campaign ending before it starts -> PT400');
select is(api.delete_campaign_phase(pg_temp.id('camp:A1'), pg_temp.id('phase:A1.1')) ->> 'deleted', 'true', 'api: deletes phase:A1.1');
select is(array(select position from app.campaign_phases where campaign_id = pg_temp.id('camp:A1') order by position), array[0],
  'the remaining phase moves up to position 0');
select is(api.delete_campaign(pg_temp.id('camp:A1')) - 'id',
  '{"deleted": true, "contentUnassigned": 1, "rootsUnassigned": 1}'::jsonb, 'api: deleting the campaign reports its unassigned content');
select pg_temp.act_as_owner();
select is((select row(campaign_id, phase_id)::text from app.content_roots where id = pg_temp.id('root:A1')), '(,)',
  'the campaign''s root keeps living, without campaign or phase');
select is((select count(*)::int from app.campaign_phases where campaign_id = pg_temp.id('camp:A1')), 0, 'the campaign''s phases are gone');
insert into app.campaign_phases (organization_id, workspace_id, campaign_id, name, position)
select pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('camp:A1.other'), 'P' || g, g from generate_series(2, 50) g;
select is(pg_temp.sqlerr(pg_temp.q($$insert into app.campaign_phases (organization_id, workspace_id, campaign_id, name) values (%L, %L, %L, 'Fifty-one')$$, 'A', 'A1', 'camp:A1.other')),
  'PT409 PHASE_LIMIT_REACHED', 'a campaign has at most 50 phases, whoever inserts');

------------------------------------------------------------------------------
-- Integrations: no disconnect under scheduled content; a deleted one takes no content.
------------------------------------------------------------------------------
select pg_temp.act_as('A.manager', 'A1');
select is(pg_temp.sqlerr(pg_temp.q($$select api.delete_integration(%L)$$, 'integ:A1.x')), 'PT409 INTEGRATION_HAS_SCHEDULED_CONTENT',
  'manager: disconnecting an integration with a scheduled edition -> PT409');
select throws_ok(pg_temp.q($$select api.delete_integration(%L)$$, 'integ:A1.x'), 'PT409', '1 scheduled edition(s) would publish through this integration; unschedule or delete them first.',
  'the refusal says how many editions are scheduled');
select is(pg_temp.sqlerr(pg_temp.q($$select api.integration_for_listing(%L, 'boards')$$, 'integ:A1.x')), 'PT404 NOT_SUPPORTED',
  'boards of an X account -> PT404 NOT_SUPPORTED');
select is(api.integration_for_listing(pg_temp.id('integ:A1.pin'), 'boards') ->> 'platform', 'pinterest', 'boards of a Pinterest account: its connector is named');
select is(api.delete_integration(pg_temp.id('integ:A1.pin')), jsonb_build_object('id', pg_temp.id('integ:A1.pin'), 'deleted', true),
  'manager: disconnects the Pinterest account');
select is(pg_temp.sqlerr(pg_temp.q($$select api.get_integration(%L)$$, 'integ:A1.pin')), 'PT404 NOT_FOUND', 'the deleted integration -> PT404 on get');
select is(pg_temp.sqlerr(pg_temp.q($$select api.integration_for_listing(%L, 'boards')$$, 'integ:A1.pin')), 'PT404 NOT_FOUND', 'the deleted integration -> PT404 on boards');
select is(pg_temp.sqlerr(pg_temp.q($$select api.delete_integration(%L)$$, 'integ:A1.pin')), 'PT404 NOT_FOUND', 'the deleted integration -> PT404 on delete');
select ok(not (pg_temp.id('integ:A1.pin') = any (pg_temp.ids(api.list_integrations()))), 'the deleted integration is not listed');
select pg_temp.act_as_owner();
select is(pg_temp.sqlerr(pg_temp.q($$insert into app.content_items (organization_id, workspace_id, root_id, integration_id) values (%L, %L, %L, %L)$$, 'A', 'A1', 'root:A1', 'integ:A1.pin')),
  'PT409 INTEGRATION_DELETED', 'no edition can be added to a deleted integration, whoever inserts');
select is(pg_temp.sqlerr(pg_temp.q($$insert into app.content_items (organization_id, workspace_id, root_id, integration_id) values (%L, %L, %L, %L)$$, 'A', 'A1', 'root:A1', 'integ:B1')),
  'PT404 INTEGRATION_NOT_FOUND', 'no edition of A1 can use an integration of B1');
select is(pg_temp.write_outcome(pg_temp.q($$insert into app.integrations (organization_id, workspace_id, connector, platform, name, webhook_url, webhook_secret) values (%L, %L, 'webhook', 'x', 'h', 'file:///etc/passwd', 'a-long-random-signing-secret')$$, 'A', 'A1')),
  '23514', 'a webhook url that is not http(s) breaks a check constraint, whoever inserts');

select pg_temp.act_as_owner();
select * from finish();
rollback;
