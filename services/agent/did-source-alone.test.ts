import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config/index.js';
import { createLogger } from '../../shared/logging/logger.js';
import type { ServiceContext } from '../../shared/runtime/service.js';
import { agentService, didSourceOf } from './index.js';

// README: agent.didSupportUrl defaults to point.didSupportUrl; agent.didSource defaults to `didSupport` when a
// URL is known. `npm run start-agent` (and the docker-compose `agent` container) loads only the sections the
// Agent names (['agent']), so config.point is undefined there: the fallback never applied (it asked the
// contract, or refused to start with didSource = "didSupport"). loadConfig now fills it in from the file.
const KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';
const file = (agentExtra = '') => `
[point]
port = 9100
relayAdminUrl = "http://127.0.0.1:9200"
didSupportUrl = "http://did.example:9300"
refreshInterval = 60000
[agent]
port = 9101
rpc = "http://127.0.0.1:8546"
priv = "${KEY}"
contractAddr = "0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0"
chainId = 97
${agentExtra}
`;
/** What the runner does for `npm run start-agent`: load only the sections of the chosen service. */
const loadAsStartAgent = (text: string) =>
  loadConfig({ text, env: {}, require: agentService.sections, root: '/srv' });

describe('the Agent started alone (npm run start-agent, the compose agent container)', () => {
  it('asks the DID support service of point.didSupportUrl, as README says, not the contract', () => {
    const config = loadAsStartAgent(file());
    // The very expression agentService.start passes (services/agent/index.ts).
    expect(didSourceOf(config.agent!, config.point?.didSupportUrl)).toEqual({
      source: 'didSupport',
      url: 'http://did.example:9300',
    });
  });

  it('starts with didSource = "didSupport" and point.didSupportUrl set in the same file', async () => {
    const config = loadAsStartAgent(file('didSource = "didSupport"'));
    const context = {
      config,
      log: createLogger({ level: 'silent' }),
      metrics: new Registry(),
      db: {} as never,
      bus: {} as never,
      dbUrl: '',
      archive: {} as never,
      trackConsumerGroup: () => undefined,
    } as unknown as ServiceContext;
    const error = await agentService.start(context).then(
      () => undefined,
      (err: Error) => err,
    );
    // It gets past the DID source choice (and then fails on the stub database, which is not what is tested).
    expect(error?.message ?? '').not.toMatch(/needs agent\.didSupportUrl or point\.didSupportUrl/);
  });
});
