import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kycAnswer } from '../../points/external-services.js';
import { startRelayAdminStandIn } from './server.js';

const A = '0x' + 'ab'.repeat(20);

describe('relay-admin KYC stand-in', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'relay-admin-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('answers the contract Points parses, changes on PUT, and keeps its file across restarts', async () => {
    const file = path.join(dir, 'kyc.json');
    const first = await startRelayAdminStandIn({ file });
    const get = async (base: string, address: string) => {
      const response = await fetch(`${base}/kyc/${address}`);
      return { status: response.status, body: (await response.json()) as unknown };
    };
    try {
      expect(kycAnswer.parse((await get(first.url, A)).body).data).toEqual({ address: A, verified: false });
      const put = await fetch(`${first.url}/kyc/${A.toUpperCase().replace('0X', '0x')}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ verified: true }),
      });
      expect(put.status).toBe(200);
      expect(JSON.parse(await readFile(file, 'utf8'))).toEqual([A]);
      expect(await get(first.url, '0x12')).toMatchObject({ status: 400, body: { code: 400 } });
      expect((await fetch(`${first.url}/nope`)).status).toBe(404);
    } finally {
      await first.close();
    }
    const second = await startRelayAdminStandIn({ file });
    try {
      expect(kycAnswer.parse((await get(second.url, A)).body).data.verified).toBe(true);
    } finally {
      await second.close();
    }
  });
});
