/**
 * The operators' dashboard, served by Points: the page and its script (services/points/dashboard/), Chart.js
 * from node_modules (no CDN), and three small JSON routes of its own beside the public Points routes it reads.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import type { Pool } from '../../shared/db/pool.js';
import { pipelineHealth } from '../../shared/runtime/pipeline-health.js';
import { verdictsQuery, verdictSeries } from './dashboard-data.js';
import type { PointsQueries } from './queries.js';
import { parseQuery, scoreHistoryQuery } from './query-params.js';

// Beside the module, also in dist/: tsc copies no static files, so npm run build copies this folder.
const PAGE_DIR = path.join(import.meta.dirname, 'dashboard');
const CHART_DIR = path.dirname(createRequire(import.meta.url).resolve('chart.js'));

/**
 * Sent with every dashboard response (page, files, JSON): no MIME sniffing, no framing (clickjacking), no
 * referrer, and scripts, styles, images and fetches from this origin only. The page has no inline script or
 * style and Chart.js draws on a canvas, so 'self' is all it needs.
 */
export const DASHBOARD_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'self'; frame-ancestors 'none'; object-src 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
} as const;

export async function registerDashboard(
  app: FastifyInstance,
  options: { db: Pool; metrics: Registry; windowDays: number; queries: PointsQueries },
): Promise<void> {
  // An encapsulated plugin: its onSend hook covers the dashboard's routes only, not the public Points routes.
  await app.register(async (dashboard) => {
    dashboard.addHook('onSend', async (_request, reply, payload) => {
      reply.headers(DASHBOARD_HEADERS);
      return payload;
    });
    await dashboard.register(fastifyStatic, { root: PAGE_DIR, prefix: '/dashboard/', index: 'index.html' });
    await dashboard.register(fastifyStatic, {
      root: CHART_DIR,
      prefix: '/dashboard/vendor/',
      decorateReply: false,
      allowedPath: (pathName) => pathName === '/chart.umd.min.js',
    });
    dashboard.get('/dashboard', async (_request, reply) => reply.redirect('/dashboard/'));
    dashboard.get('/dashboard/verdicts', async (request) =>
      verdictSeries(options.db, {
        windowDays: options.windowDays,
        since: parseQuery(verdictsQuery, request.query).since,
      }),
    );
    dashboard.get('/dashboard/score-history', async (request) => {
      const { address, lp_id } = parseQuery(scoreHistoryQuery, request.query);
      return address !== undefined
        ? options.queries.scoreHistory('user', address)
        : options.queries.scoreHistory('lp', lp_id!);
    });
    dashboard.get('/dashboard/pipeline', async (request) => {
      parseQuery(verdictsQuery.pick({}), request.query);
      return pipelineHealth(options.metrics);
    });
  });
}
