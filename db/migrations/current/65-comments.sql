-- Catalog comments: the rulebook readable from the database itself.
--
-- Every table of the schemas app and audit (the monthly partitions of
-- audit.api_calls, made by a job, aside) and every function of the schema api
-- gets a `comment on`. A table's comment says what a row is, its tenancy, and
-- the policies and triggers that guard it. An api function's comment starts
-- with the operation it serves (`Serves <METHOD> <path> (<operationId>).`, as
-- in openapi.yaml), or names its caller in the server when it serves no single
-- route (server/http/pipeline.ts, server/storage/router.ts and signing.ts),
-- then says what it does, the role it requires and the notable errors it
-- raises (the codes of db/ERRORS.md).
--
-- Comments only: no rule changes here. Signatures are those of db/schema.sql.

------------------------------------------------------------------------------
-- Identity and access
------------------------------------------------------------------------------
comment on table app.organizations is
  'A customer organization: the tenant every other row belongs to, with its plan (trial, basic, standard, premium; '
  'a trial needs trial_ends_at, and api.gate refuses an ended trial with 401 PLAN_REQUIRED). A request reads only its '
  'own organization (policy organizations_api_select); rows are written by api.signup and the set-plan admin command.';
comment on table app.users is
  'A person with an account in exactly one organization, with an organization role (owner, admin, member) and a '
  'status (an active user has a password hash, an invited one has none). Emails are unique on the server, ignoring case '
  '(index users_email_key). A request sees its organization''s users (policy users_api_select) and may only add invited '
  'members without a password (policy users_api_insert, used by api.add_member).';
comment on table app.sessions is
  'A signed-in session of a user: only the SHA-256 of its token (token_hash), its expiry and its revocation. In the '
  'user''s organization (foreign key sessions_user_same_organization); a request sees and revokes only its own user''s '
  'sessions (policies sessions_api_select, sessions_api_update). Made by api.signup and api.create_session; '
  'app.purge_expired deletes them a day after they expire or are revoked.';
comment on table app.workspaces is
  'A workspace of an organization: the tenancy unit of integrations, planning, content and media, with its IANA time '
  'zone (checked by trigger workspaces_20_check_timezone, 400 INVALID_TIMEZONE). A request sees only the workspaces '
  'its principal may use (policy workspaces_api_select); made by api.signup and api.create_workspace.';
comment on table app.workspace_members is
  'A user''s role (viewer, editor, manager) in one workspace of the user''s organization. Written by managers of the '
  'workspace only (policy workspace_members_api_write); a membership''s workspace and user never change (trigger '
  'workspace_members_20_immutable) and every workspace keeps a manager (constraint trigger '
  'workspace_members_30_keep_manager, 409 LAST_MANAGER).';
comment on table app.api_keys is
  'An API key of an organization: its SHA-256 (key_hash) and visible prefix, never the key itself, and the role it '
  'grants, capped at every call by its creator''s current role. Only a user with a session creates keys (policy '
  'api_keys_api_insert) and revokes the keys they may administer (policy api_keys_api_update); trigger '
  'api_keys_10_immutable_once_issued keeps hash, prefix and organization fixed and revocation final (409 KEY_REVOKED).';
comment on table app.api_key_workspaces is
  'A workspace granted to an API key; key and workspace are of the same organization (foreign keys '
  'api_key_workspaces_key_same_organization, api_key_workspaces_workspace_same_organization). A request may grant only '
  'workspaces it manages (policy api_key_workspaces_api_insert) and reads its organization''s grants.';
comment on table app.idempotency_keys is
  'One Idempotency-Key per workspace, principal, method and route: the request body''s hash while the first request '
  'is in flight, then its recorded status and answer, replayed for 24 hours (api.idempotency_begin, '
  'api.idempotency_finish, api.idempotency_release). A request reaches only its own principal''s keys in its workspace '
  '(policy idempotency_keys_api); app.purge_expired deletes expired rows.';
comment on table app.rate_limit_counters is
  'Hits per bucket (a workspace, a principal, or an anonymous client), rate-limit class (read, write, expensive) and '
  'minute, counted by app.rate_limit_hit from api.gate so that limits hold across API processes. Not tenant data: '
  'unlogged, reached by pressroom_definer only (policy rate_limit_counters_definer); app.purge_expired drops old windows.';

comment on function api.signup(text,text,text,text,bytea,integer,boolean,text,integer) is
  'Serves POST /v1/auth/signup (signup_v1). Creates an organization on the given plan, its owner, a first workspace '
  '(the owner as manager) and a session; open while no organization exists, or when the server allows sign-up. '
  'Anonymous, owned by pressroom_definer. Raises 403 SIGNUP_CLOSED and 409 EMAIL_TAKEN.';
comment on function api.login_lookup(text) is
  'Serves POST /v1/auth/sessions (createSession_v1), first step. Returns the user id and stored password hash of the '
  'active user with this email (the KDF runs in the server); no row when there is none. Anonymous, owned by '
  'pressroom_definer.';
comment on function api.create_session(uuid,text,bytea,integer) is
  'Serves POST /v1/auth/sessions (createSession_v1), second step. Opens a session for the user once the server has '
  'verified the password against the hash it was given; a hash changed in between refuses with 401 '
  'INVALID_CREDENTIALS. Anonymous, owned by pressroom_definer; only the token''s SHA-256 is stored.';
comment on function api.end_current_session() is
  'Serves DELETE /v1/auth/sessions/current (endSession_v1). Revokes the session the call was made with. Requires a '
  'session token (403 SESSION_REQUIRED for an API key); 404 NOT_FOUND when it is already ended.';
comment on function api.list_workspaces() is
  'Serves GET /v1/workspaces (listWorkspaces_v1). The workspaces of the caller''s organization that the principal '
  '(user or API key) may use, each with the principal''s role there. Any authenticated caller.';
comment on function api.create_workspace(text,text) is
  'Serves POST /v1/workspaces (createWorkspace_v1). Creates a workspace (time zone UTC unless given) with the caller '
  'as manager. Requires a session of an organization owner or admin (403 SESSION_REQUIRED, 403 ROLE_REQUIRED); owned '
  'by pressroom_definer. An unknown time zone is refused by trigger workspaces_20_check_timezone (400 INVALID_TIMEZONE).';
comment on function api.list_members() is
  'Serves GET /v1/workspaces/{workspaceId}/members (listMembers_v1). The members of the workspace with their roles. '
  'Requires the manager role.';
comment on function api.add_member(text,text) is
  'Serves POST /v1/workspaces/{workspaceId}/members (addMember_v1). Adds a user of the organization to the workspace '
  'with a role, inviting a new user of the organization when the email is unknown. Requires the manager role; raises '
  '409 ALREADY_MEMBER and 409 EMAIL_TAKEN (the email belongs to another organization).';
comment on function api.update_member(uuid,text) is
  'Serves PATCH /v1/workspaces/{workspaceId}/members/{userId} (updateMember_v1). Changes a member''s role. Requires the '
  'manager role; 404 NOT_FOUND, and 409 LAST_MANAGER from trigger workspace_members_30_keep_manager when the last '
  'manager would be demoted.';
comment on function api.remove_member(uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/members/{userId} (removeMember_v1). Removes a member from the workspace. '
  'Requires the manager role; 404 NOT_FOUND, and 409 LAST_MANAGER from trigger workspace_members_30_keep_manager.';
comment on function api.create_api_key(text,uuid[],text,timestamp with time zone,text,bytea) is
  'Serves POST /v1/workspaces/{workspaceId}/api-keys (createApiKey_v1). Records a new key (its SHA-256 and prefix, made '
  'by the server) granted the listed workspaces with a role (editor unless given). Requires a session and the manager '
  'role; every granted workspace must be one the caller manages (403 WORKSPACE_FORBIDDEN); 400 VALIDATION_FAILED for '
  'an expiresAt in the past.';
comment on function api.list_api_keys() is
  'Serves GET /v1/workspaces/{workspaceId}/api-keys (listApiKeys_v1). The active (not revoked, not expired) keys the '
  'caller may administer, without their secrets. Requires a session and the manager role.';
comment on function api.revoke_api_key(uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/api-keys/{id} (revokeApiKey_v1). Revokes a key the caller may administer; '
  'revocation takes effect on the key''s next call and is final. Requires a session and the manager role; 404 '
  'NOT_FOUND for an unknown, foreign or already revoked key.';
comment on function api.gate(bytea,uuid,text,integer,text,text) is
  'Called by the request pipeline (server/http/pipeline.ts) before every /v1 operation, outside the request''s '
  'transaction. Authenticates the bearer credential (session token or API key, by SHA-256), checks the organization''s '
  'plan against the operation''s minimum, the principal''s access to the workspace and its rate limit (anonymous routes '
  'by client bucket), and returns the principal, workspace role and rate state, with an error object instead of '
  'raising (401 UNAUTHENTICATED, KEY_REVOKED, KEY_EXPIRED, PLAN_REQUIRED; 403 WORKSPACE_FORBIDDEN; 429 RATE_LIMITED). '
  'Owned by pressroom_definer.';
comment on function api.idempotency_begin(text,text,text,bytea) is
  'Called by the request pipeline (server/http/pipeline.ts) for every operation that takes an Idempotency-Key, before '
  'the handler. Claims the key for this workspace, principal, method and route, or answers replay with the recorded '
  'status and body; an expired record or a dead claim is taken afresh. Raises 422 IDEMPOTENCY_KEY_REUSED (another '
  'request body) and 409 IDEMPOTENCY_KEY_IN_USE (the first request is still running).';
comment on function api.idempotency_finish(text,text,text,integer,jsonb) is
  'Called by the request pipeline (server/http/pipeline.ts) for every operation that takes an Idempotency-Key: records '
  'the status and answer of the claimed key, in the request''s own transaction on success or right after a refusal, '
  'so that retries replay it.';
comment on function api.idempotency_release(text,text,text) is
  'Called by the request pipeline (server/http/pipeline.ts) for every operation that takes an Idempotency-Key when it '
  'ended with a 5xx: forgets the in-flight claim so the client may retry with the same key.';

------------------------------------------------------------------------------
-- Integrations
------------------------------------------------------------------------------
comment on table app.platforms is
  'Reference data, one row per social platform (x, linkedin, instagram, ...): caption length, media rules, required '
  'settings and capabilities (boards, video categories, articles, published-caption edits), against which content is '
  'checked when it is scheduled. Not tenant data: every role may read it (policy platforms_read); migrations write it.';
comment on table app.integrations is
  'A connected account (channel) of a workspace: its connector (sandbox or webhook), platform, name and settings; a '
  'webhook integration also keeps its URL and signing secret, which pressroom_api may insert but never read. Tenant '
  'policies of app.apply_tenant_policies (select, insert, update; writes need editor, the api functions manager); '
  'never deleted by a request: api.delete_integration sets deleted_at.';

comment on function api.list_integrations() is
  'Serves GET /v1/workspaces/{workspaceId}/integrations (listIntegrations_v1). The workspace''s integrations that are '
  'not deleted, without secrets. Requires the viewer role.';
comment on function api.get_integration(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/integrations/{id} (getIntegration_v1). One integration with its platform''s '
  'publishing rules, without its secret. Requires the viewer role; 404 NOT_FOUND, also once deleted.';
comment on function api.create_integration(text,text,text,text,jsonb,text,text) is
  'Serves POST /v1/workspaces/{workspaceId}/integrations (createIntegration_v1). Connects an account through a '
  'connector that needs no OAuth (sandbox, or webhook whose URL the server resolved and checked before this call) and '
  'normalizes its settings. Requires the manager role; raises 400 UNKNOWN_CONNECTOR, UNKNOWN_PLATFORM, INVALID_SETTINGS, '
  'INVALID_WEBHOOK_URL and VALIDATION_FAILED.';
comment on function api.delete_integration(uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/integrations/{id} (deleteIntegration_v1). Soft delete: sets deleted_at '
  'and status disconnected; afterwards every route answers 404. Requires the manager role; refused with 409 '
  'INTEGRATION_HAS_SCHEDULED_CONTENT while editions are scheduled on it; 404 NOT_FOUND.';
comment on function api.integration_for_listing(uuid,text) is
  'Serves GET /v1/workspaces/{workspaceId}/integrations/{id}/boards (listIntegrationBoards_v1) and GET '
  '/v1/workspaces/{workspaceId}/integrations/{id}/video-categories (listIntegrationVideoCategories_v1). What the '
  'connector needs to list boards or video categories (never the secret). Requires the viewer role; 404 NOT_FOUND, and '
  '404 NOT_SUPPORTED when the platform has no such list.';

------------------------------------------------------------------------------
-- Taxonomy and campaigns
------------------------------------------------------------------------------
comment on table app.tags is
  'A tag of a workspace, assigned to content roots (app.content_root_tags); names unique per workspace ignoring case '
  '(index tags_workspace_name_key), trimmed and colors lowered by trigger tags_20_normalize. Tenant policies of '
  'app.apply_tenant_policies (writes need editor).';
comment on table app.pillars is
  'A content pillar of a workspace, assigned to content roots (app.content_root_pillars); names unique per workspace '
  'ignoring case (index pillars_workspace_name_key), normalized by trigger pillars_20_normalize. Tenant policies of '
  'app.apply_tenant_policies (writes need editor).';
comment on table app.formats is
  'A content format of a workspace, assigned to content roots (app.content_root_formats); names unique per workspace '
  'ignoring case (index formats_workspace_name_key), normalized by trigger formats_20_normalize. Tenant policies of '
  'app.apply_tenant_policies (writes need editor).';
comment on table app.hashtag_groups is
  'A named set of up to 100 hashtags of a workspace; names unique per workspace ignoring case (index '
  'hashtag_groups_workspace_name_key); trigger hashtag_groups_20_normalize trims the name and normalizes the hashtags '
  '(400 INVALID_HASHTAG). Tenant policies of app.apply_tenant_policies (writes need editor).';
comment on table app.campaigns is
  'A campaign of a workspace (name, description, color, optional date range with start not after end) that content '
  'roots may belong to; deleting it unassigns its content (api.delete_campaign). Tenant policies of '
  'app.apply_tenant_policies (writes need editor).';
comment on table app.campaign_phases is
  'An ordered phase of a campaign, in the campaign''s workspace. Trigger campaign_phases_05_check_campaign refuses a '
  'campaign of another workspace (404 CAMPAIGN_NOT_FOUND), a move to another campaign (400 IMMUTABLE_FIELD) and a 51st '
  'phase (409 PHASE_LIMIT_REACHED). Tenant policies of app.apply_tenant_policies (writes need editor).';

comment on function api.list_taxonomy_terms(text) is
  'Serves GET /v1/workspaces/{workspaceId}/tags (listTags_v1), GET /v1/workspaces/{workspaceId}/pillars (listPillars_v1) '
  'and GET /v1/workspaces/{workspaceId}/formats (listFormats_v1), by p_kind. The workspace''s terms of that kind, by '
  'name. Requires the viewer role.';
comment on function api.create_taxonomy_term(text,text,text) is
  'Serves POST /v1/workspaces/{workspaceId}/tags (createTag_v1), POST /v1/workspaces/{workspaceId}/pillars '
  '(createPillar_v1) and POST /v1/workspaces/{workspaceId}/formats (createFormat_v1), by p_kind. Creates a term. '
  'Requires the editor role; 409 NAME_TAKEN (names compared ignoring case, trimmed).';
comment on function api.update_taxonomy_term(text,uuid,jsonb) is
  'Serves PATCH /v1/workspaces/{workspaceId}/tags/{id} (updateTag_v1), PATCH /v1/workspaces/{workspaceId}/pillars/{id} '
  '(updatePillar_v1) and PATCH /v1/workspaces/{workspaceId}/formats/{id} (updateFormat_v1), by p_kind. Changes the '
  'provided fields (name, color; color may be null). Requires the editor role; 404 NOT_FOUND, 409 NAME_TAKEN.';
comment on function api.delete_taxonomy_term(text,uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/tags/{id} (deleteTag_v1), DELETE /v1/workspaces/{workspaceId}/pillars/{id} '
  '(deletePillar_v1) and DELETE /v1/workspaces/{workspaceId}/formats/{id} (deleteFormat_v1), by p_kind. Deletes the '
  'term and its assignments to content roots. Requires the editor role; 404 NOT_FOUND.';
comment on function api.list_hashtag_groups() is
  'Serves GET /v1/workspaces/{workspaceId}/hashtag-groups (listHashtagGroups_v1). The workspace''s hashtag groups, by '
  'name. Requires the viewer role.';
comment on function api.create_hashtag_group(text,text[]) is
  'Serves POST /v1/workspaces/{workspaceId}/hashtag-groups (createHashtagGroup_v1). Creates a hashtag group. Requires '
  'the editor role; 409 NAME_TAKEN, and 400 INVALID_HASHTAG from trigger hashtag_groups_20_normalize.';
comment on function api.update_hashtag_group(uuid,jsonb) is
  'Serves PATCH /v1/workspaces/{workspaceId}/hashtag-groups/{id} (updateHashtagGroup_v1). Changes the provided name '
  'and/or hashtags. Requires the editor role; 404 NOT_FOUND, 409 NAME_TAKEN, 400 INVALID_HASHTAG.';
comment on function api.delete_hashtag_group(uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/hashtag-groups/{id} (deleteHashtagGroup_v1). Deletes a hashtag group. '
  'Requires the editor role; 404 NOT_FOUND.';
comment on function api.list_campaigns(text,boolean) is
  'Serves GET /v1/workspaces/{workspaceId}/campaigns (listCampaigns_v1). The workspace''s campaigns by start date and '
  'name, optionally filtered by a name search and with their phases. Requires the viewer role.';
comment on function api.get_campaign(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/campaigns/{id} (getCampaign_v1). One campaign with its phases. Requires the '
  'viewer role; 404 NOT_FOUND.';
comment on function api.create_campaign(text,text,text,date,date,jsonb) is
  'Serves POST /v1/workspaces/{workspaceId}/campaigns (createCampaign_v1). Creates a campaign, with its phases when '
  'given. Requires the editor role; 400 VALIDATION_FAILED (end before start), 409 PHASE_LIMIT_REACHED.';
comment on function api.update_campaign(uuid,jsonb) is
  'Serves PATCH /v1/workspaces/{workspaceId}/campaigns/{id} (updateCampaign_v1). Changes the provided fields '
  '(description, color and dates may be null). Requires the editor role; 404 NOT_FOUND, 400 VALIDATION_FAILED (end '
  'before start).';
comment on function api.delete_campaign(uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/campaigns/{id} (deleteCampaign_v1). Deletes the campaign and its phases; '
  'its content stays, unassigned, and the answer counts the editions and roots unassigned. Requires the editor role; '
  '404 NOT_FOUND.';
comment on function api.list_campaign_phases(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/campaigns/{id}/phases (listCampaignPhases_v1). The campaign''s phases in '
  'order. Requires the viewer role; 404 NOT_FOUND.';
comment on function api.create_campaign_phase(uuid,text,text,date,date,integer) is
  'Serves POST /v1/workspaces/{workspaceId}/campaigns/{id}/phases (createCampaignPhase_v1). Adds a phase at a position '
  '(last unless given). Requires the editor role; 404 NOT_FOUND, 400 VALIDATION_FAILED (end before start), 409 '
  'PHASE_LIMIT_REACHED from trigger campaign_phases_05_check_campaign.';
comment on function api.save_campaign_phases(uuid,jsonb) is
  'Serves PUT /v1/workspaces/{workspaceId}/campaigns/{id}/phases (saveCampaignPhases_v1). Replaces the campaign''s phases '
  'with the list given, in its order: listed ids are updated, entries without id created, the others deleted. Requires '
  'the editor role; 404 NOT_FOUND, 400 VALIDATION_FAILED, 400 PHASE_NOT_IN_CAMPAIGN, 409 PHASE_LIMIT_REACHED.';
comment on function api.update_campaign_phase(uuid,uuid,jsonb) is
  'Serves PATCH /v1/workspaces/{workspaceId}/campaigns/{id}/phases/{phaseId} (updateCampaignPhase_v1). Changes the '
  'provided fields of a phase and moves it when position is given. Requires the editor role; 404 NOT_FOUND, 400 '
  'VALIDATION_FAILED (end before start).';
comment on function api.delete_campaign_phase(uuid,uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/campaigns/{id}/phases/{phaseId} (deleteCampaignPhase_v1). Deletes a phase, '
  'unassigns its content roots from it and closes the gap in the order. Requires the editor role; 404 NOT_FOUND.';
comment on function api.list_campaign_content(uuid,integer,bigint,text,text,text,text) is
  'Serves GET /v1/workspaces/{workspaceId}/campaigns/{id}/content (listCampaignContent_v1). The campaign''s live '
  'editions, filtered by phase (or none), status and platform, ordered by scheduled, else intended, else creation time; '
  'returns a page with limit, offset, total and hasMore. Requires the viewer role; 404 NOT_FOUND, 400 '
  'VALIDATION_FAILED for page bounds, sort direction or status.';

------------------------------------------------------------------------------
-- Content
------------------------------------------------------------------------------
comment on table app.content_roots is
  'A content root (the idea): title, caption, notes, campaign and phase, shared by its editions (one per channel). '
  'Trigger content_roots_05_check_campaign keeps campaign and phase in the workspace and consistent '
  '(404 CAMPAIGN_NOT_FOUND, 400 PHASE_NOT_IN_CAMPAIGN); content_roots_20_stay_in_workspace refuses a move; '
  'content_roots_50_check_publishable re-checks scheduled editions that inherit the caption; content_roots_60_propagate '
  'records their versions. Tenant policies of app.apply_tenant_policies (writes need editor); deletion is soft.';
comment on table app.content_items is
  'An edition: a root''s content on one channel (integration), a post or an article, with its own caption, thread, '
  'settings and media or the root''s; at most one live edition per root and channel. Its status moves are checked by '
  'trigger content_items_20_status_machine (409 INVALID_STATUS_TRANSITION, 409 CONTENT_DELETED); only the publishing '
  'engine marks it sent or failed (content_items_15_engine_only, 42501) or writes sent_at, permalink, platform_post_id '
  'and publish_job_id (no grant to pressroom_api); content_items_30_publish_job keeps exactly one pg-boss job per '
  'scheduled edition; content_items_50_check_publishable_* validate scheduled content against the platform''s rules; '
  'content_items_60_record_version_* record versions. Tenant policies of app.apply_tenant_policies (writes need editor).';
comment on table app.content_root_media is
  'A media item of a content root, in position order, used by the editions that do not have their own media. Trigger '
  'content_root_media_20_same_workspace keeps root and media in one workspace; content_root_media_60_media_not_binned '
  'refuses binned media (409 MEDIA_IN_BIN); content_root_media_50_check_publishable re-checks scheduled editions. '
  'Tenant policies of app.apply_tenant_policies (writes need editor).';
comment on table app.content_item_media is
  'A media item of an edition, in position order (frozen from the root''s media by trigger '
  'content_items_40_freeze_media when the edition is made). Trigger content_item_media_20_same_workspace_while_editable '
  'allows changes only while the edition is draft or scheduled and keeps media in its workspace; '
  'content_item_media_60_media_not_binned refuses binned media (409 MEDIA_IN_BIN). Tenant policies of '
  'app.apply_tenant_policies (writes need editor).';
comment on table app.content_root_tags is
  'A tag assigned to a content root. Trigger content_root_tags_20_same_workspace keeps tag and root in one workspace '
  '(400 VALIDATION_FAILED). Tenant policies of app.apply_tenant_policies (select, insert, delete; writes need editor).';
comment on table app.content_root_pillars is
  'A pillar assigned to a content root. Trigger content_root_pillars_20_same_workspace keeps pillar and root in one '
  'workspace (400 VALIDATION_FAILED). Tenant policies of app.apply_tenant_policies (select, insert, delete; writes need '
  'editor).';
comment on table app.content_root_formats is
  'A format assigned to a content root. Trigger content_root_formats_20_same_workspace keeps format and root in one '
  'workspace (400 VALIDATION_FAILED). Tenant policies of app.apply_tenant_policies (select, insert, delete; writes need '
  'editor).';
comment on table app.content_versions is
  'One version of an edition''s publishable content (caption, thread, settings, media, and the root''s where the edition '
  'inherits them), numbered per edition; several changes in one transaction make one version. Written by the content '
  'triggers; trigger content_versions_10_append_only refuses any change after its transaction (409 VERSION_IMMUTABLE). '
  'Tenant policies of app.apply_tenant_policies (select, insert, update; never deleted by a request).';

comment on function api.create_content(jsonb) is
  'Serves POST /v1/workspaces/{workspaceId}/content (createContent_v1). Creates a root with one edition per channel, '
  'by intent: draft, schedule (at scheduledAt) or publish_now; with recurrence, a recurring series instead. Validates '
  'every channel against its platform''s rules before scheduling. Requires the editor role; 400 VALIDATION_FAILED with '
  'details.fields (times, channels, media, platform rules), 409 MEDIA_IN_BIN, 409 INTEGRATION_DELETED.';
comment on function api.list_content(jsonb) is
  'Serves GET /v1/workspaces/{workspaceId}/content (listContent_v1). A page of editions filtered by status, workflow '
  'statuses and integration, sorted as asked; with since, the editions changed after it and tombstones of those '
  'deleted after it. Returns items and meta (limit, offset, total, hasMore). Requires the viewer role.';
comment on function api.get_content(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/content/{id} (getContent_v1). One live edition with its root, media, '
  'planning metadata and publishing state. Requires the viewer role; 404 NOT_FOUND.';
comment on function api.update_content(uuid,jsonb) is
  'Serves PATCH /v1/workspaces/{workspaceId}/content/{id} (updateContent_v1). Changes a draft or scheduled edition''s '
  'caption, thread, settings or own media, re-validating scheduled content. Requires the editor role; 404 NOT_FOUND, '
  '400 INVALID_CONTENT_STATUS, 400 VALIDATION_FAILED, 409 MEDIA_IN_BIN.';
comment on function api.delete_content(uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/content/{id} (deleteContent_v1). Soft-deletes an edition (a tombstone for '
  'since polling), cancelling its publish job. Requires the editor role; 404 NOT_FOUND, 409 PUBLISHING_IN_PROGRESS and '
  '409 PUBLISHING_AWAITS_CONFIRMATION from trigger content_items_30_publish_job.';
comment on function api.schedule_content(uuid,timestamp with time zone) is
  'Serves PATCH /v1/workspaces/{workspaceId}/content/{id}/schedule (scheduleContent_v1). Schedules or reschedules a '
  'draft or scheduled edition at a future time, validated against its platform''s rules; the publish job follows in the '
  'same transaction. Requires the editor role; 400 INVALID_CONTENT_STATUS, 400 VALIDATION_FAILED (time in the past, '
  'platform rules), 409 PUBLISHING_IN_PROGRESS, 409 PUBLISHING_AWAITS_CONFIRMATION.';
comment on function api.revert_content_to_draft(uuid,jsonb) is
  'Serves POST /v1/workspaces/{workspaceId}/content/{id}/revert-to-draft (revertContentToDraft_v1). Moves every '
  'scheduled edition of the edition''s root back to draft, keeping the time as intended publish time. Requires the '
  'editor role; 400 INVALID_CONTENT_STATUS (not scheduled), 409 REVERT_SCOPE_STALE when expectedRootPostId and '
  'expectedRootEditionIds no longer match, 409 PUBLISHING_IN_PROGRESS, 409 PUBLISHING_AWAITS_CONFIRMATION.';
comment on function api.set_content_intended_publish_time(uuid,timestamp with time zone) is
  'Serves PATCH /v1/workspaces/{workspaceId}/content/{id}/intended-publish-time (setContentIntendedPublishTime_v1). Sets '
  'or clears the planned time of a draft or pending-approval edition. Requires the editor role; 404 NOT_FOUND, 400 '
  'INVALID_CONTENT_STATUS.';
comment on function api.update_content_metadata(uuid,jsonb) is
  'Serves PATCH /v1/workspaces/{workspaceId}/content/{id}/metadata (updateContentMetadata_v1). Changes the planning '
  'metadata of the edition''s root: organizational title, campaign and phase, tags, pillars and formats. Requires the '
  'editor role and a draft, scheduled or sent edition; 404 NOT_FOUND, 400 INVALID_CONTENT_STATUS, 400 '
  'VALIDATION_FAILED, 400 PHASE_NOT_IN_CAMPAIGN.';
comment on function api.update_content_notes(uuid,jsonb) is
  'Serves PATCH /v1/workspaces/{workspaceId}/content/{id}/notes (updateContentNotes_v1). Sets or clears the internal '
  'notes of the edition''s root, in any status. Requires the editor role; 404 NOT_FOUND.';
comment on function api.list_content_versions(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/content/{contentId}/versions (listContentVersions_v1). The edition''s '
  'versions, newest first, marking the current one. Requires the viewer role; 404 NOT_FOUND.';
comment on function api.restore_content_version(uuid,integer,jsonb) is
  'Serves POST /v1/workspaces/{workspaceId}/content/{contentId}/versions/{version}/restore (restoreContentVersion_v1). '
  'Restores a draft or scheduled edition''s caption, thread, settings and media from a version, recording a new '
  'version. Requires the editor role; 404 NOT_FOUND, 400 INVALID_CONTENT_STATUS, 409 VERSION_CONFLICT (stale '
  'expectedCurrentVersion), 409 VERSION_MEDIA_UNAVAILABLE, 400 VALIDATION_FAILED.';
comment on function api.content_failed_count() is
  'Serves GET /v1/workspaces/{workspaceId}/content/failed-count (getContentFailedCount_v1). The number of live failed '
  'editions of the workspace. Requires the viewer role.';
comment on function api.content_pending_approval_count() is
  'Serves GET /v1/workspaces/{workspaceId}/content/pending-approval-count (getContentPendingApprovalCount_v1). The '
  'number of live editions awaiting approval in the workspace. Requires the viewer role.';
comment on function api.list_content_roots(integer,bigint) is
  'Serves GET /v1/workspaces/{workspaceId}/content-roots (listContentRoots_v1). A page of live roots with their '
  'editions, most recently changed first, with limit, offset, total and hasMore. Requires the viewer role.';
comment on function api.get_content_root(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/content-roots/{id} (getContentRoot_v1). One live root with its editions and '
  'media. Requires the viewer role; 404 NOT_FOUND.';
comment on function api.update_content_root(uuid,jsonb) is
  'Serves PATCH /v1/workspaces/{workspaceId}/content-roots/{id} (updateContentRoot_v1). Changes a root''s title, caption '
  'or media, which editions without their own inherit; its scheduled editions are re-validated. Requires the editor '
  'role; 404 NOT_FOUND, 400 VALIDATION_FAILED (details.fields per edition), 409 MEDIA_IN_BIN.';

------------------------------------------------------------------------------
-- Recurring
------------------------------------------------------------------------------
comment on table app.recurring_series is
  'A recurring series of a workspace: its rule (daily, weekly, monthly), time zone and first time (the wall-clock time '
  'kept across daylight-saving changes), intent (draft or schedule) and template, materialized ahead by a job '
  '(app.materialize_due_series). Trigger recurring_series_20_cancel_is_final keeps the rule, zone and first time fixed '
  'and cancellation final (409 SERIES_ALREADY_CANCELLED). Tenant policies of app.apply_tenant_policies (select, insert, '
  'update; never deleted by a request).';
comment on table app.recurring_occurrences is
  'One occurrence of a recurring series, by index and time, with the content root made for it (at most one). Trigger '
  'recurring_occurrences_20_cancel_is_final keeps series, index and time fixed and cancellation final (409 '
  'OCCURRENCE_ALREADY_CANCELLED). Tenant policies of app.apply_tenant_policies (select, insert, update; never deleted '
  'by a request).';

comment on function api.cancel_recurring_occurrence(uuid,jsonb) is
  'Serves POST /v1/workspaces/{workspaceId}/content/recurring-occurrences/{occurrenceId}/cancel '
  '(cancelRecurringOccurrence_v1). Cancels one occurrence and its draft and scheduled editions, and bumps the series '
  'version. Requires the editor role; 404 NOT_FOUND, 409 SERIES_VERSION_STALE, 409 OCCURRENCE_ALREADY_CANCELLED, 409 '
  'OCCURRENCE_ALREADY_PUBLISHED.';
comment on function api.cancel_recurring_series(uuid,jsonb) is
  'Serves POST /v1/workspaces/{workspaceId}/content/recurring-series/{seriesId}/cancel (cancelRecurringSeries_v1). '
  'Cancels the series from an occurrence on (by default the first unpublished one): those occurrences and their '
  'draft and scheduled editions; published ones are kept. Requires the editor role; 404 NOT_FOUND, 409 '
  'SERIES_VERSION_STALE, 409 SERIES_ALREADY_CANCELLED.';

------------------------------------------------------------------------------
-- Media
------------------------------------------------------------------------------
comment on table app.media_folders is
  'A media folder of a workspace, at the root or inside a root folder (two levels at most, trigger '
  'media_folders_20_check_depth, 409 FOLDER_DEPTH_EXCEEDED); sibling names unique ignoring case (index '
  'media_folders_sibling_name_key). Tenant policies of app.apply_tenant_policies (writes need editor).';
comment on table app.media_items is
  'A media item of a workspace (image, video or GIF): the bytes'' storage key and what was measured from them, name, '
  'alt text, folder, and state active or deleted (in the bin until delete_after). Trigger '
  'media_items_20_bin_rule_and_measured_fields keeps the bytes'' facts fixed (400 IMMUTABLE_FIELD) and refuses binning '
  'media used by scheduled content (409 MEDIA_IN_USE); media_items_30_delete_only_binned lets only binned items be '
  'deleted (409 MEDIA_NOT_IN_BIN). Tenant policies of app.apply_tenant_policies (writes need editor).';
comment on table app.media_label_groups is
  'An ordered group of media labels in a workspace; names unique per workspace ignoring case (index '
  'media_label_groups_workspace_name_key). Tenant policies of app.apply_tenant_policies (writes need editor).';
comment on table app.media_labels is
  'A media label of a workspace, optionally in a group; a merged label stays as a pointer to the label it was merged '
  'into (merged_into_id), with no group and no assignments, and its name is free again (index '
  'media_labels_workspace_name_key covers live labels only). Tenant policies of app.apply_tenant_policies (writes need '
  'editor).';
comment on table app.media_item_labels is
  'A label assigned to a media item of the same workspace. Trigger media_item_labels_20_check_label refuses a merged '
  'label (409 LABEL_MERGED). Tenant policies of app.apply_tenant_policies (writes need editor).';
comment on table app.media_upload_sessions is
  'One upload of a workspace: the client PUTs its bytes to storage_key through a signed URL until expires_at; '
  'completing it makes the media item whose id is the session''s id (so a retried completion finds the same item). '
  'State pending, completed, aborted or expired. Tenant policies of app.apply_tenant_policies (select, insert, update; '
  'writes need editor).';
comment on table app.media_usage_events is
  'Usage history of a media item: attached, detached, scheduled, unscheduled or published, via an edition or a root. '
  'Written only by the definer triggers content_items_61_usage_on_status_change, '
  'content_item_media_61_usage_on_list_change and content_root_media_61_usage_on_list_change. Tenant policies of '
  'app.apply_tenant_policies (select only for requests).';
comment on table app.media_storage_garbage is
  'A storage key whose bytes must go, written in the transaction that removes the media row or abandons an upload; '
  'the purge job deletes the bytes, then the row. No foreign keys: the bytes outlive the rows. Tenant policies of '
  'app.apply_tenant_policies (select, insert for requests).';
comment on table app.server_secrets is
  'A server-wide secret by name, such as the storage URL signing secret (storage.signing) when SIGNED_URL_SECRET is not '
  'set. Not tenant data: only pressroom_definer reads or writes it (policy server_secrets_definer), through '
  'api.storage_signing_secret.';

comment on function api.init_media_upload(text,text,bigint,uuid,text,integer) is
  'Serves POST /v1/workspaces/{workspaceId}/media/upload (initMediaUpload_v1). Opens an upload session for a file of a '
  'declared type and size, optionally into a folder; the server adds the signed upload URL. Requires the editor role; '
  '415 UNSUPPORTED_MEDIA_FORMAT, 413 MEDIA_TOO_LARGE, 400 VALIDATION_FAILED (file name), 404 NOT_FOUND (folder).';
comment on function api.get_media_upload(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/media/upload/{sessionId} (getMediaUpload_v1). One upload session, saying '
  'whether the caller may upload (editor or above) so that only they get the upload URL again. Requires the viewer '
  'role; 404 NOT_FOUND.';
comment on function api.begin_media_upload_completion(uuid) is
  'Serves POST /v1/workspaces/{workspaceId}/media/upload/{sessionId}/complete (completeMediaUpload_v1), first step. '
  'Locks the session; returns the media item when already completed, else what the server needs to verify the bytes. '
  'Requires the editor role; 404 NOT_FOUND, 409 UPLOAD_SESSION_ABORTED, 410 UPLOAD_SESSION_EXPIRED.';
comment on function api.complete_media_upload(uuid,jsonb,jsonb) is
  'Serves POST /v1/workspaces/{workspaceId}/media/upload/{sessionId}/complete (completeMediaUpload_v1), second step. '
  'With the facts the server measured from the bytes (type, size, dimensions, duration, checksum, final key), makes '
  'the media item and closes the session. Requires the editor role; 404 NOT_FOUND (no pending session, or folder), 413 '
  'MEDIA_TOO_LARGE.';
comment on function api.abort_media_upload(uuid) is
  'Serves POST /v1/workspaces/{workspaceId}/media/upload/{sessionId}/abort (abortMediaUpload_v1). Aborts a pending '
  'upload and queues its storage keys for the purge job. Requires the editor role; 404 NOT_FOUND, 409 '
  'UPLOAD_SESSION_COMPLETED.';
comment on function api.list_media(jsonb,jsonb,integer) is
  'Serves GET /v1/workspaces/{workspaceId}/media (listMedia_v1). A keyset page of media items filtered by folder, '
  'labels, type, search, favorite, use, state and source, sorted by creation time, file name or size; the server turns '
  'the last key into a signed cursor. Requires the viewer role; 400 VALIDATION_FAILED for contradicting filters.';
comment on function api.get_media(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/media/{id} (getMedia_v1). One media item with its labels and use. Requires '
  'the viewer role; 404 NOT_FOUND.';
comment on function api.media_object(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/media/{id}/view-url (getMediaViewUrl_v1) and GET '
  '/v1/workspaces/{workspaceId}/media/{id}/download-url (getMediaDownloadUrl_v1). What the server needs to sign a view '
  'or download URL of a media item. Requires the viewer role; 404 NOT_FOUND.';
comment on function api.update_media(uuid,jsonb) is
  'Serves PATCH /v1/workspaces/{workspaceId}/media/{id} (updateMedia_v1). Changes an active item''s file name, alt text, '
  'favorite flag or folder. Requires the editor role; 404 NOT_FOUND, 409 MEDIA_IN_BIN, 400 VALIDATION_FAILED.';
comment on function api.delete_media(uuid,integer) is
  'Serves DELETE /v1/workspaces/{workspaceId}/media/{id} (deleteMedia_v1). Moves an item to the bin for the retention '
  'period; an item already in the bin is answered as it is. Requires the editor role; 404 NOT_FOUND, 409 MEDIA_IN_USE '
  'from trigger media_items_20_bin_rule_and_measured_fields.';
comment on function api.restore_media(uuid) is
  'Serves POST /v1/workspaces/{workspaceId}/media/{id}/restore (restoreMedia_v1). Brings an item back from the bin; an '
  'active item is answered as it is. Requires the editor role; 404 NOT_FOUND.';
comment on function api.delete_media_permanently(uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/media/{id}/permanent (deleteMediaPermanently_v1). Deletes a binned item for '
  'good and queues its bytes for the purge job. Requires the editor role; 404 NOT_FOUND, 409 MEDIA_NOT_IN_BIN.';
comment on function api.empty_media_bin() is
  'Serves POST /v1/workspaces/{workspaceId}/media/bin/empty (emptyMediaBin_v1). Deletes every binned item of the '
  'workspace for good and queues their bytes for the purge job. Requires the editor role.';
comment on function api.bulk_media(text,uuid[],jsonb) is
  'Serves POST /v1/workspaces/{workspaceId}/media/bulk-delete (bulkDeleteMedia_v1), '
  'POST /v1/workspaces/{workspaceId}/media/bulk-restore (bulkRestoreMedia_v1), '
  'POST /v1/workspaces/{workspaceId}/media/bulk-delete-forever (bulkDeleteMediaForever_v1), '
  'POST /v1/workspaces/{workspaceId}/media/bulk-move (bulkMoveMedia_v1), '
  'POST /v1/workspaces/{workspaceId}/media/bulk-label (bulkLabelMedia_v1) and '
  'POST /v1/workspaces/{workspaceId}/media/bulk-unlabel (bulkUnlabelMedia_v1), by p_action. One result per id in the '
  'order given, each in its own subtransaction so a refused id does not spoil the others. Requires the editor role; '
  'an unknown action, folder or label refuses the whole request (400 VALIDATION_FAILED, 404 NOT_FOUND, 409 LABEL_MERGED).';
comment on function api.list_media_usage_history(uuid,jsonb,integer) is
  'Serves GET /v1/workspaces/{workspaceId}/media/{id}/usage-history (listMediaUsageHistory_v1). A keyset page of the '
  'item''s usage events, newest first. Requires the viewer role; 404 NOT_FOUND.';
comment on function api.attach_media_labels(uuid,uuid[]) is
  'Serves POST /v1/workspaces/{workspaceId}/media/{id}/labels (attachMediaLabels_v1). Adds labels to an active item. '
  'Requires the editor role; 404 NOT_FOUND, 409 LABEL_MERGED, 409 MEDIA_IN_BIN.';
comment on function api.replace_media_labels(uuid,uuid[]) is
  'Serves PUT /v1/workspaces/{workspaceId}/media/{id}/labels (replaceMediaLabels_v1). Sets an active item''s labels to '
  'exactly the list. Requires the editor role; 404 NOT_FOUND, 409 LABEL_MERGED, 409 MEDIA_IN_BIN.';
comment on function api.detach_media_label(uuid,uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/media/{id}/labels/{labelId} (detachMediaLabel_v1). Takes a label off an '
  'active item. Requires the editor role; 404 NOT_FOUND, 409 MEDIA_IN_BIN.';
comment on function api.list_media_folders(text,jsonb,integer) is
  'Serves GET /v1/workspaces/{workspaceId}/media/folders (listMediaFolders_v1). A keyset page of folders by name: all, '
  'root folders (p_parent ''root'') or the subfolders of one. Requires the viewer role; 404 NOT_FOUND (parent).';
comment on function api.create_media_folder(text,uuid) is
  'Serves POST /v1/workspaces/{workspaceId}/media/folders (createMediaFolder_v1). Creates a folder at the root or in a '
  'root folder. Requires the editor role; 404 NOT_FOUND (parent), 409 FOLDER_NAME_TAKEN, 409 FOLDER_DEPTH_EXCEEDED.';
comment on function api.get_media_folder(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/media/folders/{id} (getMediaFolder_v1). One folder. Requires the viewer '
  'role; 404 NOT_FOUND.';
comment on function api.update_media_folder(uuid,text) is
  'Serves PATCH /v1/workspaces/{workspaceId}/media/folders/{id} (updateMediaFolder_v1). Renames a folder. Requires the '
  'editor role; 404 NOT_FOUND, 409 FOLDER_NAME_TAKEN.';
comment on function api.delete_media_folder(uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/media/folders/{id} (deleteMediaFolder_v1). Deletes a folder and its '
  'subfolders; their media (binned media too) moves to the library root, nothing else is deleted. Requires the editor '
  'role; 404 NOT_FOUND.';
comment on function api.media_folder_path(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/media/folders/{id}/path (getMediaFolderPath_v1). The folder''s path from the '
  'root: its parent, if any, then the folder. Requires the viewer role; 404 NOT_FOUND.';
comment on function api.move_media_folder(uuid,uuid) is
  'Serves PATCH /v1/workspaces/{workspaceId}/media/folders/{id}/move (moveMediaFolder_v1). Moves a folder to the root '
  '(null) or into a root folder. Requires the editor role; 404 NOT_FOUND, 409 FOLDER_NAME_TAKEN, 409 '
  'FOLDER_DEPTH_EXCEEDED from trigger media_folders_20_check_depth.';
comment on function api.list_media_labels(text,boolean,text) is
  'Serves GET /v1/workspaces/{workspaceId}/media/labels (listMediaLabels_v1). The labels by name: of every group, '
  'ungrouped only (p_group '''') or of one group; merged labels on request; optional name search. Requires the viewer '
  'role; 404 NOT_FOUND (group).';
comment on function api.create_media_label(text,text,uuid) is
  'Serves POST /v1/workspaces/{workspaceId}/media/labels (createMediaLabel_v1). Creates a label, optionally in a group. '
  'Requires the editor role; 404 NOT_FOUND (group), 409 LABEL_NAME_TAKEN.';
comment on function api.get_media_label(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/media/labels/{id} (getMediaLabel_v1). One label. Requires the viewer role; '
  '404 NOT_FOUND.';
comment on function api.update_media_label(uuid,jsonb) is
  'Serves PATCH /v1/workspaces/{workspaceId}/media/labels/{id} (updateMediaLabel_v1). Changes a label''s name, color '
  '(null clears) or group (null: ungrouped). Requires the editor role; 404 NOT_FOUND, 409 LABEL_MERGED, 409 '
  'LABEL_NAME_TAKEN.';
comment on function api.delete_media_label(uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/media/labels/{id} (deleteMediaLabel_v1). Deletes a label, its assignments '
  'and the labels merged into it, answering how many items it was taken off. Requires the editor role; 404 NOT_FOUND.';
comment on function api.merge_media_labels(uuid,uuid) is
  'Serves POST /v1/workspaces/{workspaceId}/media/labels/{id}/merge (mergeMediaLabels_v1). Merges the source label into '
  'the target: the source''s media get the target label and the source (and its earlier aliases) points at the target. '
  'Requires the editor role; 400 VALIDATION_FAILED (same label), 404 NOT_FOUND, 409 LABEL_MERGED.';
comment on function api.media_label_usage() is
  'Serves GET /v1/workspaces/{workspaceId}/media/labels/usage (getMediaLabelUsage_v1). Usage counts per live label '
  '(active and binned media, last assignment), most used first. Requires the viewer role.';
comment on function api.media_label_health() is
  'Serves GET /v1/workspaces/{workspaceId}/media/labels/health (getMediaLabelHealth_v1). What needs tidying: unused '
  'labels, empty groups, labels whose names differ only in case, spacing or punctuation, and how much media is '
  'labeled. Requires the viewer role.';
comment on function api.list_media_label_groups() is
  'Serves GET /v1/workspaces/{workspaceId}/media/label-groups (listMediaLabelGroups_v1). The label groups in their '
  'order. Requires the viewer role.';
comment on function api.create_media_label_group(text) is
  'Serves POST /v1/workspaces/{workspaceId}/media/label-groups (createMediaLabelGroup_v1). Creates a group, placed '
  'last. Requires the editor role; 409 LABEL_GROUP_NAME_TAKEN.';
comment on function api.get_media_label_group(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/media/label-groups/{id} (getMediaLabelGroup_v1). One label group. Requires '
  'the viewer role; 404 NOT_FOUND.';
comment on function api.update_media_label_group(uuid,text) is
  'Serves PATCH /v1/workspaces/{workspaceId}/media/label-groups/{id} (updateMediaLabelGroup_v1). Renames a group. '
  'Requires the editor role; 404 NOT_FOUND, 409 LABEL_GROUP_NAME_TAKEN.';
comment on function api.delete_media_label_group(uuid,text) is
  'Serves DELETE /v1/workspaces/{workspaceId}/media/label-groups/{id} (deleteMediaLabelGroup_v1). Deletes a group; '
  'p_labels ''ungroup'' keeps its labels without a group, ''delete'' deletes them and their assignments. Requires the '
  'editor role; 404 NOT_FOUND, 400 VALIDATION_FAILED.';
comment on function api.reorder_media_label_groups(uuid[]) is
  'Serves POST /v1/workspaces/{workspaceId}/media/label-groups/reorder (reorderMediaLabelGroups_v1). Sets the order of '
  'the groups; the list must name every group of the workspace exactly once, else 409 LABEL_GROUPS_CHANGED (a stale '
  'list is refused rather than half applied). Requires the editor role.';
comment on function api.move_media_labels_to_group(uuid,uuid[]) is
  'Serves POST /v1/workspaces/{workspaceId}/media/label-groups/{id}/labels (moveMediaLabelsToGroup_v1) and POST '
  '/v1/workspaces/{workspaceId}/media/label-groups/ungroup-labels (ungroupMediaLabels_v1, p_group_id null). Moves '
  'labels into a group, or out of any group. Requires the editor role; 404 NOT_FOUND, 409 LABEL_MERGED.';
comment on function api.storage_upload_session(uuid) is
  'Called by the storage router (server/storage/router.ts) for PUT /storage/v1/uploads/{sessionId}, outside any '
  'request transaction, once the URL''s signature is checked: whether the upload may still receive bytes (state, '
  'expiry, declared size and type); null for no such session. Owned by pressroom_definer, executable by pressroom_app '
  'only.';
comment on function api.storage_media_object(uuid) is
  'Called by the storage router (server/storage/router.ts) for GET /storage/v1/media/{mediaId}, outside any request '
  'transaction, once the URL''s signature is checked: the object behind a signed view or download URL; null once '
  'deleted for good. Owned by pressroom_definer, executable by pressroom_app only.';
comment on function api.storage_signing_secret(bytea) is
  'Called by the URL signer (server/storage/signing.ts) when SIGNED_URL_SECRET is not configured: stores the first '
  'process''s random candidate in app.server_secrets and returns the stored value, so every process signs alike. '
  'Owned by pressroom_definer, executable by pressroom_app only.';

------------------------------------------------------------------------------
-- Publishing
------------------------------------------------------------------------------
comment on table app.publishing_states is
  'The publishing state of a scheduled edition''s current run (publishing, retrying, awaiting_confirmation, failed, '
  'published) and the job it belongs to; a new job (reschedule, publish, retry) starts a new run. Written by the '
  'publishing engine (pressroom_worker and its definer functions) only; tenant policies of app.apply_tenant_policies '
  'let requests read.';
comment on table app.publish_attempts is
  'One attempt to publish an edition, recorded before the platform is called (so a worker killed mid-publish never '
  'publishes twice), with its job, idempotency token and outcome (published, failed, transient, unknown, or resolved). '
  'Written by the publishing engine only; tenant policies of app.apply_tenant_policies let requests read.';
comment on table app.published_captions is
  'The caption of a sent edition as last edited on its platform, with the number of edits (api.record_published_caption, '
  'through app.publishing_set_caption). Written by definer functions and the engine only; tenant policies of '
  'app.apply_tenant_policies let requests read.';
comment on table app.sandbox_posts is
  'What the sandbox platform received: one post per integration and idempotency token, counting repeated deliveries and '
  'caption edits. Written by the publishing engine''s sandbox connector only; tenant policies of '
  'app.apply_tenant_policies let requests read (api.list_sandbox_posts).';

comment on function api.publish_content(uuid) is
  'Serves POST /v1/workspaces/{workspaceId}/content/{id}/publish (publishContent_v1). Moves a draft or scheduled edition '
  'to scheduled now, validated against its platform''s rules, and starts a new publishing run. Requires the editor role; '
  '404 NOT_FOUND, 400 INVALID_CONTENT_STATUS, 400 VALIDATION_FAILED, 409 PUBLISHING_AWAITS_CONFIRMATION, 409 '
  'PUBLISHING_IN_PROGRESS.';
comment on function api.retry_content(uuid) is
  'Serves POST /v1/workspaces/{workspaceId}/content/{id}/retry (retryContent_v1). Moves a failed edition to scheduled '
  'now, clearing its error, and starts a new publishing run. Requires the editor role; 404 NOT_FOUND, 400 '
  'INVALID_CONTENT_STATUS, 400 VALIDATION_FAILED.';
comment on function api.resolve_publishing_result(uuid,jsonb) is
  'Serves POST /v1/workspaces/{workspaceId}/content/{id}/resolve-publishing-result (resolvePublishingResult_v1). Records '
  'the outcome (published or failed) of an edition whose last attempt''s outcome is unknown, through the engine''s '
  'app.publishing_resolve. Requires the editor role; 404 NOT_FOUND, 400 VALIDATION_FAILED, 409 NOTHING_TO_RESOLVE.';
comment on function api.published_caption_target(uuid) is
  'Serves PATCH /v1/workspaces/{workspaceId}/content/{id}/published-caption (updatePublishedCaption_v1), first step: '
  'checks only, and returns what the connector needs; the route then calls the connector and '
  'api.record_published_caption. Requires the editor role; 404 NOT_FOUND, 400 INVALID_CONTENT_STATUS (not sent), 409 '
  'CAPTION_EDIT_NOT_SUPPORTED, 409 INTEGRATION_UNAVAILABLE.';
comment on function api.record_published_caption(uuid,text) is
  'Serves PATCH /v1/workspaces/{workspaceId}/content/{id}/published-caption (updatePublishedCaption_v1), second step: '
  'records the caption the platform accepted (app.published_captions). Requires the editor role; 404 NOT_FOUND, 400 '
  'INVALID_CONTENT_STATUS.';
comment on function api.list_sandbox_posts(uuid,integer,bigint) is
  'Serves GET /v1/workspaces/{workspaceId}/integrations/{id}/sandbox/posts (listSandboxPosts_v1). A page of what a '
  'sandbox integration received, oldest first, with the total. Requires the viewer role; 404 NOT_FOUND (no such '
  'sandbox integration).';

------------------------------------------------------------------------------
-- Articles
------------------------------------------------------------------------------
comment on table app.articles is
  'A long-form article for X: one per edition of kind article (content_item_id), with its sanitized HTML body, title, '
  'cover, a body version that guards concurrent edits, and the platform draft last sent. Trigger '
  'articles_20_draft_only_and_media_rules allows edits of draft articles only (400 INVALID_CONTENT_STATUS), bumps '
  'body_version and checks its media; articles_30_sync_images_* keep app.article_images in step. Tenant policies of '
  'app.apply_tenant_policies (writes need editor).';
comment on table app.article_images is
  'An inline image of an article body, by position (up to 20), referring to a media item of the workspace. Written by '
  'triggers articles_30_sync_images_*; trigger article_images_20_check_image allows draft articles only and checks the '
  'media. Tenant policies of app.apply_tenant_policies (select, insert, delete; writes need editor).';

comment on function api.list_articles(integer,bigint) is
  'Serves GET /v1/workspaces/{workspaceId}/articles (listArticles_v1). A page of live articles, most recently changed '
  'first, with limit, offset, total and hasMore. Requires the viewer role.';
comment on function api.get_article(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/articles/{contentId} (getArticle_v1). One live article with its body. '
  'Requires the viewer role; 404 NOT_FOUND.';
comment on function api.create_article(jsonb) is
  'Serves POST /v1/workspaces/{workspaceId}/articles (createArticle_v1). Creates a draft article (a root, an edition of '
  'kind article and the article) from a body the server sanitized, with the server''s findings on it. Requires the '
  'editor role; 400 VALIDATION_FAILED with details.fields (channel, title, media, body).';
comment on function api.update_article(uuid,jsonb) is
  'Serves PATCH /v1/workspaces/{workspaceId}/articles/{contentId} (updateArticle_v1). Changes a draft article''s title, '
  'body (with expectedBodyVersion) or cover. Requires the editor role; 404 NOT_FOUND, 400 INVALID_CONTENT_STATUS, 400 '
  'VALIDATION_FAILED, 409 POST_BODY_CHANGED when the body changed since expectedBodyVersion.';
comment on function api.begin_article_platform_draft(uuid) is
  'Serves POST /v1/workspaces/{workspaceId}/articles/{contentId}/platform-draft (createArticlePlatformDraft_v1), first '
  'step: the article with its media, its integration (secret included, for the connector), the content''s fingerprint, '
  'and the draft already made when the content has not changed since. Requires the editor role; 404 NOT_FOUND.';
comment on function api.record_article_platform_draft(uuid,text,text,text) is
  'Serves POST /v1/workspaces/{workspaceId}/articles/{contentId}/platform-draft (createArticlePlatformDraft_v1), second '
  'step: records the platform''s draft id and URL with the fingerprint of the content sent. Requires the editor role; '
  '404 NOT_FOUND.';

------------------------------------------------------------------------------
-- Audit
------------------------------------------------------------------------------
comment on table audit.api_calls is
  'One row per call to /v1, failures included: actor, organization, workspace, method, route template, status, '
  'duration, outcome, error code and request id, written by audit.record after the request''s own transaction. '
  'Partitioned by month (audit.ensure_partitions, run by a daily job, makes the partitions ahead). Append-only: triggers '
  'api_calls_10_append_only and api_calls_10_append_only_truncate refuse UPDATE, DELETE and TRUNCATE (409 '
  'AUDIT_APPEND_ONLY); only pressroom_definer inserts and reads it (policies api_calls_definer_insert, '
  'api_calls_definer_select); BI reads reporting.api_calls.';
