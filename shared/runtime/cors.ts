/**
 * Cross-origin reads and writes from browser apps (`corsOrigins` of a service's section): the Otmoic web app
 * runs the SDK in the browser, which asks Points for scores and files complaints with the Agent from a page
 * of another origin. Off by default (a browser then refuses the answers). Only the listed origins, or any
 * with `["*"]`; no credentials (cookies) are ever allowed: the routes need none, and an API key travels in
 * `x-api-key`, which a page of another origin cannot read. Not offered on the relay: an IP allow-list there
 * would let any page a browser inside that network opens send behalf commands.
 */
import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';

/** Whether `text` is an origin as a browser sends it in `Origin`: scheme, host and port, nothing more. */
export function isOrigin(text: string): boolean {
  if (text === '*') return true;
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === text;
  } catch {
    return false;
  }
}

export interface CorsPolicy {
  /** Origins allowed (exactly as browsers send them), or `['*']` for any; empty: none. */
  origins: readonly string[];
  /** Methods a page may use (its preflight names one). */
  methods: readonly string[];
  /** Request headers a page may send beside the CORS-safelisted ones. */
  allowedHeaders: readonly string[];
  /** Answer headers a page may read beside the CORS-safelisted ones. */
  exposedHeaders?: readonly string[];
}

/** How long a browser may keep a preflight's answer, in seconds. */
const PREFLIGHT_MAX_AGE_SECONDS = 600;

export async function registerCors(app: FastifyInstance, policy: CorsPolicy): Promise<void> {
  if (policy.origins.length === 0) return;
  await app.register(cors, {
    origin: policy.origins.includes('*') ? '*' : [...policy.origins],
    methods: [...policy.methods],
    allowedHeaders: [...policy.allowedHeaders],
    exposedHeaders: [...(policy.exposedHeaders ?? [])],
    credentials: false,
    maxAge: PREFLIGHT_MAX_AGE_SECONDS,
  });
}
