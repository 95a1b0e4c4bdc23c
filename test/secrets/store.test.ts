import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadSecretStore, secretStore } from '../../activities/secrets/store';

describe('the host-side secret store', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'secrets-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('reads a private file and AGENT_SECRET_ variables, the variable winning', () => {
    const file = path.join(dir, 'secrets.json');
    fs.writeFileSync(file, JSON.stringify({ NPM_TOKEN: 'from-file-123', API: 'api-token-456' }), { mode: 0o600 });
    const store = loadSecretStore({ AGENT_SECRETS_FILE: file, AGENT_SECRET_NPM_TOKEN: 'from-env-789' });
    expect(store.names()).toEqual(['API', 'NPM_TOKEN']);
    expect(store.get('NPM_TOKEN')).toBe('from-env-789');
    expect(store.get('API')).toBe('api-token-456');
  });

  it('refuses a file others may read, naming it', () => {
    const file = path.join(dir, 'open.json');
    fs.writeFileSync(file, '{}', { mode: 0o644 });
    fs.chmodSync(file, 0o644);
    expect(() => loadSecretStore({ AGENT_SECRETS_FILE: file })).toThrow(
      `AGENT_SECRETS_FILE ${file}: readable by others`,
    );
  });

  it('refuses bad names and values with the field named', () => {
    expect(() => loadSecretStore({ AGENT_SECRET_9x: 'abcdefgh' })).toThrow('AGENT_SECRET_9x');
    const file = path.join(dir, 'bad.json');
    fs.writeFileSync(file, JSON.stringify({ OK: 7 }), { mode: 0o600 });
    expect(() => loadSecretStore({ AGENT_SECRETS_FILE: file })).toThrow('OK must be a non-empty string');
  });

  it('masks a token and its base64 and URL-encoded forms', () => {
    const token = 's3cr3t/token+value';
    const store = secretStore(new Map([['REG', token]]));
    const b64 = Buffer.from(token).toString('base64');
    const text = `a ${token} b ${b64} c ${encodeURIComponent(token)}`;
    expect(store.mask(text)).toBe('a [secret REG] b [secret REG] c [secret REG]');
  });

  it('names a missing secret and what the store holds', () => {
    const store = secretStore(new Map([['A_TOKEN', 'xxxxxxxx']]));
    expect(() => store.require('B', 'the egress proxy for registry.example')).toThrow(
      /needs the secret "B".*held: A_TOKEN/,
    );
  });
});
