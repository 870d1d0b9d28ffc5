/**
 * The operators' dashboard, served by Points: the page and its script (services/points/dashboard/), Chart.js
 * from node_modules (no CDN), and two small JSON routes of its own beside the public Points routes it reads.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import type { Pool } from '../../shared/db/pool.js';
import { pipelineHealth } from '../../shared/runtime/pipeline-health.js';
import { verdictsQuery, verdictSeries } from './dashboard-data.js';
import { parseQuery } from './query-params.js';

// Beside the module, also in dist/: tsc copies no static files, so npm run build copies this folder.
const PAGE_DIR = path.join(import.meta.dirname, 'dashboard');
const CHART_DIR = path.dirname(createRequire(import.meta.url).resolve('chart.js'));

export async function registerDashboard(
  app: FastifyInstance,
  options: { db: Pool; metrics: Registry; windowDays: number },
): Promise<void> {
  await app.register(fastifyStatic, { root: PAGE_DIR, prefix: '/dashboard/', index: 'index.html' });
  await app.register(fastifyStatic, {
    root: CHART_DIR,
    prefix: '/dashboard/vendor/',
    decorateReply: false,
    allowedPath: (pathName) => pathName === '/chart.umd.min.js',
  });
  app.get('/dashboard', async (_request, reply) => reply.redirect('/dashboard/'));
  app.get('/dashboard/verdicts', async (request) =>
    verdictSeries(options.db, {
      windowDays: options.windowDays,
      since: parseQuery(verdictsQuery, request.query).since,
    }),
  );
  app.get('/dashboard/pipeline', async (request) => {
    parseQuery(verdictsQuery.pick({}), request.query);
    return pipelineHealth(options.metrics);
  });
}
