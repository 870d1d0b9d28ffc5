import { ConfigError, loadConfig, type AppConfig, type SectionName } from '../config/index.js';
import { createLogger, type Logger } from '../logging/logger.js';
import { withDeadline } from './deadline.js';
import { startInfrastructure, type Infrastructure } from './infrastructure.js';
import { createMetrics } from './metrics.js';
import type { RunningService, ServiceDefinition } from './service.js';
import { serviceUrls } from './summary.js';

/** Exit code for configuration errors (sysexits EX_CONFIG). */
export const EXIT_CONFIG = 78;
/**
 * A stop's timeline, from the signal (once what was starting has started). In-flight work has STOP_GRACE_MS;
 * then ServiceContext.stopSignal aborts the outbound calls still waiting (an RPC, a webhook: their own
 * timeouts are 10 to 30 s). A service not stopped by SERVICES_DEADLINE_MS is given up; the bus, the archive
 * and the pool are closed by SHUTDOWN_DEADLINE_MS, given up too if not; the embedded PostgreSQL is stopped
 * after them in every case (a fast shutdown: it ends the connections a stuck service still holds).
 */
const STOP_GRACE_MS = 1_000;
const SERVICES_DEADLINE_MS = 3_000;
const SHUTDOWN_DEADLINE_MS = 4_500;
/** Services still stopping when SERVICES_DEADLINE_MS passed are each asked, all at once, for this long. */
const LATE_STOP_MS = 250;
/** Only when stopping the embedded PostgreSQL itself hangs: the process exits anyway (exit 1). */
const LAST_RESORT_MS = 15_000;

export interface RunOptions {
  /** Service names from the command line; none means every service whose sections the file has. */
  names: readonly string[];
  env?: NodeJS.ProcessEnv;
  root?: string;
}

/**
 * Starts the chosen services in this process on shared infrastructure and stops them cleanly on SIGINT or
 * SIGTERM: stop taking work, finish in-flight work (outbound calls aborted after a grace), close the bus, the
 * archive, the pool, then the embedded database, within the deadlines above. Exit code 0 when everything
 * closed (work the stop aborted is no failure), 1 when a service or a connection did not.
 */
export async function runServices(
  available: readonly ServiceDefinition[],
  options: RunOptions,
): Promise<void> {
  let log = createLogger({ name: 'otmoic' });
  let config: AppConfig;
  let chosen: ServiceDefinition[];
  let incomplete: IncompleteService[];
  try {
    ({ config, chosen, incomplete } = selectAndLoad(available, options));
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    for (const line of err.lines()) process.stderr.write(line + '\n');
    process.exit(EXIT_CONFIG);
  }
  log = createLogger({ name: 'otmoic', level: config.log.level });
  log.info({ services: chosen.map((s) => s.name), config: config.source }, 'starting');
  for (const { service, missing } of incomplete)
    log.warn(
      { service, missing, config: config.source },
      `${service} is not started: its section is in the file, but not ${missing.map((m) => `[${m}]`).join(', ')}`,
    );
  if (config.unknownKeys.length > 0)
    log.warn(
      { keys: config.unknownKeys, config: config.source },
      'configuration keys this build does not know are ignored (a misspelt section?)',
    );

  let infra: Infrastructure | undefined;
  const running: Array<{ name: string; service: RunningService }> = [];
  let stopping: Promise<void> | undefined;
  /** A service or the infrastructure failed to stop: the process does not exit 0 (work may be unfinished). */
  let stopFailed = false;
  let startup: Promise<void> | undefined;

  const stopController = new AbortController();

  const stop = (reason: string) => {
    stopping ??= (async () => {
      log.info({ reason }, 'stopping');
      // A signal during start-up: what is being started (the embedded PostgreSQL, a service) finishes starting
      // first, so that it is stopped too; nothing more is started. A second signal still exits at once.
      await startup?.catch(() => undefined);
      const stoppedAt = Date.now();
      const grace = setTimeout(() => stopController.abort(), STOP_GRACE_MS);
      const lastResort = setTimeout(() => {
        log.error('graceful shutdown took too long; exiting');
        process.exit(1);
      }, LAST_RESORT_MS);
      if (!(await stopServices(running, stoppedAt + SERVICES_DEADLINE_MS, log))) stopFailed = true;
      const unclosed = (await infra?.close({ by: stoppedAt + SHUTDOWN_DEADLINE_MS })) ?? [];
      if (unclosed.length > 0) {
        stopFailed = true;
        log.error({ unclosed }, 'closing the database and the bus failed');
      }
      clearTimeout(grace);
      clearTimeout(lastResort);
      log.info('stopped');
    })();
    return stopping;
  };
  let firstSignalAt = 0;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (stopping) {
        // npm relays the terminal's Ctrl-C, so one keypress can arrive twice; only a later one means "now".
        if (Date.now() - firstSignalAt < 1_000) return;
        log.warn('second signal: exiting now');
        process.exit(1);
      }
      firstSignalAt = Date.now();
      void stop(signal).then(() => process.exit(stopFailed ? 1 : 0));
    });
  }

  try {
    const metrics = createMetrics(
      () => infra?.bus,
      log,
      () => infra?.db,
    );
    startup = (async () => {
      infra = await startInfrastructure(
        config,
        log,
        chosen.flatMap((s) => s.migrations ?? []),
        { observer: metrics.observer },
      );
      for (const definition of chosen) {
        if (stopping) return;
        const service = await definition.start({
          config,
          log: log.child({ service: definition.name }),
          db: infra.db,
          dbUrl: infra.dbUrl,
          bus: infra.bus,
          archive: infra.archive,
          metrics: metrics.registry,
          trackConsumerGroup: metrics.trackConsumerGroup,
          busHealth: metrics.busHealth,
          stopSignal: stopController.signal,
        });
        running.push({ name: definition.name, service });
      }
    })();
    await startup;
    if (stopping) return;
    const names = running.map((r) => r.name);
    log.info({ services: names, urls: serviceUrls(config, names) }, 'ready');
  } catch (err) {
    log.fatal({ err: (err as Error).message }, 'start-up failed');
    await stop('start-up failed');
    process.exit(1);
  }
}

/**
 * Stops the services, the last started first, until `until`; the ones left then are asked all at once, each
 * for LATE_STOP_MS, and given up (their in-flight work is abandoned, as a crash would: the infrastructure is
 * closed all the same). False when one failed or did not stop.
 */
async function stopServices(
  running: ReadonlyArray<{ name: string; service: RunningService }>,
  until: number,
  log: Logger,
): Promise<boolean> {
  let ok = true;
  const stopOne = async ({ name, service }: { name: string; service: RunningService }, ms: number) => {
    const late = () => new Error(`did not stop within ${SERVICES_DEADLINE_MS} ms; given up`);
    await withDeadline(service.stop(), ms, late).catch((err: Error) => {
      ok = false;
      log.error({ service: name, err: err.message }, 'stop failed');
    });
  };
  const left = [...running].reverse();
  while (left.length > 0 && Date.now() < until) await stopOne(left.shift()!, until - Date.now());
  await Promise.all(left.map((r) => stopOne(r, LATE_STOP_MS)));
  return ok;
}

function selectAndLoad(
  available: readonly ServiceDefinition[],
  options: RunOptions,
): { config: AppConfig; chosen: ServiceDefinition[]; incomplete: IncompleteService[] } {
  const load = (require: readonly SectionName[]) =>
    loadConfig({ require, env: options.env, root: options.root });
  const present = load([]).present;
  const sectionsOf = (chosen: readonly ServiceDefinition[]) => sectionsToLoad(chosen, present);
  if (options.names.length > 0) {
    const unknown = options.names.filter((n) => !available.some((s) => s.name === n));
    if (unknown.length > 0) {
      throw new ConfigError('command line', [
        {
          key: 'service',
          problem: `unknown service "${unknown.join('", "')}" (known: ${available.map((s) => s.name).join(', ')})`,
        },
      ]);
    }
    const chosen = available.filter((s) => options.names.includes(s.name));
    return { config: load(sectionsOf(chosen)), chosen, incomplete: [] };
  }
  // No names: every service whose sections are all in the file.
  const { chosen, incomplete } = servicesToStart(available, present);
  if (chosen.length === 0) {
    throw new ConfigError(load([]).source, [
      {
        key: '(file)',
        problem: `has no complete section set for any service (${available.map((s) => `${s.name}: ${s.sections.join(' + ')}`).join('; ')})`,
      },
    ]);
  }
  return { config: load(sectionsOf(chosen)), chosen, incomplete };
}

/** The sections the chosen services need, and those they use that the file has (optionalSections). */
export function sectionsToLoad(
  chosen: readonly ServiceDefinition[],
  present: ReadonlySet<string>,
): SectionName[] {
  return [
    ...new Set(
      chosen.flatMap((s) => [...s.sections, ...(s.optionalSections ?? []).filter((o) => present.has(o))]),
    ),
  ];
}

/** A service whose own section is in the file, not started because others of its sections are not. */
export interface IncompleteService {
  service: string;
  missing: SectionName[];
}

/**
 * Without names, the services whose sections are all present are started. One whose own section (its first)
 * is there but not all the others (`[connector]` without `[rpc-urls]`) was skipped without a word: it is
 * named, with what it misses, so the operator sees why it does not run.
 */
export function servicesToStart(
  available: readonly ServiceDefinition[],
  present: ReadonlySet<string>,
): { chosen: ServiceDefinition[]; incomplete: IncompleteService[] } {
  const chosen = available.filter((s) => s.sections.every((section) => present.has(section)));
  const incomplete = available
    .filter((s) => !chosen.includes(s) && present.has(s.sections[0]!))
    .map((s) => ({ service: s.name, missing: s.sections.filter((section) => !present.has(section)) }));
  return { chosen, incomplete };
}

export type { Logger };
