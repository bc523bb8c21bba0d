// The credential vault (server/platforms/vault.ts): AES-256-GCM under keys
// from CREDENTIALS_KEYS or DATA_DIR/credentials.key, bound to what each
// ciphertext belongs to, with key versions for rotation.
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CREDENTIALS_KEY_FILE, CredentialVault, parseKeyList, VaultError } from '../../server/platforms/vault.ts';

const key = (byte: number) => Buffer.alloc(32, byte).toString('base64');

describe('credential vault', () => {
  it('round-trips, and a ciphertext neither shows its plaintext nor decrypts for another binding or when tampered', () => {
    const v = new CredentialVault(parseKeyList(`1:${key(1)}`), 'env');
    const secret = JSON.stringify({ accessToken: 'tok_SECRET_abc', refreshToken: 'ref_SECRET_def' });
    const blob = v.encrypt('integration:a', secret);
    expect(blob.includes(Buffer.from('SECRET'))).toBe(false);
    expect(v.decrypt('integration:a', blob)).toBe(secret);
    expect(() => v.decrypt('integration:b', blob)).toThrow(VaultError);
    const tampered = Buffer.from(blob);
    tampered[tampered.length - 1]! ^= 1;
    expect(() => v.decrypt('integration:a', tampered)).toThrow(/does not decrypt/);
    expect(() => v.decrypt('integration:a', Buffer.from('not a ciphertext at all, not at all'))).toThrow(/not a credential ciphertext/);
    // Two encryptions of one value differ (a fresh IV each time).
    expect(v.encrypt('integration:a', secret).equals(blob)).toBe(false);
    expect(v.decryptJson<{ accessToken: string }>('integration:a', v.encryptJson('integration:a', { accessToken: 'x' })).accessToken).toBe('x');
  });

  it('rotates: the highest version encrypts, every listed version decrypts, a dropped version is named', () => {
    const old = new CredentialVault(parseKeyList(`1:${key(1)}`), 'env');
    const blob1 = old.encrypt('platform-app:p', 'client-secret');
    const both = new CredentialVault(parseKeyList(`1:${key(1)}, 2:${Buffer.alloc(32, 2).toString('hex')}`), 'env');
    expect(both.currentVersion).toBe(2);
    expect(both.decrypt('platform-app:p', blob1)).toBe('client-secret');
    const blob2 = both.encrypt('platform-app:p', 'client-secret');
    expect(CredentialVault.versionOf(blob1)).toBe(1);
    expect(CredentialVault.versionOf(blob2)).toBe(2);
    const onlyNew = new CredentialVault(parseKeyList(`2:${key(2)}`), 'env');
    expect(onlyNew.decrypt('platform-app:p', blob2)).toBe('client-secret');
    expect(() => onlyNew.decrypt('platform-app:p', blob1)).toThrow(/version 1 is not configured/);
  });

  it('refuses malformed key lists with a message naming the problem', () => {
    expect(() => parseKeyList('')).toThrow(/lists no key/);
    expect(() => parseKeyList(key(1))).toThrow(/<version>:<key>/);
    expect(() => parseKeyList('1:c2hvcnQ=')).toThrow(/32 bytes/);
    expect(() => parseKeyList(`1:${key(1)},1:${key(2)}`)).toThrow(/listed twice/);
    expect(() => parseKeyList(`0:${key(1)}`)).toThrow(/1 to 65535/);
  });

  it('without CREDENTIALS_KEYS makes one key in DATA_DIR (mode 0600) once and reads it back', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'pressroom-vault-'));
    const a = CredentialVault.fromConfig({ DATA_DIR: dir });
    const file = path.join(dir, CREDENTIALS_KEY_FILE);
    expect(a.source).toBe('file');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const before = readFileSync(file, 'utf8');
    const b = CredentialVault.fromConfig({ DATA_DIR: dir });
    expect(readFileSync(file, 'utf8')).toBe(before);
    expect(b.decrypt('integration:z', a.encrypt('integration:z', 'kept'))).toBe('kept');
    // The environment's keys win over the file.
    const env = CredentialVault.fromConfig({ DATA_DIR: dir, CREDENTIALS_KEYS: `7:${key(7)}` });
    expect(env.source).toBe('env');
    expect(env.currentVersion).toBe(7);
  });
});
