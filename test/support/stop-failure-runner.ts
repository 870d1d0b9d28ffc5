// A process of the service runner (as `npm start`) with one service whose stop fails: for
// test/runtime/stop-failure-exit.test.ts.
import { runServices } from '../../shared/runtime/runner.js';

await runServices(
  [
    {
      name: 'flaky',
      sections: ['n8nUrl'],
      async start() {
        return {
          async stop() {
            throw new Error('could not finish its in-flight work');
          },
        };
      },
    },
  ],
  { names: [] },
);
