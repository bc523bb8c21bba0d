-- An account's own limits in the content checks (db/migrations/committed/000031-publishing-to-real-platforms.sql, split 21-account-tokens-and-limits.sql):
-- stored at connect and reconnect (app.connection_save) and by the worker after a refresh
-- (app.integration_limits_store), cleaned, engine-only, and used by app.content_item_problems
-- and app.assert_publishable over the platform's defaults.
begin;
select plan(27);
-- @include personas.sql
-- @include content.sql

create function pg_temp.cred(p_marker text) returns jsonb
language sql as $$
  select jsonb_build_object('ciphertext', encode(convert_to(rpad('PRV1-test-' || p_marker, 48, '.'), 'UTF8'), 'base64'), 'keyVersion', 1,
    'expiresAt', null, 'refreshExpiresAt', null, 'refreshable', false, 'hasRefreshToken', false)
$$;
-- app.connection_save as the connect functions call it (as pressroom_definer's functions do).
create function pg_temp.save(p_account text, p_limits jsonb, p_target uuid default null, p_with_limits boolean default true) returns uuid
language plpgsql as $$
declare v jsonb := jsonb_build_object('integrationId', pg_temp.id('masto:' || p_account), 'accountId', p_account, 'username', 'u' || p_account,
  'name', 'U ' || p_account, 'credential', pg_temp.cred(p_account));
begin
  if p_with_limits then v := v || jsonb_build_object('limits', p_limits); end if;
  return (app.connection_save(pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('A.manager'), 'mastodon', 'mastodon',
    'https://social.example', p_target, v) ->> 'integrationId')::uuid;
end
$$;
create function pg_temp.draft(p_label text, p_integration uuid, p_caption text) returns uuid
language plpgsql as $$
begin
  insert into app.content_roots (id, organization_id, workspace_id, caption)
  values (pg_temp.id('root:' || p_label), pg_temp.id('A'), pg_temp.id('A1'), p_caption);
  insert into app.content_items (id, organization_id, workspace_id, root_id, integration_id, status)
  values (pg_temp.id(p_label), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('root:' || p_label), p_integration, 'draft');
  return pg_temp.id(p_label);
end
$$;
create function pg_temp.codes(p_item text) returns text[]
language sql as $$
  select coalesce(array_agg(p ->> 'field' || ':' || (p ->> 'code') order by p ->> 'field', p ->> 'code'), '{}')
  from jsonb_array_elements(app.content_item_problems(pg_temp.id('A1'), pg_temp.id(p_item))) p
$$;

-- Cleaning: positive integers of the known keys only.
select is(app.account_limits_clean('{"captionMaxLength": 1000, "maxMedia": 8, "imageMaxBytes": 16777216, "videoMaxBytes": 104857600}'),
  '{"captionMaxLength": 1000, "maxMedia": 8, "imageMaxBytes": 16777216, "videoMaxBytes": 104857600}'::jsonb, 'the four known limits are kept');
select is(app.account_limits_clean('{"captionMaxLength": 0, "maxMedia": -1, "imageMaxBytes": 1.5, "videoMaxBytes": "9", "other": 3}'),
  null, 'zero, negative, fractional, text values and unknown keys are dropped: nothing is left');
select is(app.account_limits_clean('[1000]'), null, 'a non-object is no limits');

-- Connect with limits: stored; the check follows them.
select lives_ok($$select pg_temp.save('1', '{"captionMaxLength": 1000, "maxMedia": 6}')$$, 'a connection with the instance''s limits is saved');
select is((select limits from app.integration_limits where integration_id = pg_temp.id('masto:1')),
  '{"captionMaxLength": 1000, "maxMedia": 6}'::jsonb, 'connect stores the account''s limits');
select pg_temp.draft('m800', pg_temp.id('masto:1'), repeat('a', 800));
select is(pg_temp.codes('m800'), '{}'::text[], 'an 800-character caption fits an instance of 1000 characters (the platform default is 500)');
select pg_temp.draft('m1001', pg_temp.id('masto:1'), repeat('a', 1001));
select is(pg_temp.codes('m1001'), array['caption:caption_too_long'], '1001 characters are too long there');
select matches(app.content_item_problems(pg_temp.id('A1'), pg_temp.id('m1001')) -> 0 ->> 'message', 'at most 1000 characters', 'the message names the instance''s limit');
select is(pg_temp.sqlerr(format($$update app.content_items set status = 'scheduled', scheduled_at = now() + interval '1 hour' where id = %L$$, pg_temp.id('m800'))),
  'ok', 'and the 800-character post can be scheduled (app.assert_publishable)');

-- Media: the count is the account's, per-kind counts never above it; sizes are the account's.
insert into app.media_items (id, organization_id, workspace_id, type, filename, content_type, file_size, storage_key)
select pg_temp.id('img' || n), pg_temp.id('A'), pg_temp.id('A1'), 'image', 'i' || n, 'image/png', 2000, 'i' || n from generate_series(1, 7) n;
select pg_temp.draft('m6img', pg_temp.id('masto:1'), 'six images');
update app.content_items set own_media = true where id = pg_temp.id('m6img');
insert into app.content_item_media (content_item_id, media_id, workspace_id, organization_id, position)
select pg_temp.id('m6img'), pg_temp.id('img' || n), pg_temp.id('A1'), pg_temp.id('A'), n - 1 from generate_series(1, 6) n;
select is(pg_temp.codes('m6img'), '{}'::text[], 'six images on an instance that takes six (the platform default is four)');
select is(((app.integration_platform_rules('mastodon', pg_temp.id('A1'), pg_temp.id('masto:1'))).media_rules ->> 'maxVideos')::int, 1,
  'the platform''s one video per post stays');

-- Reconnect with other limits: replaced; a reconnect without `limits` keeps them.
select lives_ok($$select pg_temp.save('1', '{"captionMaxLength": 300, "imageMaxBytes": 1000}', pg_temp.id('masto:1'))$$, 'a reconnect with new limits');
select is(pg_temp.codes('m800'), array['caption:caption_too_long'], 'after the reconnect, 800 characters are too long for an instance of 300');
select is(pg_temp.codes('m6img'), array['mediaIds:too_many_media', 'mediaIds.0:media_too_large', 'mediaIds.1:media_too_large', 'mediaIds.2:media_too_large',
  'mediaIds.3:media_too_large', 'mediaIds.4:media_too_large', 'mediaIds.5:media_too_large'],
  'and the media count is the platform''s again (4), with the instance''s 1000-byte image limit');
select lives_ok($$select pg_temp.save('1', null, pg_temp.id('masto:1'), false)$$, 'a reconnect whose limits were not read');
select is((select limits ->> 'captionMaxLength' from app.integration_limits where integration_id = pg_temp.id('masto:1')), '300',
  'keeps the stored limits');

-- The worker's write after a refresh; null removes them (the platform's defaults again).
select pg_temp.act_as_owner();
set local role pressroom_worker;
select lives_ok($$select app.integration_limits_store(pg_temp.id('masto:1'), '{"captionMaxLength": 2000}')$$, 'the worker stores limits after a refresh');
reset role;
select is(pg_temp.codes('m1001'), '{}'::text[], '1001 characters fit an instance of 2000');
set local role pressroom_worker;
select is(pg_temp.write_outcome(format($$update app.integration_limits set limits = '{"captionMaxLength": 99999}' where integration_id = %L$$, pg_temp.id('masto:1'))),
  '42501', 'the worker writes limits only through app.integration_limits_store');
select lives_ok($$select app.integration_limits_store(pg_temp.id('masto:1'), null)$$, 'a platform that states no limits');
reset role;
select is(pg_temp.codes('m800'), array['caption:caption_too_long'], 'no limits: the platform default (500) again');

-- Written by the engine only: a request reads its own workspace's limits (no secret; the
-- platform-rule check runs as its caller, 000056) and cannot write one; another organization's
-- request reads none of them.
select pg_temp.save('2', '{"captionMaxLength": 1000}');
select pg_temp.act_as('A.manager', 'A1');
select is((select count(*)::int from app.integration_limits where integration_id = pg_temp.id('masto:2')), 1,
  'a request reads its workspace''s limits');
select is(pg_temp.sqlerr(format($$update app.integration_limits set limits = '{"captionMaxLength": 5}' where integration_id = %L$$, pg_temp.id('masto:2'))),
  '42501', 'and cannot change them');
select is(pg_temp.sqlerr($$insert into app.integration_limits (workspace_id, integration_id, organization_id, limits) select workspace_id, integration_id, organization_id, limits from app.integration_limits$$),
  '42501', 'nor write any');
select pg_temp.act_as('B.owner', 'B1');
select is((select count(*)::int from app.integration_limits), 0, 'another organization''s request reads none');
select pg_temp.act_as_owner();

-- One token store: a connected account's replies use its credentials, so a hand-set platform
-- token is refused for it; a sandbox integration of x still takes one.
select (app.connection_save(pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('A.manager'), 'x', 'x', null, null,
  jsonb_build_object('integrationId', pg_temp.id('x:3'), 'accountId', '3', 'username', 'u3', 'name', 'U 3', 'credential', pg_temp.cred('3'))) ->> 'integrationId');
select pg_temp.act_as('A.manager', 'A1');
select is(pg_temp.sqlerr(format($$select api.set_inbox_platform_token(%L, 40, decode(repeat('00', 40), 'hex'))$$, pg_temp.id('x:3'))),
  'PT400 PLATFORM_TOKEN_UNSUPPORTED', 'a connected X account takes no hand-set platform token');
select is(pg_temp.sqlerr(format($$select api.set_inbox_platform_token(%L, 40, decode(repeat('00', 40), 'hex'))$$, pg_temp.id('ig:A1.x'))),
  'ok', 'a sandbox integration of x still does');
select pg_temp.act_as_owner();

select * from finish();
rollback;
