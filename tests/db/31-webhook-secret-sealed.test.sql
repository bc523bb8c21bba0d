-- A webhook channel's secret is stored sealed (db/migrations/committed/000035-sealed-webhook-channel-secrets.sql):
-- api.create_integration checks the secret it is given and stores only the sealed
-- form the route made; app.webhook_secret_key_version reads a sealed secret's key
-- version (0 in the clear); app.vault_ciphertexts lists the secrets below a version
-- (1: those in the clear, which the server seals at start) and app.vault_rekey writes
-- them back sealed, only where the row still holds what was read.
begin;
select plan(11);

-- @include personas.sql
-- @include content.sql

create function pg_temp.whsec() returns text language sql as $$ select 'whsec_' || encode(decode(repeat('07', 32), 'hex'), 'base64') $$;
-- A vault ciphertext's shape: PRV1, the key version (uint16), then iv, tag and data (fake here).
create function pg_temp.sealed(p_version int) returns text language sql as $$
  select 'prv1:' || translate(encode('PRV1'::bytea || decode(lpad(to_hex(p_version), 4, '0'), 'hex') || decode(repeat('ab', 40), 'hex'), 'base64'), E'\n', '')
$$;

select pg_temp.act_as('A.manager', 'A1');
select is(pg_temp.sqlerr(format($$select api.create_integration('webhook', 'x', 'H', null, null, 'https://93.184.215.14/h', %L, null)$$, pg_temp.whsec())),
  'P0001', 'a webhook secret that does not come sealed is refused (a server error: the route always seals)');
select is(pg_temp.sqlerr(format($$select api.create_integration('webhook', 'x', 'H', null, null, 'https://93.184.215.14/h', %L, %L)$$, pg_temp.whsec(), pg_temp.whsec())),
  'P0001', '... so is the secret itself given as the sealed form');
select is(pg_temp.sqlerr(format($$select api.create_integration('webhook', 'x', 'H', null, null, 'https://93.184.215.14/h', 'raw-and-long-enough', %L)$$, pg_temp.sealed(1))),
  'PT400 VALIDATION_FAILED', 'the secret given is still checked (whsec_ form)');
select set_config('test.ig', api.create_integration('webhook', 'x', 'Sealed', null, null, 'https://93.184.215.14/h', pg_temp.whsec(), pg_temp.sealed(2)) ->> 'id', true);
select pg_temp.act_as_owner();
select is((select webhook_secret from app.integrations where id = current_setting('test.ig')::uuid), pg_temp.sealed(2), 'only the sealed form is stored');

select is(app.webhook_secret_key_version(pg_temp.sealed(2)), 2, 'the key version of a sealed secret');
select is(app.webhook_secret_key_version(pg_temp.whsec()), 0, 'a secret in the clear is version 0');

-- A channel from before sealing, its secret in the clear.
insert into app.integrations (id, organization_id, workspace_id, connector, platform, name, webhook_url, webhook_secret)
values (pg_temp.id('ig:old'), pg_temp.id('A'), pg_temp.id('A1'), 'webhook', 'x', 'Old', 'https://93.184.215.14/old', pg_temp.whsec());
select is((select jsonb_agg(w ->> 'id') from jsonb_array_elements(app.vault_ciphertexts(1) -> 'webhookSecrets') w),
  jsonb_build_array(pg_temp.id('ig:old')), 'below version 1: only the secret in the clear');
select is((select count(*)::int from jsonb_array_elements(app.vault_ciphertexts(3) -> 'webhookSecrets')), 2, 'below version 3: both');

select is(app.vault_rekey(jsonb_build_object('webhookSecrets', jsonb_build_array(
    jsonb_build_object('id', pg_temp.id('ig:old'), 'was', 'something else', 'stored', pg_temp.sealed(3))))) ->> 'webhookSecrets', '0',
  'a row that changed since it was read is left as it is');
select is(app.vault_rekey(jsonb_build_object('webhookSecrets', jsonb_build_array(
    jsonb_build_object('id', pg_temp.id('ig:old'), 'was', pg_temp.whsec(), 'stored', pg_temp.sealed(3))))) ->> 'webhookSecrets', '1',
  'the secret in the clear is written sealed');
select is(pg_temp.sqlerr(format($$select app.vault_rekey(%L)$$, jsonb_build_object('webhookSecrets', jsonb_build_array(
    jsonb_build_object('id', current_setting('test.ig'), 'was', pg_temp.sealed(2), 'stored', pg_temp.whsec()))))),
  'P0001', 'a secret is never written back in the clear');

select * from finish();
rollback;
