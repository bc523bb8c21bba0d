-- A reaction is one emoji (db/migrations/committed/000029-hostile-input-two.sql, split 05-reaction-emoji.sql):
-- app.is_reaction_emoji decides, app.review_react refuses anything else with
-- 400 VALIDATION_FAILED for members and client links alike (adding and
-- removing), and the table's check holds it for every other writer.
begin;
select plan(13);

-- @include personas.sql
-- @include content.sql

-- One emoji each: a pictograph, with presentation selector, with skin tone,
-- ZWJ sequences (family, rainbow flag, technologist with skin tone, heart on
-- fire), a flag, a subdivision flag (Scotland), keycaps, a text-style
-- pictograph, a Unicode 15 emoji.
select is((select array_agg(e) from unnest(array[
    '👍', '❤️', '👍🏽', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🧑🏽‍💻', '❤️‍🔥', '🇫🇷',
    '🏴' || U&'\+0E0067\+0E0062\+0E0073\+0E0063\+0E0074\+0E007F', '1️⃣', '#⃣', '☺', '🫨']) e
  where not app.is_reaction_emoji(e)), null, 'one emoji of every shape is a reaction');
select is((select array_agg(e) from unnest(array[
    '<script>', 'a', 'ok', '1', '#', '👍👍', '👍 ', ' 👍', U&'\200B👍', '👍' || U&'\200D', U&'\200D👍', 'x👍', '👍x',
    U&'\+01F1EB', U&'\+01F1EB\+01F1F7\+01F1EB', '1️', U&'\FE0F', '', '=1+1',
    -- eleven people joined: one grapheme, but over 32 code points
    repeat('🧑🏽' || U&'\200D', 11) || '🧑🏽']) e
  where app.is_reaction_emoji(e)), null, 'text, two emoji, spaces, joiners at an end, a lone regional indicator, an overlong sequence are not');
select is(app.is_reaction_emoji(null), false, 'null is not an emoji');

create function pg_temp.react(p_emoji text) returns text
language sql as $$
  select format('select api.add_review_reaction(%L, %L, %L, %L)', current_setting('test.review'), current_setting('test.item'),
    current_setting('test.activity'), jsonb_build_object('emoji', p_emoji))
$$;
-- The client reviewer persona (as the pipeline sets it after api.gate_review_link).
create function pg_temp.act_as_link() returns void
language plpgsql as $$
declare
  l app.review_links;
begin
  reset role;
  select * into l from app.review_links where review_id = current_setting('test.review')::uuid;
  perform set_config('pressroom.actor_kind', 'review_link', true);
  perform set_config('pressroom.user_id', '', true);
  perform set_config('pressroom.api_key_id', '', true);
  perform set_config('pressroom.review_link_id', l.id::text, true);
  perform set_config('pressroom.organization_id', l.organization_id::text, true);
  perform set_config('pressroom.workspace_id', l.workspace_id::text, true);
  perform set_config('pressroom.workspace_role', '', true);
  set local role pressroom_request;
end
$$;

-- A draft in an active review with the editor and a client as approvers, and a comment on it.
insert into app.content_roots (id, organization_id, workspace_id, caption)
values (pg_temp.id('root:c1'), pg_temp.id('A'), pg_temp.id('A1'), 'hello');
insert into app.content_items (id, organization_id, workspace_id, root_id, integration_id, status)
values (pg_temp.id('c1'), pg_temp.id('A'), pg_temp.id('A1'), pg_temp.id('root:c1'), pg_temp.id('ig:A1.x'), 'draft');
select pg_temp.act_as('A.editor', 'A1');
select set_config('test.review', api.create_review(jsonb_build_object('title', 'R', 'contentIds', jsonb_build_array(pg_temp.id('c1')),
  'stages', jsonb_build_array(jsonb_build_object('name', 'S', 'rule', 'any', 'approvers', jsonb_build_array(
    jsonb_build_object('type', 'member', 'userId', pg_temp.id('A.editor')),
    jsonb_build_object('type', 'client', 'email', 'client@example.test', 'name', 'Clara')))))) ->> 'id', true);
select api.send_review(current_setting('test.review')::uuid);
select set_config('test.item', (select id from app.review_items where review_id = current_setting('test.review')::uuid)::text, true);
select set_config('test.activity', (api.comment_review_item(current_setting('test.review')::uuid, current_setting('test.item')::uuid,
  '{"body": "look"}') ->> 'id'), true);

select is(pg_temp.sqlerr(pg_temp.react('<script>')), 'PT400 VALIDATION_FAILED', 'member: a tag is refused');
select is(pg_temp.sqlerr(pg_temp.react('ok')), 'PT400 VALIDATION_FAILED', 'member: a word is refused');
select is(api.add_review_reaction(current_setting('test.review')::uuid, current_setting('test.item')::uuid,
  current_setting('test.activity')::uuid, '{"emoji": "👍🏽"}') ->> 'emoji', '👍🏽', 'member: an emoji with a skin tone is taken');
select is(pg_temp.sqlerr(format('select api.remove_review_reaction(%L, %L, %L, %L)', current_setting('test.review'),
  current_setting('test.item'), current_setting('test.activity'), '<b>')), 'PT400 VALIDATION_FAILED', 'member: removing a non-emoji is a 400 too');

-- The client, through its link.
select pg_temp.act_as_link();
select is(pg_temp.sqlerr(format('select api.review_link_react(%L, %L, %L, true)', current_setting('test.item'), current_setting('test.activity'),
  '<script>alert(1)</script>')), 'PT400 VALIDATION_FAILED', 'client link: a script tag is refused');
select is(pg_temp.sqlerr(format('select api.review_link_react(%L, %L, %L, false)', current_setting('test.item'), current_setting('test.activity'),
  'x')), 'PT400 VALIDATION_FAILED', 'client link: removing a non-emoji is a 400');
select is(api.review_link_react(current_setting('test.item')::uuid, current_setting('test.activity')::uuid, '🇫🇷', true) ->> 'reacted', 'true',
  'client link: a flag is taken');

-- The table holds the rule for every writer.
select pg_temp.act_as_owner();
select throws_ok(format($$insert into app.review_reactions (activity_id, actor_key, organization_id, workspace_id, emoji)
  values (%L, 'user:someone', %L, %L, '<script>')$$, current_setting('test.activity'), pg_temp.id('A'), pg_temp.id('A1')), '23514',
  'new row for relation "review_reactions" violates check constraint "review_reactions_emoji_is_emoji"',
  'a direct insert of a non-emoji breaks the check review_reactions_emoji_is_emoji');
select throws_ok(format($$update app.review_reactions set emoji = 'ok' where activity_id = %L$$, current_setting('test.activity')), '23514',
  'new row for relation "review_reactions" violates check constraint "review_reactions_emoji_is_emoji"', '... and so does an update');
select is((select array_agg(emoji order by emoji collate "C") from app.review_reactions where activity_id = current_setting('test.activity')::uuid),
  array['🇫🇷', '👍🏽'], 'the reactions stored are the two emoji');

select * from finish();
rollback;
