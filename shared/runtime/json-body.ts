import type { FastifyInstance } from 'fastify';

/**
 * Parses application/json bodies exactly as fastify's default parser does (secure-json-parse: a body with a
 * `__proto__` or `constructor.prototype` key is refused), without its cost on bodies that cannot hold such a
 * key. Its two regexes scan every body and cost about as much as JSON.parse itself on a chain client's
 * 14 KB callback. They can only match where the text holds `__proto__` or `constructor`, literally or
 * through a `\u` escape; any body that does, and any that JSON.parse refuses, goes to the default parser,
 * so its answers and errors stay fastify's.
 */
export function parseJsonBodiesFast(
  app: FastifyInstance,
  /**
   * `emptyAs`: what an empty application/json body stands for (the relay: `{}`, as the original's koa body
   * parser took it); unset, an empty body is refused as fastify refuses it.
   */
  options: { emptyAs?: () => unknown } = {},
): void {
  const { onProtoPoisoning, onConstructorPoisoning } = app.initialConfig;
  const strict = app.getDefaultJsonParser(onProtoPoisoning ?? 'error', onConstructorPoisoning ?? 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (text === '' && options.emptyAs !== undefined) return done(null, options.emptyAs());
    if (text.includes('\\u') || text.includes('__proto__') || text.includes('constructor')) {
      return strict(request, text, done);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return strict(request, text, done);
    }
    done(null, json);
  });
}
