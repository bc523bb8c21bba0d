-- Content fixture shared by the pgTAP files that write content, articles or
-- publishing rows: a file includes it after personas.sql with the line
-- `-- @include content.sql`, which tests/db/run.ts replaces with this text.
-- Rows are written as the superuser owner; ids come from pg_temp.id(label)
-- (tests/db/support/personas.sql).
--
-- Channels (sandbox integrations): ig:A1.x, ig:A1.li (linkedin),
-- ig:A1.insta (instagram), ig:A1.pin (pinterest) in workspace A1, ig:B1.x in
-- B1 of the other organization.
-- Media of A1: media:A1.img (PNG, 1000 bytes), media:A1.video (MP4, 5000
-- bytes), media:A1.huge (PNG, 20,000,000 bytes: too large for Instagram and
-- for an article's images).
insert into app.integrations (id, organization_id, workspace_id, connector, platform, name)
select pg_temp.id(label), pg_temp.id(org), pg_temp.id(ws), 'sandbox', platform, label
from (values ('ig:A1.x', 'A', 'A1', 'x'), ('ig:A1.li', 'A', 'A1', 'linkedin'), ('ig:A1.insta', 'A', 'A1', 'instagram'),
             ('ig:A1.pin', 'A', 'A1', 'pinterest'), ('ig:B1.x', 'B', 'B1', 'x')) i (label, org, ws, platform);
insert into app.media_items (id, organization_id, workspace_id, type, filename, content_type, file_size, storage_key)
select pg_temp.id(label), pg_temp.id('A'), pg_temp.id('A1'), type, label, ct, size, label
from (values ('media:A1.img', 'image', 'image/png', 1000), ('media:A1.video', 'video', 'video/mp4', 5000),
             ('media:A1.huge', 'image', 'image/png', 20000000)) m (label, type, ct, size);
