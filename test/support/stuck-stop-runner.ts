// A process of the service runner (as `npm start`) with one service whose stop never ends and that holds a
// database connection in an open transaction (in-flight work that no stop signal reaches): for
// test/runtime/stop-failure-exit.test.ts.
import { runServices } from '../../shared/runtime/runner.js';

await runServices(
  [
    {
      name: 'stuck',
      sections: ['n8nUrl'],
      async start({ db }) {
        const client = await db.connect();
        await client.query('BEGIN');
        return { stop: () => new Promise<void>(() => undefined) };
      },
    },
  ],
  { names: [] },
);
